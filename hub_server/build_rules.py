"""What an sdist's build configuration may say, so that building it (``pip install --no-binary``) runs no
code of the uploader's: the build backend is hatchling and nothing but hatchling, with no hooks, no
version or metadata plugins and no file mappings that could put anything but the import package into the
built wheel, and the project declares no commands and no entry points but the environment's own.

The rule, as docs/hub.md states it for uploaders:

- ``pyproject.toml`` is at the sdist's root; ``setup.py``, ``setup.cfg``, ``hatch.toml`` and
  ``hatch_build.py`` are not (setuptools runs the first, reads the second; hatchling reads the third and
  runs the last as a build hook);
- ``[build-system]`` is ``requires = ["hatchling…"]`` (one requirement, a version specifier at most) and
  ``build-backend = "hatchling.build"``, without ``backend-path`` (an in-tree backend is the sdist's code);
- ``[project]`` is static (no ``dynamic``: a dynamic version or metadata is computed by a plugin), names the
  environment, and has no ``scripts`` / ``gui-scripts``; ``entry-points`` holds only
  ``[project.entry-points."verifiers.environments"]`` with the one line ``<name> = "<module>:<function>"``;
- ``[tool.hatch]`` holds at most ``build.targets.wheel.packages`` (the import package) and
  ``build.targets.wheel.extra-metadata`` (files copied into the ``.dist-info``), so no build hook, custom
  builder, ``force-include``, ``shared-data`` / ``shared-scripts`` or path rewrite can change what the
  wheel built from the sdist installs.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from hub_server.bounded import UploadError

__all__ = ["BUILD_BACKEND", "FORBIDDEN_BUILD_FILES", "MAX_PYPROJECT", "check_build_config"]

BUILD_BACKEND = "hatchling.build"
BUILD_REQUIREMENT = "hatchling"
MAX_PYPROJECT = 64 * 1024
#: Files at an sdist's root that make a build run or read code the hub does not check, and why.
FORBIDDEN_BUILD_FILES = {
    "setup.py": "setuptools runs it to build the package",
    "setup.cfg": "setuptools reads build commands and hooks from it",
    "hatch.toml": "hatchling reads build hooks and file mappings from it, beside pyproject.toml",
    "hatch_build.py": "hatchling runs it as a build hook",
}
_ENTRY_POINT_GROUP = "verifiers.environments"
_OBJECT_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$")


def _refuse(where: str, what: str) -> UploadError:
    return UploadError(
        f"{where}: {what}; building an sdist from the hub must run no code of its own (docs/hub.md, "
        "'Upload rules')"
    )


def check_build_config(where: str, raw: bytes, name: str, module: str) -> None:
    """Refuse a ``pyproject.toml`` (its bytes ``raw``) that would make a build run code: see the module
    docstring. ``name`` is the PEP 503 name, ``module`` the import package."""
    try:
        config = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UploadError(f"{where} is not valid UTF-8 TOML: {exc}") from None
    _check_build_system(where, config.get("build-system"))
    _check_project(where, config.get("project"), name, module)
    tool = config.get("tool", {})
    if not isinstance(tool, Mapping):
        raise _refuse(where, "[tool] is not a table")
    _check_hatch(where, tool.get("hatch"), module)


def _check_build_system(where: str, table: Any) -> None:
    if not isinstance(table, Mapping):
        raise _refuse(where, f'it has no [build-system]; declare build-backend = "{BUILD_BACKEND}"')
    extra = sorted(set(table) - {"requires", "build-backend"})
    if extra:
        raise _refuse(
            where, f"[build-system] sets {', '.join(extra)} (an in-tree backend is the sdist's own code)"
        )
    if table.get("build-backend") != BUILD_BACKEND:
        raise _refuse(
            where, f'build-backend is {table.get("build-backend")!r}; the one accepted is "{BUILD_BACKEND}"'
        )
    requires = table.get("requires")
    reqs: list[Requirement] = []
    if isinstance(requires, list) and all(isinstance(r, str) for r in requires):
        try:
            reqs = [Requirement(r) for r in requires]
        except InvalidRequirement:
            reqs = []
    if len(reqs) != 1 or (req := reqs[0]).name != BUILD_REQUIREMENT or req.extras or req.url or req.marker:
        raise _refuse(
            where,
            f"[build-system] requires {requires!r}; it must be exactly one requirement on {BUILD_REQUIREMENT} "
            '(a version specifier at most, e.g. ["hatchling>=1.24"]): any other package is code the build runs',
        )


def _check_project(where: str, table: Any, name: str, module: str) -> None:
    if not isinstance(table, Mapping):
        raise _refuse(where, "it has no [project] table")
    if "dynamic" in table:
        raise _refuse(
            where,
            f"[project] dynamic = {table['dynamic']!r} (a plugin computes dynamic fields); write them out",
        )
    given = table.get("name")
    if not isinstance(given, str) or canonicalize_name(given) != name:
        raise UploadError(f"{where}: [project] name is {given!r}, not the environment's name {name!r}")
    for key in ("scripts", "gui-scripts"):
        if key in table:
            raise _refuse(
                where,
                f"[project.{key}] would install commands into the user's bin/ (one named pip replaces pip)",
            )
    groups = table.get("entry-points", {})
    if not isinstance(groups, Mapping) or sorted(groups) not in ([], [_ENTRY_POINT_GROUP]):
        shown = sorted(groups) if isinstance(groups, Mapping) else groups
        raise _refuse(
            where,
            f'[project.entry-points] declares {shown!r}; only the group "{_ENTRY_POINT_GROUP}" is accepted '
            "(other groups are plugins other programs load)",
        )
    entries = groups.get(_ENTRY_POINT_GROUP, {})
    if not isinstance(entries, Mapping):
        raise _refuse(where, f'[project.entry-points."{_ENTRY_POINT_GROUP}"] is not a table')
    for key, target in entries.items():
        ok = isinstance(target, str) and _OBJECT_REF.match(target.replace(" ", "")) is not None
        if (
            not ok
            or canonicalize_name(key) != name
            or str(target).split(":")[0].split(".")[0].strip() != module
        ):
            raise _refuse(
                where,
                f"the entry point {key} = {target!r} is not the environment's own "
                f'(`{name} = "{module}:load_environment"`)',
            )


def _check_hatch(where: str, table: Any, module: str) -> None:
    if table is None:
        return
    if not isinstance(table, Mapping) or set(table) - {"build"}:
        raise _refuse(where, f"[tool.hatch] sets {_keys(table)}; only build.targets.wheel.packages and "
                      "extra-metadata are accepted (no hooks, version or metadata plugins)")  # fmt: skip
    build = table.get("build", {})
    if not isinstance(build, Mapping) or set(build) - {"targets"}:
        raise _refuse(where, f"[tool.hatch.build] sets {_keys(build)} (hooks, file mappings or includes)")
    targets = build.get("targets", {})
    if not isinstance(targets, Mapping) or set(targets) - {"wheel"}:
        raise _refuse(
            where,
            f"[tool.hatch.build.targets] configures {_keys(targets)}; only the wheel target is accepted",
        )
    wheel = targets.get("wheel", {})
    allowed = {"packages", "extra-metadata"}
    if not isinstance(wheel, Mapping) or set(wheel) - allowed:
        raise _refuse(
            where,
            f"[tool.hatch.build.targets.wheel] sets {_keys(wheel)}; only packages and extra-metadata are "
            "accepted (hooks, force-include, shared-data, shared-scripts and sources change what installs)",
        )
    packages = wheel.get("packages", [module])
    if packages not in ([module], [f"src/{module}"]):
        raise _refuse(
            where, f"[tool.hatch.build.targets.wheel] packages = {packages!r}; it must be [{module!r}]"
        )
    extra = wheel.get("extra-metadata", {})
    if not isinstance(extra, Mapping):
        raise _refuse(where, "extra-metadata is not a table of source = destination paths")
    for source, dest in extra.items():
        for path in (source, dest):
            p = PurePosixPath(str(path))
            if not isinstance(path, str) or p.is_absolute() or ".." in p.parts or "\\" in path:
                raise _refuse(where, f"extra-metadata maps {source!r} = {dest!r}; use plain relative paths")


def _keys(table: Any) -> str:
    return ", ".join(sorted(map(str, table))) if isinstance(table, Mapping) else repr(table)
