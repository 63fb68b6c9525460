"""Finding and loading environment packages by id (contract 3.1).

An environment package ``math-env`` has the module ``math_env`` exposing ``load_environment(**kwargs)``,
and declares itself in the ``verifiers.environments`` entry-point group so installed environments can be
listed without importing them. Packages under ``./environments/<module>/`` that are not installed are
found too (their module directory is put on ``sys.path``). A package may list other names it answers to in
its pyproject.toml's ``[tool.verifiers] aliases`` (``gpqa-diamond`` for ``gpqa``): an alias loads that
environment, recorded under its own id.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import inspect
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from verifiers.envs.environment import Environment
from verifiers.errors import EnvArgumentError, EnvError, EnvNotFoundError
from verifiers.eval.config import PACKAGE_KEYS
from verifiers.hub.packaging import content_hash_of_module, module_name, normalize_name

ENTRY_POINT_GROUP = "verifiers.environments"


@dataclass(frozen=True)
class EnvSource:
    """Where an environment's code comes from."""

    env_id: str
    module: str
    version: str
    #: The package directory or module file (what the content hash covers).
    module_path: Path | None
    #: The project directory holding pyproject.toml, for local (uninstalled or editable) packages.
    project_dir: Path | None


def installed_environments() -> dict[str, str]:
    """Installed environment ids → versions, from the ``verifiers.environments`` entry points."""
    out: dict[str, str] = {}
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        out[normalize_name(ep.name)] = dist.version if dist is not None else "?"
    return dict(sorted(out.items()))


def local_environments(root: Path | None = None) -> dict[str, Path]:
    """Environment projects under ``./environments`` (id → project dir)."""
    base = (root or Path.cwd()) / "environments"
    out: dict[str, Path] = {}
    if base.is_dir():
        for p in sorted(base.iterdir()):
            if (p / "pyproject.toml").is_file():
                try:
                    name = read_project(p)["project"]["name"]
                except (KeyError, tomllib.TOMLDecodeError):
                    continue
                out[normalize_name(name)] = p
    return out


def read_project(project_dir: Path) -> dict[str, Any]:
    """The parsed ``pyproject.toml`` of a local environment project."""
    return tomllib.loads((project_dir / "pyproject.toml").read_text())


def _module_path(module: ModuleType) -> Path | None:
    file = getattr(module, "__file__", None)
    if file is None:
        return None
    path = Path(file)
    return path.parent if path.name == "__init__.py" else path


def _dist_version(env_id: str, module: ModuleType) -> str:
    try:
        return md.version(env_id)
    except md.PackageNotFoundError:
        pass
    for dist_name in md.packages_distributions().get(module.__name__, []):
        try:
            return md.version(dist_name)
        except md.PackageNotFoundError:
            continue
    return "0.0.0"


