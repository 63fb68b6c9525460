"""``vf-train``: drive prime-rl (the pinned release, v0.5.0) with our environments.

``render`` writes a run directory from a preset, ``validate`` checks it before GPU hours are spent,
``launch`` starts the env servers and runs (or prints) prime-rl's commands, ``bridge`` writes the packages
prime-rl's venv needs. The logic lives in ``verifiers.training.prime_rl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verifiers.cli._common import EXIT_FAILED, fail, make_app, run_command, setup_logging

PROG = "vf-train"
#: ``-v``: more logging, and the traceback of an unexpected error (``run_command`` reads the flag).
Verbose = Annotated[
    bool, typer.Option("--verbose", "-v", help="Log more; show tracebacks of unexpected errors.")
]

app = make_app(
    "Render, validate and launch prime-rl v0.5.0 runs on our environments (env servers via vf-serve, "
    "bridge packages for prime-rl's venv, the custom IcePop loss)."
)


@app.command(
    "render",
    help="Write a prime-rl v0.5.0 run directory (configs, env-server plan, bridge packages) from a preset.",
)
def render_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory to write.", show_default=False)],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model name (HF id or path).", show_default=False)
    ],
    env: Annotated[
        list[str],
        typer.Option(
            "--env",
            "-e",
            help="ID[@VERSION][:RATIO], repeatable (e.g. math-env, code-env:0.3).",
            show_default=False,
        ),
    ],
    preset: Annotated[str, typer.Option("--preset", "-p", help="single-node or intellect3.")] = "single-node",
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="section.key=value override (TOML value), repeatable.", show_default=False
        ),
    ] = None,
    verbose: Verbose = False,
) -> None:
    from verifiers.training.prime_rl.render import RenderError, render

    setup_logging(verbose)
    if preset not in ("single-node", "intellect3"):
        fail(f"--preset {preset!r}: choose single-node or intellect3")
    try:
        result = render(preset, env, model, out, set_ or [])  # type: ignore[arg-type]
    except RenderError as exc:
        fail(str(exc))
    for f in result.files:
        typer.echo(f"wrote {f}")
    typer.echo(f"next: vf-train validate {out}")


@app.command(
    "validate",
    help="Check a run directory against every invariant prime-rl v0.5.0 relies on; one line per problem.",
)
def validate_command(
    run_dir: Annotated[Path, typer.Argument(metavar="DIR", help="A run directory written by render.")],
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Do not contact env servers or import environments.")
    ] = False,
    verbose: Verbose = False,
) -> None:
    from verifiers.training.prime_rl.validate import validate

    setup_logging(verbose)
    if not run_dir.is_dir():
        fail(f"{run_dir} is not a directory")
    report = validate(run_dir, probe_envs=not no_probe)
    for e in report.environments:
        if e.get("source"):
            typer.echo(
                f"env {e['id']}: version {e['version']}, content hash {(e['content_hash'] or '?')[:12]} ({e['source']})"
            )
    for line in report.lines():
        typer.echo(line)
    if not report.ok:
        fail(f"{len(report.problems)} problem(s) in {run_dir}", EXIT_FAILED)
    typer.echo(f"{run_dir}: OK for prime-rl v0.5.0")


@app.command(
    "launch",
    help="Start the env servers and prime-rl for a validated run directory (--dry-run prints the commands).",
)
def launch_command(
    run_dir: Annotated[Path, typer.Argument(metavar="DIR", help="A validated run directory.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the commands only; start nothing.")
    ] = False,
    prime_rl_dir: Annotated[
        str | None,
        typer.Option("--prime-rl-dir", help="A prime-rl v0.5.0 checkout with its venv.", show_default=False),
    ] = None,
    prime_rl_python: Annotated[
        str | None,
        typer.Option(
            "--prime-rl-python",
            help="The Python of an environment prime-rl v0.5.0 is installed in (instead of a checkout).",
            show_default=False,
        ),
    ] = None,
    orchestrator_only: Annotated[
        bool,
        typer.Option(
            "--orchestrator-only",
            help="Run only the env servers and prime-rl's orchestrator here (inference and trainer run "
            "elsewhere); no GPU needed.",
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for env-server health.")
    ] = 120.0,
    verbose: Verbose = False,
) -> None:
    from verifiers.training.prime_rl.launch import LaunchError, launch
    from verifiers.training.prime_rl.validate import validate

    setup_logging(verbose)
    report = validate(run_dir, probe_envs=False)
    if not report.ok:
        for p in report.problems:
            typer.echo(str(p))
        fail(f"{run_dir} does not validate; fix it first (vf-train validate {run_dir})", EXIT_FAILED)
    try:
        status = launch(
            run_dir,
            dry_run=dry_run,
            prime_rl_dir=prime_rl_dir,
            prime_rl_python=prime_rl_python,
            orchestrator_only=orchestrator_only,
            say=typer.echo,
            timeout=timeout,
        )
    except LaunchError as exc:
        fail(str(exc), EXIT_FAILED)
    raise typer.Exit(status)


@app.command("bridge")
def bridge_command(
    run_dir: Annotated[Path, typer.Argument(metavar="DIR", help="A run directory written by render.")],
    verbose: Verbose = False,
) -> None:
    """(Re)write DIR/packages: the loss package and one bridge package per environment."""
    setup_logging(verbose)
    from verifiers.training.prime_rl.bridge import write_packages
    from verifiers.training.prime_rl.spec import RunSpec

    for p in write_packages(run_dir, RunSpec.read(run_dir)):
        typer.echo(f"wrote {p}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    run_command(PROG, app, argv)


if __name__ == "__main__":
    main()
