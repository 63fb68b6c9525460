"""``vf-push [PATH]``: build an environment package (PEP 517, ``python -m build``) and publish it to the hub.

``vf-push --results RUN_DIR`` uploads a finished eval run instead (``verifiers.hub.results``: truncation
limits, chunks, resume); ``vf-eval … --push`` calls ``push_results`` when its run has finished.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Literal

import typer
from packaging.utils import parse_wheel_filename

from verifiers._urls import redact_url
from verifiers.cli._common import EXIT_FAILED, fail, make_app, run_command
from verifiers.hub import wire
from verifiers.hub.client import HubClient, HubClientError
from verifiers.hub.packaging import content_hash_of_sdist, module_name
from verifiers.hub.results import PushTarget

PROG = "vf-push"

app = make_app(
    "Build an environment project (wheel + sdist, PEP 517) and publish it to the Environments Hub; prints "
    "its page and the install commands."
)


def build_distributions(project: Path, outdir: Path, *, isolation: bool = True) -> tuple[Path, Path]:
    """Build sdist then wheel-from-sdist with ``python -m build``; returns (wheel, sdist)."""
    cmd = [sys.executable, "-m", "build", "--outdir", str(outdir), str(project)]
    if not isolation:
        cmd.insert(3, "--no-isolation")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        if "No module named build" in tail:
            tail = "the `build` package is missing: pip install build (or verifiers-sdk[hub])"
        raise RuntimeError(f"building {project} failed:\n{tail}")
    wheels, sdists = sorted(outdir.glob("*.whl")), sorted(outdir.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise RuntimeError(f"expected one wheel and one sdist in {outdir}, found {wheels + sdists}")
    return wheels[0], sdists[0]


def check_push(
    env_id: str,
    version: str,
    content_hash: str,
    *,
    owner: str | None = None,
    url: str | None = None,
    token: str | None = None,
    before: str = "the run",
) -> PushTarget:
    """``verifiers.hub.results.push_target`` for a command that will push later (``vf-eval --push``):
    the token, the hub, the environment and its content hash, checked before ``before``."""
    from verifiers.hub.results import push_target

    with HubClient(url=url, token=token) as client:
        if not client.token:
            fail(f"--push: {client.config.missing_token_message()}")
        try:
            return push_target(client, env_id, version, content_hash, owner=owner)
        except HubClientError as exc:
            fail(f"--push: {exc} (checked before {before}; nothing was run)", EXIT_FAILED)


def push_results(
    run_dir: Path,
    *,
    owner: str | None = None,
    visibility: Literal["public", "private"] | None = None,
    url: str | None = None,
    token: str | None = None,
    err: bool = False,
    target: PushTarget | None = None,
) -> None:
    """Upload the run in ``run_dir`` to the hub and print where it is (on stderr if ``err``: after
    ``vf-eval --json`` stdout holds the summary); a failure exits with a message. ``target``: where
    ``check_push`` found the results go."""
    from verifiers.hub.results import push_run

    with HubClient(url=url, token=token) as client:
        if not client.token:
            fail(client.config.missing_token_message())
        try:
            pushed = push_run(client, run_dir, owner=owner, visibility=visibility, target=target)
        except HubClientError as exc:
            fail(f"pushing {run_dir}: {exc}", EXIT_FAILED)
    if pushed.target is not None and pushed.target.note:
        typer.echo(f"note: {pushed.target.note}", err=err)
    run = pushed.run
    resumed = f", {pushed.already_there} already there" if pushed.already_there else ""
    typer.echo(
        f"pushed eval run {run.id} of {run.environment} {run.version} ({run.model}, {run.visibility}): "
        f"{pushed.sent} rollouts sent{resumed}",
        err=err,
    )
    if run.avg_reward is not None:
        reward = wire.describe_reward(run.avg_reward, run.scored_count, run.std_reward)
        typer.echo(f"  reward: {reward} over {run.scored_count} scored rollouts", err=err)
    typer.echo(f"  {redact_url(pushed.url)}", err=err)


@app.command()
def push(
    path: Annotated[
        Path, typer.Argument(help="Environment project directory (holds pyproject.toml).")
    ] = Path("."),
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            metavar="RUN_DIR",
            help="Upload this finished eval run directory (private unless --visibility public) instead of "
            "publishing a package.",
            show_default=False,
        ),
    ] = None,
    owner: Annotated[str | None, typer.Option(help="Namespace to publish to (default: your user).")] = None,
    visibility: Annotated[
        Literal["public", "private"] | None,
        typer.Option(
            help="Set the environment's visibility (with --results: the run's, new runs private by default; "
            "a run pushed before is changed to it)."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Build and check, but do not upload.")] = False,
    url: Annotated[
        str | None,
        typer.Option("--url", "--hub-url", help="Hub URL (default: VF_HUB_URL or `vf-hub login`)."),
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="API token (default: VF_HUB_TOKEN or `vf-hub login`).")
    ] = None,
    isolation: Annotated[
        bool, typer.Option("--isolation/--no-isolation", help="Build in an isolated environment (PEP 517).")
    ] = True,
    outdir: Annotated[
        Path | None,
        typer.Option(
            help="Keep the built files here (default: PATH/dist with --dry-run, like `python -m build`; "
            "else a temp dir).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Build PATH's wheel and sdist and publish them as a new version on the hub."""
    if results is not None:
        if dry_run:
            fail("--dry-run builds a package; it does not apply to --results")
        push_results(results, owner=owner, visibility=visibility, url=url, token=token)
        return
    project = path.resolve()
    if not (project / "pyproject.toml").is_file():
        fail(f"{project} has no pyproject.toml; run vf-push in an environment project (see vf-init)")
    with contextlib.ExitStack() as stack:
        client: HubClient | None = None
        namespace = owner
        if not dry_run:
            # Token and hub first: a build takes a while, and must not be wasted on a typo'd URL or token.
            client = stack.enter_context(HubClient(url=url, token=token))
            if not client.token:
                fail(client.config.missing_token_message())
            try:
                user = client.whoami().username
            except HubClientError as exc:
                fail(f"{exc} (checked before building; nothing was built or uploaded)", EXIT_FAILED)
            namespace = owner or user
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vf-push-")))
        # A dry run is for the files (vf-smoke them, look inside): they stay in PATH/dist unless told.
        keep = outdir.resolve() if outdir else (project / "dist" if dry_run else None)
        typer.echo(f"building {project} …", err=True)
        try:
            # Built into an empty directory, then copied: an outdir holding earlier builds is fine.
            wheel, sdist = build_distributions(project, tmp / "build", isolation=isolation)
        except RuntimeError as exc:
            fail(str(exc), EXIT_FAILED)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            wheel, sdist = (Path(shutil.copy2(f, keep / f.name)) for f in (wheel, sdist))
        name, version, _, _ = parse_wheel_filename(wheel.name)
        module = module_name(str(name))
        try:
            content_hash = content_hash_of_sdist(sdist, module)
        except ValueError as exc:
            fail(f"{exc}; an environment named {name} must ship the module {module}", EXIT_FAILED)
        typer.echo(
            f"{name} {version}: {wheel.name} ({wheel.stat().st_size} B), {sdist.name} ({sdist.stat().st_size} B)"
        )
        typer.echo(f"content hash {content_hash}")
        if keep is not None:
            typer.echo(f"kept in {_shown(keep)}/")
        if client is None or namespace is None:
            typer.echo("dry run: nothing uploaded")
            typer.echo(f"  smoke-check it: vf-smoke {_shown(wheel)}")
            return
        try:
            published = client.publish(
                namespace, str(name), wheel, sdist, visibility=visibility, content_hash=content_hash
            )
            env_url = client.environment_url(published.environment)
            # A version's answer does not say who may read its environment; the environment's does.
            detail = client.environment(*published.environment.split("/"))
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
        private = detail.visibility == "private"
        # pip reaches a private environment only with a token: print the form it takes, never the token
        index = client.token_index_url() if private else redact_url(client.index_url())
    if private:
        typer.echo(
            f"published {published.environment} {published.version} (private: only members of "
            f"{detail.owner} and the users it is shared with can read or install it)"
        )
    else:
        typer.echo(f"published {published.environment} {published.version}")
    typer.echo(f"  {redact_url(env_url)}")
    typer.echo(f"  install: vf-install {published.environment}@=={published.version}")
    typer.echo(f"       or: pip install --index-url {index} {name}=={published.version}")
    if private:
        typer.echo(f"  share it: vf-hub env share {published.environment} USER")


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it (what a user would type)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(args: list[str] | None = None) -> None:
    run_command(PROG, app, args)


if __name__ == "__main__":
    main()
