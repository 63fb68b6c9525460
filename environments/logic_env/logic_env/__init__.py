"""logic-env: procedural logic puzzles (reasoning-gym style), SynLogic data and an optional
reasoning-gym backend, scored by constraint-checking verifiers.

Importing this package does no work; ``load_environment`` validates its arguments and returns an
environment whose rows are generated or loaded on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from logic_env.env import LogicEnv

__all__ = ["load_environment"]


def load_environment(
    tasks: Sequence[str] | None = None,
    num_examples: int = 200,
    seed: int = 0,
    difficulty: Literal["easy", "medium", "hard", "mixed"] = "medium",
    source: str = "generated",
    task_config: Mapping[str, Mapping[str, Any]] | None = None,
    rg_tasks: Sequence[str] | None = None,
    rg_config: Mapping[str, Mapping[str, Any]] | None = None,
    split: str = "train",
    system_prompt: str | None = None,
) -> LogicEnv:
    """A single-turn logic environment.

    Args:
        tasks: task families to mix (default: all). For SynLogic data, a filter on task names.
        num_examples: rows to generate (round-robin over ``tasks``); for SynLogic, the first N supported
            rows (-1 for all).
        seed: generator seed; row ``i`` is a pure function of (tasks, seed, difficulty, i).
        difficulty: preset of every family's config; ``mixed`` cycles easy/medium/hard.
        source: ``generated``, ``synlogic`` (the ``logic`` subset of PrimeIntellect/INTELLECT-3-RL, needs
            ``datasets``), ``reasoning_gym`` (needs ``reasoning-gym``), or a local SynLogic-format
            ``.jsonl``/``.json``/``.parquet`` file.
        task_config: per-family config overrides, e.g. ``{"sudoku": {"size": 9}}`` (generated data).
        rg_tasks: reasoning-gym dataset names (``source="reasoning_gym"``).
        rg_config: per-dataset reasoning-gym config overrides.
        split: dataset split for hub data.
        system_prompt: optional system message.
    """
    from logic_env.env import build_environment

    return build_environment(
        tasks=tasks,
        num_examples=num_examples,
        seed=seed,
        difficulty=difficulty,
        source=source,
        task_config=task_config,
        rg_tasks=rg_tasks,
        rg_config=rg_config,
        split=split,
        system_prompt=system_prompt,
    )