def _declared_aliases(pyproject: str | None) -> list[str]:
    """The ``[tool.verifiers] aliases`` of a pyproject.toml's text (other names the environment answers to)."""
    if not pyproject:
        return []
    try:
        aliases = tomllib.loads(pyproject).get("tool", {}).get("verifiers", {}).get("aliases", [])
    except tomllib.TOMLDecodeError:
        return []
    return [normalize_name(a) for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []


def alias_target(env_id: str, search_root: Path | None = None) -> str | None:
    """The environment id that ``env_id`` is an alias of (``[tool.verifiers] aliases`` in the pyproject.toml
    of an installed environment, read from its ``extra_metadata``, or of a project under ./environments),
    else ``None``. Aliases are names, not entry points: a wheel declares only its own entry point."""
    env_id = normalize_name(env_id)
    for dist in {
        ep.dist.name: ep.dist for ep in md.entry_points(group=ENTRY_POINT_GROUP) if ep.dist
    }.values():
        if env_id in _declared_aliases(dist.read_text("extra_metadata/pyproject.toml")):
            return normalize_name(dist.name)
    for name, project in local_environments(search_root).items():
        try:
            text = (project / "pyproject.toml").read_text()
        except OSError:
            continue
        if env_id in _declared_aliases(text):
            return name
    return None


def import_environment_module(
    env_id: str, *, search_root: Path | None = None
) -> tuple[ModuleType, EnvSource]:
    """Import the module of ``env_id``: installed first, then ``./environments/``; an alias imports the
    module of the environment it names (whose id the source then carries)."""
    env_id = normalize_name(env_id)
    mod_name = module_name(env_id)
    project_dir: Path | None = None
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name != mod_name:  # the env exists but one of its own imports is missing
            raise EnvError(f"environment {env_id!r} failed to import: {exc}") from exc
        local = local_environments(search_root).get(env_id)
        if local is None:
            target = alias_target(env_id, search_root)
            if target is not None:
                return import_environment_module(target, search_root=search_root)
            raise EnvNotFoundError(not_found_message(env_id, search_root)) from None
        project_dir = local
        src = local / "src" if (local / "src" / mod_name).exists() else local
        sys.path.insert(0, str(src))
        importlib.invalidate_caches()
        module = importlib.import_module(mod_name)
    path = _module_path(module)
    if project_dir is None and path is not None:
        # An editable install points into a project directory; remember it for eval defaults.
        for parent in (path.parent, path.parent.parent):
            if _project_name(parent) == env_id:
                project_dir = parent
                break
    # The code comes from the project directory, so its version does too: an editable install's
    # metadata is only as new as the last `pip install -e` (a bumped version would be recorded stale).
    version = _source_version(project_dir) if project_dir is not None else None
    if version is None:
        version = _dist_version(env_id, module)
    return module, EnvSource(env_id, mod_name, version, path, project_dir)


@dataclass(frozen=True)
class EnvIdentity:
    """What a run of an environment records about its code, known without loading it."""

    env_id: str
    version: str
    content_hash: str


def environment_identity(env_id: str, *, search_root: Path | None = None) -> EnvIdentity:
    """``env_id``'s id, version and content hash as ``load_environment`` would set them, from an import
    of its module alone (no ``load_environment`` call: no dataset, no sandbox)."""
    _, source = import_environment_module(env_id, search_root=search_root)
    content_hash = content_hash_of_module(source.module_path) if source.module_path else ""
    return EnvIdentity(source.env_id, source.version, content_hash)


def _project_name(directory: Path) -> str | None:
    """The normalised ``[project] name`` of ``directory/pyproject.toml``, if it has one."""
    if not (directory / "pyproject.toml").is_file():
        return None
    try:
        name = read_project(directory).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return normalize_name(name) if isinstance(name, str) else None


def _source_version(project_dir: Path) -> str | None:
    """The static ``[project] version`` of a project directory; ``None`` when the version is dynamic
    (then only the build knows it, and the installed metadata is the best answer)."""
    try:
        version = read_project(project_dir).get("project", {}).get("version")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(version) if isinstance(version, str) and version else None


def known_environments(search_root: Path | None = None) -> list[str]:
    """Every environment id this interpreter can load: installed ones and those under ./environments."""
    return sorted({*installed_environments(), *local_environments(search_root)})


def similar_environments(env_id: str, search_root: Path | None = None) -> list[str]:
    """Known environment ids close to ``env_id`` (a typo's candidates), closest first."""
    import difflib

    known = known_environments(search_root)
    return difflib.get_close_matches(normalize_name(env_id), known, n=3, cutoff=0.75)


def did_you_mean(names: list[str]) -> str:
    return f"Did you mean {' or '.join(repr(n) for n in names)}?" if names else ""


def not_found_message(env_id: str, search_root: Path | None = None) -> str:
    """Why ``env_id`` cannot be loaded, with the closest known names (a typo gets "did you mean", never
    an install command for the typo itself)."""
    installed = ", ".join(installed_environments()) or "none"
    here = ", ".join(local_environments(search_root)) or "none"
    message = f"no environment {env_id!r}: installed: {installed}; under ./environments: {here}"
    close = similar_environments(env_id, search_root)
    if close:
        return f"{message}. {did_you_mean(close)}"
    return (
        f"{message}. To use one published on the hub: vf-install OWNER/{env_id}; to write one: "
        f"vf-init {env_id}"
    )


def check_kwargs(fn: Any, kwargs: dict[str, Any], what: str) -> None:
    """Raise ``EnvArgumentError`` if ``fn`` cannot take ``kwargs`` (unless it accepts ``**kwargs``)."""
    sig = inspect.signature(fn)
    params = sig.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise EnvArgumentError(
            f"{what} does not accept {', '.join(map(repr, unknown))}; it accepts: {', '.join(accepted) or 'no arguments'}"
        )


def load_environment(env_id: str, **kwargs: Any) -> Environment:
    """Import environment ``env_id`` and call its ``load_environment(**kwargs)``.

    Unknown keyword arguments raise ``EnvArgumentError`` naming the accepted ones. The returned
    environment carries ``env_id``, ``env_version`` (the distribution version) and ``env_content_hash``.
    """
    module, source = import_environment_module(env_id)
    fn = getattr(module, "load_environment", None)
    if not callable(fn):
        raise EnvError(f"module {source.module!r} has no load_environment() function")
    check_kwargs(fn, kwargs, f"{source.env_id}.load_environment()")
    env = fn(**kwargs)
    if not isinstance(env, Environment):
        raise EnvError(
            f"{source.module}.load_environment() returned {type(env).__name__}, not an Environment"
        )
    content_hash = content_hash_of_module(source.module_path) if source.module_path else ""
    env.set_identity(source.env_id, source.version, content_hash, kwargs)
    env.eval_defaults = _read_eval_defaults(module, source)
    return env


def _pyproject_text(source: EnvSource) -> str | None:
    if source.project_dir is not None and (source.project_dir / "pyproject.toml").is_file():
        return (source.project_dir / "pyproject.toml").read_text()
    # A wheel has no pyproject.toml; vf-init's packages ship it as .dist-info/extra_metadata/pyproject.toml.
    try:
        return md.distribution(source.env_id).read_text("extra_metadata/pyproject.toml")
    except md.PackageNotFoundError:
        return None


def smoke_env_args(env_id: str, *, search_root: Path | None = None) -> dict[str, Any]:
    """The ``load_environment`` arguments a smoke check (``vf-smoke``, the hub's publish check) loads the
    environment with: the ``[tool.verifiers.smoke] env_args`` table of its pyproject.toml (read like the eval
    defaults), for environments whose defaults need what a sandbox lacks (a pinned dataset on the network, a
    judge). Empty when the package declares none."""
    _, source = import_environment_module(env_id, search_root=search_root)
    text = _pyproject_text(source)
    if not text:
        return {}
    try:
        table = tomllib.loads(text).get("tool", {}).get("verifiers", {}).get("smoke", {})
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"pyproject.toml of {source.env_id!r} is not valid TOML: {exc}") from None
    args = table.get("env_args", {})
    if not isinstance(args, dict):
        raise EnvError(f"[tool.verifiers.smoke] env_args of {source.env_id!r} must be a table, not {args!r}")
    return dict(args)


