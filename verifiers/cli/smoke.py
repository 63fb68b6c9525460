"""``vf-smoke WHEEL``: the smoke check of an environment wheel in a sandbox (install it into a throwaway venv,
``load_environment()`` with defaults, one rollout against a fixed-reply model), before you push it.

The hub runs the same command on every publish (``--json``, with its own index) and stores the report.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from verifiers.cli._common import EXIT_FAILED, fail, make_app, run_command

PROG = "vf-smoke"

app = make_app("Smoke-check an environment wheel in a sandbox: install, load_environment(), one rollout.")


@app.command()
def smoke(
    wheel: Annotated[Path, typer.Argument(help="The environment's wheel (.whl).", show_default=False)],
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            help="Where requirements beyond the SDK come from (none: the check fails if it needs any).",
            show_default=False,
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="runsc or bwrap [default: the best available].")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds for the whole check.")
    ] = 300.0,
    max_dependency_mb: Annotated[
        int,
        typer.Option(
            "--max-dependency-mb", min=1, help="Most MB of requirement wheels beyond the SDK to download."
        ),
    ] = 256,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    show_log: Annotated[
        bool, typer.Option("--log", help="Print the check's whole log (pip's output…) even when it passes.")
    ] = False,
) -> None:
    """Exit status 0 when the check passed, 1 when it failed or was skipped (the report says why)."""
    from verifiers.envs.smoke_check import run_smoke_check

    if wheel.suffix != ".whl" or not wheel.is_file():
        fail(f"{wheel} is not a wheel file")
    if not as_json:
        typer.echo(f"smoke check of {wheel.name}: installing and rolling out once in a sandbox…")
    report = asyncio.run(
        run_smoke_check(
            wheel.name,
            wheel.read_bytes(),
            backend=backend,
            timeout_s=timeout,
            index_url=index_url,
            max_dependency_bytes=max_dependency_mb * 1024 * 1024,
        )
    )
    if as_json:
        typer.echo(report.model_dump_json())
    else:
        if report.status != "passed" or show_log:  # the log (pip's lines) is for finding what went wrong
            typer.echo(report.log)
        took = f"{report.duration_s:.1f} s"
        typer.echo(f"smoke check: {report.status} ({took}){': ' + report.reason if report.reason else ''}")
    if report.status != "passed":
        raise typer.Exit(EXIT_FAILED)


def main(args: list[str] | None = None) -> None:
    run_command(PROG, app, args)


if __name__ == "__main__":
    main()
