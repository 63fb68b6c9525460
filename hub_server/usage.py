"""Running the hub's typer apps with the SDK's error promise: a usage error is one line,
``<prog>: error: <message> (see <prog> --help)``, exit status 2 — not click's usage block (docs/cli.md).
``verifiers.cli._common.run_command`` does the same for the SDK's commands; the hub may not import it."""

from __future__ import annotations

import sys

import typer


def run_app(app: typer.Typer, prog: str, args: list[str] | None = None) -> None:
    try:
        # standalone_mode=False: click's errors reach us; --help returns a status.
        status = app(args=args, prog_name=prog, standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print(f"{prog}: error: aborted", file=sys.stderr, flush=True)
        sys.exit(130)
    except Exception as exc:
        # typer vendors click: its usage errors are recognised by their interface, not a private class
        message, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
        if not (callable(message) and isinstance(code, int)):
            raise
        text = " ".join(str(message()).split())
        text = text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
        print(f"{prog}: error: {text} (see {prog} --help)", file=sys.stderr, flush=True)
        sys.exit(code)
    sys.exit(status if isinstance(status, int) else 0)
