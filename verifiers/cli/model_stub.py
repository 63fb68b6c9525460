"""``vf-model-stub RULES``: serve the scripted model (``verifiers.clients.scripted``) until Ctrl-C."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from verifiers.cli._common import fail, make_app, run_command

PROG = "vf-model-stub"

app = make_app(
    "Serve a scripted OpenAI-compatible model on http://HOST:PORT/v1: each chat completion is answered by "
    "the first rule of RULES (.toml or .json) that matches the conversation — content, tool calls, "
    "reasoning, an HTTP error, after a delay — else by its default. Prints 'vf-model-stub listening on "
    "URL' once ready, then one line per request (--quiet: none). Point any client at it, or let vf-eval "
    "start it for a run: vf-eval ENV -m scripted:RULES. The rules format: docs/tools.md."
)


@app.command()
def model_stub_command(
    rules: Annotated[Path, typer.Argument(help="the rules file (.toml or .json)", show_default=False)],
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port to listen on (0: a free one)")] = 8000,
    model_name: Annotated[
        str, typer.Option("--model-name", help="the model GET /v1/models lists (requests may name any)")
    ] = "scripted",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no line per request")] = False,
) -> None:
    from verifiers.clients.scripted import RulesError, load_script, serve

    try:
        script = load_script(rules)
    except RulesError as exc:
        fail(str(exc))

    def ready(bound: int) -> None:
        typer.echo(f"{PROG} listening on http://{host}:{bound}/v1 ({len(script.rules)} rules from {rules})")

    def answered(number: int, rule: str, what: str) -> None:
        typer.echo(f"request {number}: {rule}: {what}")

    try:
        asyncio.run(
            serve(
                script,
                host=host,
                port=port,
                model_name=model_name,
                on_ready=ready,
                on_answer=None if quiet else answered,
            )
        )
    except OSError as exc:  # the port is taken, or the host is not this machine's
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", 1)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    run_command(PROG, app, argv)


if __name__ == "__main__":
    main()
