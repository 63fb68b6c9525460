"""The optional extras of ``verifiers-sdk`` (``hub``, ``local``, ``serve``, ``ray``, …): whether one is
installed, and the exact command that installs it.

A command that needs an extra checks it before importing anything from it (``require_extra``) and fails
with one line naming the extra and that command, instead of a traceback from deep inside an import. What
each extra holds is read from the installed distribution's own metadata (``pyproject.toml``'s
``[project.optional-dependencies]``), so this module never drifts from it. ``extra_of_module`` names the
extra behind a ``ModuleNotFoundError`` met anyway (the CLI's last line of defence).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

DISTRIBUTION = "verifiers-sdk"


class MissingExtraError(ImportError):
    """``what`` needs the extra ``extra``, and these of its requirements are not installed."""

    def __init__(self, what: str, extra: str, missing: list[str]) -> None:
        self.what, self.extra, self.missing = what, extra, missing
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        super().__init__(
            f"{what} needs the [{extra}] extra ({shown} not installed); install it with: {install_command(extra)}"
        )


def _requirements() -> list[Requirement]:
    try:
        lines = md.requires(DISTRIBUTION) or []
    except md.PackageNotFoundError:  # running from a source tree that was never installed
        return []
    out = []
    for line in lines:
        try:
            out.append(Requirement(line))
        except InvalidRequirement:
            continue
    return out


def extra_requirements(extra: str) -> list[Requirement]:
    """What ``extra`` adds to the plain install (its own requirements, not the base ones)."""
    out = []
    for req in _requirements():
        if req.marker is None or canonicalize_name(req.name) == DISTRIBUTION:
            continue  # a base requirement, or `all`'s reference to the other extras
        if req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def _unmet(req: Requirement) -> str | None:
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        return req.name
    if req.specifier and not req.specifier.contains(version, prereleases=True):
        return f"{req.name}{req.specifier} (found {version})"
    return None


def missing_requirements(extra: str) -> list[str]:
    """The requirements of ``extra`` that are not installed (or too old), as names to show."""
    return [problem for req in extra_requirements(extra) if (problem := _unmet(req)) is not None]


def require_extra(extra: str, what: str) -> None:
    """Raise ``MissingExtraError`` unless every requirement of ``extra`` is installed."""
    missing = missing_requirements(extra)
    if missing:
        raise MissingExtraError(what, extra, missing)


def _source_tree() -> Path | None:
    """The clone this SDK is installed from in editable mode (``pip install -e``), if it is."""
    try:
        raw = md.distribution(DISTRIBUTION).read_text("direct_url.json")
    except md.PackageNotFoundError:
        raw = None
    if raw:
        try:
            info = json.loads(raw)
        except ValueError:
            info = {}
        url = str(info.get("url", ""))
        if info.get("dir_info", {}).get("editable") and url.startswith("file://"):
            root = Path(url.removeprefix("file://"))
            if (root / "pyproject.toml").is_file():
                return root
    return None


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it (shorter, and still exact)."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


def _pip() -> str:
    """``pip`` when that is this interpreter's pip (an activated venv), else the path to this one's."""
    here = Path(sys.executable).parent / "pip"
    found = shutil.which("pip")
    if found and here.exists() and Path(found).resolve() == here.resolve():
        return "pip"
    if here.exists():
        shown = _shown(here)
        return shown if os.sep in shown else f".{os.sep}{shown}"
    return f"{shlex.quote(sys.executable)} -m pip"


def install_command(extra: str) -> str:
    """The command that installs ``extra`` into this environment: ``pip install -e '.[hub]'`` from a clone
    (the SDK installed editable from it), else ``pip install 'verifiers-sdk[hub]'``."""
    root = _source_tree()
    if root is not None:
        return f"{_pip()} install -e {shlex.quote(f'{_shown(root)}[{extra}]')}"
    return f"{_pip()} install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"


def _names_for(requirement: str) -> set[str]:
    """Import names a distribution is likely to provide (``llama-cpp-python`` -> ``llama_cpp``)."""
    name = canonicalize_name(requirement).replace("-", "_")
    found = {name}
    for prefix in ("python_", "py"):
        if name.startswith(prefix):
            found.add(name.removeprefix(prefix))
    for suffix in ("_py", "_python"):
        if name.endswith(suffix):
            found.add(name.removesuffix(suffix))
    return found


def extras() -> list[str]:
    try:
        meta = md.metadata(DISTRIBUTION)
    except md.PackageNotFoundError:
        return []
    return [e for e in meta.get_all("Provides-Extra") or [] if e != "all"]


def extra_of_module(module: str) -> str | None:
    """The extra whose requirements provide the top-level module ``module`` (None: no extra does)."""
    top = module.split(".")[0].lower()
    for extra in extras():
        if extra == "dev":
            continue
        if any(top in _names_for(req.name) for req in extra_requirements(extra)):
            return extra
    return None
