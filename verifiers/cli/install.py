"""``vf-install NAME | PATH | owner/name[@spec]``: install an environment package into this interpreter.

A path, or a name found under ``./environments/``, is installed editable (``uv pip install -e`` when uv is
available, else ``pip install -e``); ``owner/name[@spec]`` — and a bare name not found locally — comes
from the hub (``verifiers.hub.install.install_from_hub``). Either way the result is checked in a fresh
interpreter: ``import <module>; <module>.load_environment`` must work.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from verifiers.cli._common import EXIT_FAILED, fail, make_app, run_command

PROG = "vf-install"

app = make_app(
    "Install an environment package into the current Python environment and check that it loads. "
    "TARGET is a path to a package directory, a name under ./environments/ (installed editable), or "
    "owner/name[@version-spec] from the Environments Hub (a bare name not found locally goes to the "
    "hub too)."
)


def installer_command(
    path: Path, *, python: str = sys.executable, upgrade: bool = False, no_deps: bool = False
) -> list[str]:
    """``uv pip install -e PATH`` for ``python`` when uv is available, else ``python -m pip install -e PATH``."""
    from verifiers.hub.install import HubInstallError, pick_installer

    try:
        _, prefix = pick_installer(python)
    except HubInstallError as exc:
        fail(str(exc), EXIT_FAILED)
    extra = [*(["--upgrade"] if upgrade else []), *(["--no-deps"] if no_deps else [])]
    return [*prefix, *extra, "-e", str(path)]


def _project(path: Path) -> tuple[str, str]:
    """(distribution name, module) of the environment project at ``path``."""
    from verifiers.hub.packaging import module_name, normalize_name

    pp = path / "pyproject.toml"
    if not pp.is_file():
        fail(f"{path} is not an environment package (no pyproject.toml)")
    try:
        name = tomllib.loads(pp.read_text())["project"]["name"]
    except (KeyError, tomllib.TOMLDecodeError) as exc:
        fail(f"{pp} has no valid [project] name ({exc})")
    return normalize_name(name), module_name(name)


def _local_dir(target: str) -> Path | None:
    """The project directory ``target`` names: an existing path, or an environment under ./environments."""
    from verifiers.envs.loading import local_environments
    from verifiers.hub.packaging import module_name, normalize_name

    p = Path(target).expanduser()
    if p.is_dir():
        return p
    if looks_like_path(target):
        what = "is a file, not a package directory" if p.exists() else "no such directory"
        fail(f"{target}: {what} ({p.resolve()}); give an environment project directory (with pyproject.toml)")
    if "/" in target or "@" in target:
        return None
    found = local_environments().get(normalize_name(target))
    if found is not None:
        return found
    for candidate in (Path("environments") / module_name(target), Path("environments") / target):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return None


def looks_like_path(target: str) -> bool:
    """Whether ``target`` can only be a path: ``./x``, ``../x``, ``/x``, ``~/x``, ``x/`` or ``a/b/c`` (a hub
    spec is ``owner/name[@spec]``: one slash, before any ``@``)."""
    head = target.split("@", 1)[0]
    return (
        target.startswith(("./", "../", "/", "~"))
        or target in (".", "..")
        or head.endswith("/")
        or head.count("/") > 1
    )


def _local_places(target: str) -> list[str]:
    """Where ``_local_dir`` looked for a bare name, for the not-found error."""
    from verifiers.hub.packaging import module_name

    envs = Path("environments").resolve()
    found = f"no {module_name(target)}/ nor a project named {target!r}" if envs.is_dir() else "absent"
    return [f"the path {Path(target).expanduser().resolve()} (not a directory)", f"{envs}/ ({found})"]


def check_import(module: str, dist: str, python: str = sys.executable) -> str | None:
    """The installed version of ``dist``, once ``import <module>; load_environment`` is proven to work."""
    from verifiers.hub.install import HubInstallError, probe_environment

    try:
        probe = probe_environment(python, dist, module)
    except HubInstallError as exc:
        fail(str(exc).splitlines()[0], EXIT_FAILED)
    if probe["error"] or not probe["callable"]:
        reason = probe["error"] or f"module {module!r} has no load_environment() function"
        fail(f"installed, but `import {module}; load_environment` failed: {reason}", EXIT_FAILED)
    version: str | None = probe["version"]
    return version


def _install_local(path: Path, out: Console, *, upgrade: bool, no_deps: bool, verbose: bool) -> None:
    dist, module = _project(path)
    cmd = installer_command(path.resolve(), upgrade=upgrade, no_deps=no_deps)
    out.print(f"installing {dist} from {path} ({Path(cmd[0]).name} {' '.join(cmd[1:3])}) …")
    proc = subprocess.run(cmd, capture_output=not verbose, text=True, check=False)
    if proc.returncode != 0:
        if not verbose:
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-15:]
            print("\n".join(tail), file=sys.stderr)
        fail(
            f"installing {path} failed (exit {proc.returncode}); see the installer output above", EXIT_FAILED
        )
    version = check_import(module, dist)
    out.print(f"installed [bold]{dist}[/] {version or '?'} (editable, {path}); import {module} OK")


def _install_hub(spec: str, out: Console, *, upgrade: bool, token: str | None, hub_url: str | None) -> None:
    from verifiers.hub.install import HubInstallError, install_from_hub
    from verifiers.hub.resolve import EnvironmentNotFound

    out.print(f"installing {spec} from the hub …")
    try:
        result = install_from_hub(spec, upgrade=upgrade, token=token, python=sys.executable, url=hub_url)
    except EnvironmentNotFound as exc:  # a bare name found nowhere: one error naming every place
        from verifiers.envs.loading import did_you_mean, similar_environments

        hint = did_you_mean(similar_environments(spec))
        fail(str(exc.with_local_places(_local_places(spec))) + (f"\n{hint}" if hint else ""), EXIT_FAILED)
    except (HubInstallError, ValueError) as exc:  # written for users: show them, minus a traceback
        first, _, rest = str(exc).partition("\n")
        if rest.strip():
            print(rest, file=sys.stderr)
        fail(f"installing {spec} from the hub failed: {first}", EXIT_FAILED)
    # install_from_hub has already verified the import, version and content hash in this interpreter.
    verb = "installed" if result.installed else "already installed (use --upgrade to update)"
    out.print(
        f"{verb}: [bold]{result.full_name}[/] {result.version} (content hash {result.content_hash[:12]}…); "
        f"import {result.module} OK"
    )


@app.command()
def install_command(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="PATH, NAME (under ./environments) or owner/name[@spec].",
            show_default=False,
        ),
    ],
    upgrade: Annotated[bool, typer.Option("--upgrade", "-U", help="Upgrade if already installed.")] = False,
    no_deps: Annotated[
        bool, typer.Option("--no-deps", help="Do not install the package's dependencies (local installs).")
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Hub token for private environments [default: VF_HUB_TOKEN or vf-hub login].",
            show_default=False,
        ),
    ] = None,
    hub_url: Annotated[
        str | None,
        typer.Option("--hub-url", help="Hub URL [default: VF_HUB_URL or vf-hub login].", show_default=False),
    ] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Show the installer's output.")] = False,
) -> None:
    out = Console()
    local = _local_dir(target)
    if local is not None:
        _install_local(local, out, upgrade=upgrade, no_deps=no_deps, verbose=verbose)
    else:
        _install_hub(target, out, upgrade=upgrade, token=token, hub_url=hub_url)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    run_command(PROG, app, argv)


if __name__ == "__main__":
    main()
