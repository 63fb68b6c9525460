"""A small INI dialect: ``[section]`` headers, ``key = value`` or ``key: value`` pairs, ``;``/``#``
comments, indented continuation lines and ``${section:key}`` references."""

from __future__ import annotations

import re

_REF = re.compile(r"\$\{([^}:]+)(?::([^}]+))?\}")


class ParseError(ValueError):
    def __init__(self, lineno: int, message: str) -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


def _split_pair(line: str, lineno: int) -> tuple[str, str]:
    sep = "=" if "=" in line else ":"
    if sep not in line:
        raise ParseError(lineno, f"expected 'key = value', got {line!r}")
    key, value = line.split(sep)[0], line.split(sep)[-1]
    key = key.strip().lower()
    if not key:
        raise ParseError(lineno, "empty key")
    return key, value.strip()


def parse(text: str, *, default_section: str = "DEFAULT") -> dict[str, dict[str, str]]:
    """Sections -> keys -> raw values (references are not expanded; see ``resolve``)."""
    data: dict[str, dict[str, str]] = {default_section: {}}
    section = default_section
    last_key: str | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if raw[0] in " \t" and last_key is not None:
            data[section][last_key] += "\n" + stripped
            continue
        if stripped.startswith("["):
            if not stripped.endswith("]"):
                raise ParseError(lineno, f"unterminated section header {stripped!r}")
            section = stripped[1:-1].strip()
            if not section:
                raise ParseError(lineno, "empty section name")
            data.setdefault(section, {})
            last_key = None
            continue
        key, value = _split_pair(stripped, lineno)
        data[section][key] = value
        last_key = key
    return data


def resolve(data: dict[str, dict[str, str]], section: str, key: str, *, default_section: str = "DEFAULT") -> str:
    """The value of ``key`` in ``section`` (falling back to the default section), references expanded."""
    return _resolve(data, section, key, default_section, ())


def _lookup(data: dict[str, dict[str, str]], section: str, key: str, default_section: str) -> str:
    if key in data.get(section, {}):
        return data[section][key]
    if key in data.get(default_section, {}):
        return data[default_section][key]
    raise KeyError(f"{section}:{key}")


def _resolve(data, section, key, default_section, seen):
    if (section, key) in seen:
        raise ValueError(f"reference cycle through {section}:{key}")
    raw = _lookup(data, section, key, default_section)

    def expand(m: re.Match[str]) -> str:
        ref_section, ref_key = (m.group(1), m.group(2)) if m.group(2) else (section, m.group(1))
        return _resolve(data, ref_section, ref_key.lower(), default_section, (*seen, (section, key)))

    return _REF.sub(expand, raw)


def as_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "yes", "true", "on"):
        return True
    if lowered in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def as_list(value: str) -> list[str]:
    """Comma- or newline-separated items, stripped, empty items dropped."""
    items = re.split(r"[,\n]", value)
    return [item.strip() for item in items if item.strip()]
