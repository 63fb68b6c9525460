"""Where tasks come from: ``bundled`` (the project-written tasks under ``swe_env/tasks/``), ``generated``
(seeded mutations of repositories whose tests pass, ``swe_env.generate``), ``r2e`` and ``swebench`` (rows
of those datasets, ``swe_env.adapters``). Above all three, so that each may use ``swe_env.task``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from swe_env.adapters import r2e_row_to_task, read_rows, swebench_row_to_task
from swe_env.generate import generate_tasks
from swe_env.task import SweTask, load_bundled

SOURCES = ("bundled", "generated", "r2e", "swebench")


def load_tasks(
    source: str = "bundled",
    *,
    repos: Sequence[str | Path] | None = None,
    num_tasks: int | None = None,
    seed: int = 0,
    rows: Iterable[Mapping[str, Any]] | str | Path | None = None,
) -> list[SweTask]:
    """The tasks of one source, in a stable order.

    ``bundled``: the project-written tasks. ``generated``: ``num_tasks`` seeded mutations of ``repos``
    (directories of Python projects whose tests pass; default: the bundled tasks' fixed repositories).
    ``r2e`` / ``swebench``: ``rows`` of those datasets (mappings, e.g. from ``datasets``, or the path of a
    JSON / JSON Lines file of them); a row needing a container image raises
    ``swe_env.adapters.UnsupportedRowError`` naming it.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown task source {source!r}; choose one of {', '.join(SOURCES)}")
    if source != "generated" and repos is not None:
        raise ValueError("`repos` is only for source='generated'")
    if source not in ("r2e", "swebench") and rows is not None:
        raise ValueError("`rows` is only for source='r2e' or 'swebench'")
    tasks: list[SweTask]
    if source == "bundled":
        tasks = load_bundled()
    elif source == "generated":
        tasks = generate_tasks(repos=repos, num_tasks=num_tasks, seed=seed)
    else:
        if rows is None:
            raise ValueError(
                f"source={source!r} needs `rows` (the dataset's rows); nothing is downloaded at run time"
            )
        if isinstance(rows, str | Path):
            rows = read_rows(rows)
        elif isinstance(rows, Mapping):
            raise ValueError("`rows` is a list of dataset rows (or the path of a file of them), not one row")
        convert = r2e_row_to_task if source == "r2e" else swebench_row_to_task
        tasks = [convert(r) for r in rows]
    if num_tasks is not None:
        if num_tasks < 0:
            raise ValueError("num_tasks must be >= 0")
        tasks = tasks[:num_tasks]
    return tasks
