"""Install an environment from the hub into a Python environment, safely.

How (and why) — no dependency confusion:

1. The spec is resolved on the hub (``owner/name@>=0.1`` → one version, its files and sha256s).
2. The wheel is downloaded from the hub and verified **before anything is installed**: its sha256 is the
   one the hub resolved, it passes the hub's own wheel rules (``verifiers.hub.wheel_rules``: the zip as
   any installer reads it, only the import package and its ``.dist-info``, no ``.pth``, no compiled code,
   RECORD, entry points), and its sources hash to the hub's content hash. Then exactly that file is
   installed, ``--no-deps --no-index``: no index can supply anything else, and the hub cannot change it
   between the check and the install.
3. Its dependencies are installed afterwards from the user's normal index configuration. A dependency
   that is itself an environment on the hub is installed from the hub (recursively, by this function)
   when it belongs to the same owner; one owned by someone else is refused unless already installed,
   so a hub account cannot shadow a public package for other people's environments.
4. The installed sources are hashed on disk (in this process) before any interpreter of the target runs;
   then a subprocess of it imports the module and checks ``load_environment`` is callable and that the
   installed version is the resolved one.

An install that fails after it started is rolled back (``verifiers.hub._rollback``): the files it wrote
for the environment are removed and the previous version's files are put back, or nothing is left if
none was installed. Dependencies it installed from the user's index stay.

``vf-install`` calls ``install_from_hub(spec)``; bare names work because distribution names are unique
across the hub.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from verifiers.hub._rollback import Snapshot, take_snapshot
from verifiers.hub.client import HubClient, HubClientError, ResolvedVersion
from verifiers.hub.errors import HubInstallError as HubInstallError
from verifiers.hub.packaging import content_hash_of_module, normalize_name, parse_env_spec
from verifiers.hub.resolve import check_bare_name, close_names, did_you_mean
from verifiers.hub.wheel_rules import ArchiveError, inspect_wheel

Installer = Literal["auto", "pip", "uv"]
# Variables that would add indexes or local wheel sources to the hub-only install step.
_INDEX_ENV = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
)


@dataclass(frozen=True)
class InstallResult:
    env_id: str
    owner: str
    full_name: str
    version: str
    content_hash: str
    module: str
    #: False when an installed version already satisfied the spec and ``upgrade`` was not asked.
    installed: bool
    installer: str
    python: str
    dependencies_installed: tuple[str, ...] = ()


_PROBE = r"""
import importlib, importlib.metadata as md, json, pathlib, sys
name, module = sys.argv[1], sys.argv[2]
out = {"version": None, "callable": False, "content_hash": None, "error": None}
try:
    out["version"] = md.version(name)
    mod = importlib.import_module(module)
    out["callable"] = callable(getattr(mod, "load_environment", None))
    try:
        from verifiers.hub.packaging import content_hash_of_module
    except ImportError:
        pass
    else:
        path = pathlib.Path(mod.__file__)
        out["content_hash"] = content_hash_of_module(path.parent if path.name == "__init__.py" else path)
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

_UNSATISFIED = r"""
import importlib.metadata as md, json, sys
reqs = json.loads(sys.argv[1])
try:
    from packaging.requirements import Requirement
except ImportError:
    print(json.dumps(reqs)); raise SystemExit
missing = []
for text in reqs:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        missing.append(text); continue
    if not req.specifier.contains(have, prereleases=True):
        missing.append(text)
print(json.dumps(missing))
"""


def _run(cmd: list[str], *, env: dict[str, str] | None = None, what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise HubInstallError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _installed_version(python: str, name: str) -> str | None:
    code = "import importlib.metadata as m, sys\ntry: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass"
    out = _run([python, "-c", code, name], what=f"checking {name} in {python}").strip()
    return out or None


def _uv_binary(python: str) -> str | None:
    """``uv`` on PATH, or next to the target or this interpreter (a venv with ``pip install uv`` that is
    not activated)."""
    found = shutil.which("uv")
    if found:
        return found
    for exe in (python, sys.executable):
        sibling = Path(exe).parent / "uv"
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return str(sibling)
    return None


def pick_installer(python: str, installer: Installer = "auto") -> tuple[str, list[str]]:
    """The installer's name and command prefix for ``python``: ``uv pip install --python PY`` when uv is
    found (``auto`` or ``uv``), else ``PY -m pip install``. Used by hub and local (``vf-install``) installs."""
    uv = _uv_binary(python) if installer in ("uv", "auto") else None
    if uv is not None:
        return "uv", [uv, "pip", "install", "--python", python]
    if installer == "uv":
        raise HubInstallError("installer 'uv' asked for, but no `uv` executable was found")
    probe = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, check=False)
    if probe.returncode != 0:
        raise HubInstallError(f"{python} has no pip and no `uv` was found; install one of them")
    return "pip", [python, "-m", "pip", "install", "--disable-pip-version-check"]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _INDEX_ENV}


