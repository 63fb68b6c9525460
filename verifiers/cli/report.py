"""``vf-eval report RUN_DIR…``: the benchmark table of saved runs (``verifiers.eval.report``), as markdown
for a model card, JSON, or a terminal table — the table a suite ends with."""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from verifiers.cli._common import UNBOUNDED_WIDTH, fail, make_app, run_command

PROG = "vf-eval report"

app = make_app(
    "Print the benchmark table of saved runs: benchmark | avg@k | 95% CI | pass@k | n | reference | tokens, "
    "values in percent, one row per RUN_DIR in the order given (the table `vf-eval @ SUITE.toml` ends "
    "with). --suite FILE names each run's benchmark and gives its model card value (the entry with the "
    "run's environment)."
)


class Format(StrEnum):
    md = "md"
    json = "json"
    table = "table"


@app.command()
def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR...", help="Run directories (hold metadata.json).", show_default=False
        ),
    ],
    output_format: Annotated[
        Format,
        typer.Option("--format", "-f", help="md (a markdown table), json, or table (the terminal's)."),
    ] = Format.md,
    suite: Annotated[
        Path | None,
        typer.Option(
            "--suite",
            metavar="FILE",
            help="Suite file whose [[eval]] entries name the benchmarks and hold their reference values.",
            show_default=False,
        ),
    ] = None,
) -> None:
    from verifiers.eval.config import ConfigError, load_suite
    from verifiers.eval.report import ReportError, rows_from_runs, to_json, to_markdown

    try:
        entries = load_suite(suite) if suite is not None else []
        rows = rows_from_runs(run_dirs, entries)
    except (ConfigError, ReportError) as exc:
        fail(str(exc))
    if output_format is Format.json:
        sys.stdout.write(json.dumps(to_json(rows), indent=2, ensure_ascii=False) + "\n")
    elif output_format is Format.md:
        sys.stdout.write(to_markdown(rows))
    else:
        from verifiers.cli._display import report_table

        out = Console()
        if not out.is_terminal and "COLUMNS" not in os.environ:
            out.width = UNBOUNDED_WIDTH  # a pipe: one line per row, as vf-eval prints its tables
        out.print(report_table(rows, title=f"Report: {len(rows)} runs"))


def main(argv: list[str] | None = None) -> None:
    run_command(PROG, app, list(sys.argv[1:] if argv is None else argv))


__all__ = ["app", "main"]
