"""What the vf-* commands share: one-line errors instead of tracebacks, JSON options, logging setup."""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from typing import Any, NoReturn

import typer

from verifiers._extras import MissingExtraError, extra_of_module, install_command, require_extra

#: Exit statuses: bad input (usage) is 2, like click; a run that failed or could not reach its endpoint 1.
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: Console width without a terminal: no folding (tables are only as wide as their content).
UNBOUNDED_WIDTH = 10_000


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


def hand_over(module: str, args: list[str], *, extra: str, what: str) -> NoReturn:
    """Become ``python -m MODULE ARGS`` once ``extra`` is known to be installed (``MissingExtraError``
    otherwise). The hub's commands run this way: the SDK never imports ``hub_server``, and the process
    keeps its id, so signals and the exit status are the command's own."""
    require_extra(extra, what)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", module, *args])


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
    verbose = any(a in ("-v", "--verbose") for a in argv) or os.environ.get("VF_TRACEBACK") == "1"
    try:
        # standalone_mode=False: errors reach us as exceptions; --help and typer.Exit return a status.
        status = app(args=argv, prog_name=prog, standalone_mode=False)
    except CliError as exc:
        exit_with_error(prog, exc)
    except KeyboardInterrupt:
        _print_error(prog, "interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _print_error(prog, "aborted")
        sys.exit(EXIT_INTERRUPTED)
    except MissingExtraError as exc:
        _print_error(prog, str(exc))
        sys.exit(EXIT_FAILED)
    except ModuleNotFoundError as exc:
        _print_error(prog, missing_module_message(exc))
        sys.exit(EXIT_FAILED)
    except Exception as exc:
        # Usage errors (bad option value, unknown option) are click exceptions; typer vendors click, so
        # recognise them by their interface rather than a class from a private module. click would print
        # a usage block, a blank line and "Error: …"; the promise is one line (docs/cli.md).
        message, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
        if callable(message) and isinstance(code, int):
            _print_error(prog, f"{usage_message(str(message()))} (see {prog} --help)")
            sys.exit(code)
        if verbose:
            traceback.print_exc()
        hint = "" if verbose else f" ({_traceback_hint(app, argv)} shows the traceback)"
        _print_error(prog, f"unexpected {type(exc).__name__}: {exc}{hint}")
        sys.exit(EXIT_FAILED)
    sys.exit(status if isinstance(status, int) else 0)


def _traceback_hint(app: typer.Typer, argv: list[str]) -> str:
    """The way to see a traceback for the command that ran: its ``-v`` when it has one, else
    ``VF_TRACEBACK=1`` (which every command honours)."""
    try:
        cmd: Any = typer.main.get_command(app)
        for arg in argv:
            sub = getattr(cmd, "commands", {}).get(arg)
            if sub is None:
                break
            cmd = sub
        if any("-v" in getattr(p, "opts", ()) for p in getattr(cmd, "params", ())):
            return "-v"
    except Exception:  # the hint must never be the thing that fails
        pass
    return "VF_TRACEBACK=1"


def exit_with_error(prog: str, exc: CliError) -> NoReturn:
    """Print ``<prog>: error: <message>`` and exit with the error's status."""
    _print_error(prog, str(exc))
    sys.exit(exc.code)


def usage_message(message: str) -> str:
    """click's usage message on one line, starting in lower case like every other ``error:`` line."""
    text = " ".join(message.split())
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def missing_module_message(exc: ModuleNotFoundError) -> str:
    """One line for a module that is not installed: the extra that brings it and the command, if one does."""
    name = exc.name or str(exc)
    extra = extra_of_module(name)
    if extra is None:
        return f"the module {name!r} is not installed ({exc})"
    return (
        f"the module {name!r} is not installed: it comes with the [{extra}] extra: {install_command(extra)}"
    )


def _print_error(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