#: Caps of the wheel check on a download: far above any hub's upload limits (those are the hub's settings).
_MAX_MEMBERS = 100_000
_MAX_METADATA = 16 * 1024 * 1024
_MAX_UNPACKED = 4 * 1024**3


def verified_wheel(client: HubClient, resolved: ResolvedVersion, dest: Path) -> Path:
    """Download ``resolved``'s wheel into ``dest`` and check it as the hub checks an upload: the sha256
    the hub resolved, the wheel rules, the name, version and content hash. Raises ``HubInstallError``."""
    wheel = resolved.file("bdist_wheel")
    if wheel is None:
        raise HubInstallError(f"{resolved.full_name} {resolved.version} has no wheel on the hub")
    path = client.download(wheel, dest)  # refuses a sha256 other than the one resolved
    what = f"the wheel the hub served for {resolved.full_name} {resolved.version}"
    try:
        contents = inspect_wheel(
            path.name,
            path.read_bytes(),
            max_members=_MAX_MEMBERS,
            max_metadata_size=_MAX_METADATA,
            max_unpacked_size=_MAX_UNPACKED,
        )
    except ArchiveError as exc:
        raise HubInstallError(f"{what} breaks the hub's wheel rules, nothing was installed: {exc}") from None
    if contents.name != resolved.name or contents.version != Version(resolved.version):
        raise HubInstallError(f"{what} is {contents.name} {contents.version}; nothing was installed")
    if contents.content_hash != resolved.content_hash:
        raise HubInstallError(
            f"the sources in {what} hash to {contents.content_hash[:12]}…, the hub says "
            f"{resolved.content_hash[:12]}…; it is not the published package, nothing was installed"
        )
    return path


def _install_file(
    wheel: Path, resolved: ResolvedVersion, *, installer: tuple[str, list[str]], force: bool
) -> None:
    args = ["--no-deps", "--no-index", str(wheel)]
    if force:
        args.append("--reinstall" if installer[0] == "uv" else "--force-reinstall")
    _run([*installer[1], *args], env=_clean_env(), what=f"installing {resolved.name}=={resolved.version}")


def _dependencies(resolved: ResolvedVersion) -> list[Requirement]:
    out: list[Requirement] = []
    for text in resolved.dependencies:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise HubInstallError(
                f"{resolved.full_name} declares an invalid dependency {text!r}: {exc}"
            ) from None
        # Dependencies that only apply to an extra are not wanted: environments install without extras.
        if req.marker is not None and "extra" in str(req.marker):
            continue
        out.append(req)
    return out


def _unsatisfied(python: str, reqs: list[Requirement]) -> list[Requirement]:
    if not reqs:
        return []
    out = _run([python, "-c", _UNSATISFIED, json.dumps([str(r) for r in reqs])], what="checking dependencies")
    missing = set(json.loads(out))
    return [r for r in reqs if str(r) in missing]


def _hub_version_of(client: HubClient, req: Requirement) -> ResolvedVersion | None:
    spec = f"{req.name}@{req.specifier}" if str(req.specifier) else req.name
    try:
        return client.resolve(spec)
    except HubClientError as exc:
        if exc.status_code == 404:
            return None
        raise


def install_from_hub(
    spec: str,
    *,
    upgrade: bool = False,
    token: str | None = None,
    python: str = sys.executable,
    url: str | None = None,
    installer: Installer = "auto",
    client: HubClient | None = None,
) -> InstallResult:
    """Resolve ``[owner/]name[@specifier]`` on the hub, install it into ``python`` and verify it.

    ``url``/``token`` default to ``VF_HUB_URL``/``VF_HUB_TOKEN`` or the ``vf-hub login`` config.
    Raises ``HubInstallError`` (or ``ValueError`` for a malformed spec) with an actionable message.
    """
    parsed = parse_env_spec(spec)
    own_client = client is None
    try:
        client = client or HubClient(url=url, token=token)
    except HubClientError as exc:  # no httpx, or a malformed URL
        raise HubInstallError(f"cannot install {spec}: {exc}") from None
    try:
        if parsed.owner is None:  # a bare name: one clear error if the hub has none (verifiers.hub.resolve)
            check_bare_name(client, parsed.name)
        return _install(
            client, parsed.owner, parsed.name, parsed.specifier, upgrade, python, installer, frozenset()
        )
    except HubClientError as exc:
        hint = ""
        if exc.status_code == 404 and parsed.owner is not None and "not found" in str(exc):
            hint = did_you_mean(close_names(client, parsed.name, parsed.owner))  # a typo, not a version
        raise HubInstallError(f"cannot install {spec}: {exc}{hint}") from None
    finally:
        if own_client:
            client.close()


