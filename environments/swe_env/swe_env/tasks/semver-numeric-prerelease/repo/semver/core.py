"""Semantic versions (semver.org 2.0.0): parsing, precedence and simple range checks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def _identifier_key(part: str) -> tuple[int, int, str]:
    # numeric identifiers sort numerically and before alphanumeric ones (semver 11.4.3)
    return (1, 0, part)


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, text: str) -> Version:
        m = _SEMVER.match(text.strip().removeprefix("v"))
        if m is None:
            raise ValueError(f"not a semantic version: {text!r}")
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        build = tuple(m.group(5).split(".")) if m.group(5) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, build)

    def _key(self) -> tuple[object, ...]:
        # a release sorts after all of its pre-releases
        pre = (1,) if not self.prerelease else (0, tuple(_identifier_key(p) for p in self.prerelease))
        return (self.major, self.minor, self.patch, pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def bump(self, part: str) -> Version:
        if part == "major":
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            return Version(self.major, self.minor, self.patch + 1)
        raise ValueError(f"unknown part {part!r}")


def satisfies(version: str | Version, spec: str) -> bool:
    """``spec`` is a comma-separated list of ``>=1.2.0``, ``<2.0.0``, ``==1.4.1``, ``^1.2.0``, ``~1.2.0``."""
    v = version if isinstance(version, Version) else Version.parse(version)
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        if not _clause_ok(v, clause):
            return False
    return True


def _clause_ok(v: Version, clause: str) -> bool:
    for op in (">=", "<=", "==", "!=", ">", "<", "^", "~"):
        if clause.startswith(op):
            target = Version.parse(clause[len(op) :])
            break
    else:
        raise ValueError(f"bad clause {clause!r}")
    if op == "^":
        upper = target.bump("major") if target.major else target.bump("minor")
        return target <= v < upper
    if op == "~":
        return target <= v < target.bump("minor")
    return {
        ">=": v >= target,
        "<=": v <= target,
        "==": v == target,
        "!=": v != target,
        ">": v > target,
        "<": v < target,
    }[op]


def max_satisfying(versions: list[str], spec: str) -> str | None:
    ok = [Version.parse(v) for v in versions if satisfies(v, spec)]
    return str(max(ok)) if ok else None
