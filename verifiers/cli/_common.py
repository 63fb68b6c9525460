"""What the vf-* commands share: one-line errors instead of tracebacks, JSON options, logging setup."""

from __future__ import annotations

import json
import logging
import sys
import traceback
from typing import Any, NoReturn

import typer

#: Exit statuses: bad input (usage) is 2, like click; a run that failed or could not reach its endpoint 1.
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An expected failure: printed as ``<prog>: error: <message>`` and exits with ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code)


def make_app(help: str) -> typer.Typer:
    """A one-command typer app with the settings every vf-* command shares: ``-h``, plain help text,
    no shell-completion options, and no rich tracebacks (``run_command`` prints errors on one line)."""
    return typer.Typer(
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
        help=help,
    )


def parse_json_object(value: str | None, flag: str) -> dict[str, Any] | None:
    """A JSON object option (``-a``, ``-S``, ``-x``); ``None`` when the option was not given."""
    if value is None:
        return None
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        fail(f"{flag} is not valid JSON ({exc.msg} at column {exc.colno}): {value!r}")
    if not isinstance(data, dict):
        fail(f"{flag} must be a JSON object like '{{\"key\": 1}}', not {value!r}")
    return data


def setup_logging(verbose: bool) -> None:
    """Log to stderr: warnings by default, everything from ``verifiers`` with -v."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    if verbose:
        logging.getLogger("verifiers").setLevel(logging.DEBUG)


def run_command(prog: str, app: typer.Typer, args: list[str] | None = None) -> None:
    """Run a typer app, turning ``CliError`` and unexpected exceptions into one-line messages."""
    argv = sys.argv[1:] if args is None else args
    verbose = any(a in ("-v", "--verbose") for a in argv)
    try:
        # standalone_mode=False: errors reach us as exceptions; --help and typer.Exit return a status.
        status = app(args=argv, prog_name=prog, standalone_mode=False)
    except CliError as exc:
        _print_error(prog, str(exc))
        sys.exit(exc.code)
    except KeyboardInterrupt:
        _print_error(prog, "interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _print_error(prog, "aborted")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        # Usage errors (bad option value, unknown option) are click exceptions; typer vendors click, so
        # recognise them by their interface rather than a class from a private module.
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        if verbose:
            traceback.print_exc()
        _print_error(
            prog, f"unexpected {type(exc).__name__}: {exc}" + ("" if verbose else " (-v shows the traceback)")
        )
        sys.exit(EXIT_FAILED)
    sys.exit(status if isinstance(status, int) else 0)


def _print_error(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