def _install(
    client: HubClient,
    owner: str | None,
    name: str,
    specifier: str,
    upgrade: bool,
    python: str,
    installer: Installer,
    seen: frozenset[str],
) -> InstallResult:
    if name in seen:
        raise HubInstallError(f"dependency cycle through {name}: {' -> '.join(sorted(seen))}")
    label = f"{owner + '/' if owner else ''}{name}{'@' + specifier if specifier else ''}"
    resolved = client.resolve(label)
    chosen = pick_installer(python, installer)
    have = _installed_version(python, resolved.name)
    installed = True
    if have is not None and not upgrade and SpecifierSet(specifier).contains(have, prereleases=True):
        # Already satisfied: keep it, but only if it is a version the hub knows (not some local build).
        try:
            resolved = client.resolve(f"{resolved.owner}/{resolved.name}@=={have}")
            installed = False
        except HubClientError as exc:
            if exc.status_code != 404:
                raise
    with tempfile.TemporaryDirectory(prefix="vf-hub-install-") as tmp:
        wheel = verified_wheel(client, resolved, Path(tmp)) if installed else None
        snapshot = take_snapshot(python, resolved.name, Path(tmp) / "previous")
        try:
            if wheel is not None:
                _install_file(wheel, resolved, installer=chosen, force=upgrade and have == resolved.version)
            from_index = _install_dependencies(client, resolved, python, installer, chosen, seen)
            _verify(python, resolved, snapshot)
        except BaseException as exc:
            if installed:
                note = snapshot.restore()
                if isinstance(exc, HubInstallError | HubClientError):
                    raise HubInstallError(f"{exc}\n({note})") from None
            raise
    return InstallResult(
        env_id=resolved.name,
        owner=resolved.owner,
        full_name=resolved.full_name,
        version=resolved.version,
        content_hash=resolved.content_hash,
        module=resolved.module,
        installed=installed,
        installer=chosen[0],
        python=python,
        dependencies_installed=tuple(str(r) for r in from_index),
    )


def _install_dependencies(
    client: HubClient,
    resolved: ResolvedVersion,
    python: str,
    installer: Installer,
    chosen: tuple[str, list[str]],
    seen: frozenset[str],
) -> list[Requirement]:
    """Install what ``resolved`` needs and ``python`` lacks; the requirements taken from the user's index."""
    deps = _unsatisfied(python, _dependencies(resolved))
    from_index: list[Requirement] = []
    for req in deps:
        on_hub = _hub_version_of(client, req)
        if on_hub is None:
            from_index.append(req)
        elif on_hub.owner == resolved.owner:
            _install(
                client,
                on_hub.owner,
                normalize_name(req.name),
                str(req.specifier),
                False,
                python,
                installer,
                seen | {resolved.name},
            )
        else:
            raise HubInstallError(
                f"{resolved.full_name} depends on {req}, which on the hub is {on_hub.full_name} (another owner). "
                f"It is not installed automatically; if you trust it, run install_from_hub('{on_hub.full_name}') "
                "first, or install the package you meant from your usual index."
            )
    if from_index:
        _run(
            [*chosen[1], *(str(r) for r in from_index)],
            what=f"installing dependencies of {resolved.full_name} ({', '.join(map(str, from_index))})",
        )
    return from_index


def probe_environment(python: str, dist: str, module: str) -> dict[str, Any]:
    """What ``python`` sees of an installed environment: ``version`` of ``dist``, whether ``module`` imports
    with a callable ``load_environment`` (``callable``), its ``content_hash``, and an import ``error``."""
    out = _run([python, "-c", _PROBE, dist, module], what=f"importing {module}")
    return dict(json.loads(out.strip().splitlines()[-1]))


def _installed_sources(snapshot: Snapshot, module: str) -> Path | None:
    for site in snapshot.site_dirs:
        for candidate in (site / module, site / f"{module}.py"):
            if candidate.exists():
                return candidate
    return None


def _verify(python: str, resolved: ResolvedVersion, snapshot: Snapshot) -> None:
    # On disk first, in this process: no interpreter of the target runs over sources not yet checked.
    sources = _installed_sources(snapshot, resolved.module)
    if sources is not None and content_hash_of_module(sources) != resolved.content_hash:
        raise HubInstallError(
            f"the installed sources of {resolved.module} at {sources} do not hash to the hub's content hash "
            f"{resolved.content_hash[:12]}…; the installed copy is not the published one"
        )
    probe = probe_environment(python, resolved.name, resolved.module)
    if probe["error"]:
        raise HubInstallError(
            f"{resolved.full_name} installed but `import {resolved.module}` failed: {probe['error']}"
        )
    if probe["version"] is None or Version(probe["version"]) != Version(resolved.version):
        raise HubInstallError(
            f"expected {resolved.name} {resolved.version} installed, found {probe['version']}"
        )
    if not probe["callable"]:
        raise HubInstallError(f"{resolved.module} has no callable load_environment")
    if probe["content_hash"] is not None and probe["content_hash"] != resolved.content_hash:
        raise HubInstallError(
            f"the installed sources of {resolved.module} hash to {probe['content_hash'][:12]}…, the hub says "
            f"{resolved.content_hash[:12]}…; the installed copy is not the published one"
        )
