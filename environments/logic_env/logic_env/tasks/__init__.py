"""The registry of task families. Modules are imported on first use, not when ``logic_env`` is."""

from __future__ import annotations

import importlib

from logic_env.tasks.base import DIFFICULTIES, Difficulty, Item, TaskSpec

#: Task name -> module (under ``logic_env.tasks``) defining ``SPEC``.
_MODULES: dict[str, str] = {
    "game_of_24": "game_of_24",
    "sudoku": "sudoku",
    "futoshiki": "futoshiki",
    "knights_knaves": "knights_knaves",
    "dyck_language": "dyck",
    "cryptarithm": "cryptarithm",
    "word_sorting": "word_sorting",
    "boolean_expressions": "boolean_expressions",
    "zebra_puzzle": "zebra",
    "maze": "maze",
    "graph_coloring": "graph_coloring",
    "n_queens": "n_queens",
}

TASK_NAMES: tuple[str, ...] = tuple(_MODULES)


def get_task(name: str) -> TaskSpec:
    """The registered family ``name``; a ``ValueError`` naming the known ones otherwise."""
    module = _MODULES.get(name)
    if module is None:
        raise ValueError(f"unknown logic task {name!r}; known tasks: {', '.join(TASK_NAMES)}")
    spec = importlib.import_module(f"logic_env.tasks.{module}").SPEC
    assert isinstance(spec, TaskSpec)
    return spec


__all__ = ["DIFFICULTIES", "TASK_NAMES", "Difficulty", "Item", "TaskSpec", "get_task"]