def eval_defaults(env_id: str, *, search_root: Path | None = None) -> dict[str, Any]:
    """The evaluation defaults an environment package declares (documented in
    docs/environment-packages.md): its module's ``EVAL_DEFAULTS`` mapping, overridden key by key by the
    ``[tool.verifiers.eval]`` table of its pyproject.toml (on disk for local and editable installs, or
    shipped in the wheel's ``.dist-info/extra_metadata/``). Known keys are type-checked; others are kept."""
    module, source = import_environment_module(env_id, search_root=search_root)
    return _read_eval_defaults(module, source)


def _read_eval_defaults(module: ModuleType, source: EnvSource) -> dict[str, Any]:
    out: dict[str, Any] = dict(getattr(module, "EVAL_DEFAULTS", None) or {})
    text = _pyproject_text(source)
    if text:
        try:
            table = tomllib.loads(text).get("tool", {}).get("verifiers", {}).get("eval", {})
        except tomllib.TOMLDecodeError as exc:
            raise EnvError(f"pyproject.toml of {source.env_id!r} is not valid TOML: {exc}") from None
        out.update(table)
    for key, typ in PACKAGE_KEYS.items():
        value = out.get(key)
        if value is not None and (not isinstance(value, typ) or isinstance(value, bool)):
            raise EnvError(f"eval default {key!r} of {source.env_id!r} must be {typ.__name__}, not {value!r}")
    return out
