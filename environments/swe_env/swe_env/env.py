"""``load_environment``: tasks from a source, a scaffold, a grader, and the limits of a rollout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from swe_env.grading import GRADERS, Grader
from swe_env.limits import sandbox_limits as make_limits
from swe_env.scaffolds import SCAFFOLDS
from swe_env.scaffolds.base import SweEnv
from swe_env.sources import SOURCES, load_tasks


def build_environment(
    *,
    scaffold: str,
    grader: str,
    source: str,
    repos: Sequence[str | Path] | None,
    rows: Sequence[dict[str, Any]] | str | Path | None,
    num_tasks: int | None,
    seed: int,
    max_turns: int,
    command_timeout: float,
    max_timeouts: int,
    wall_clock: float | None,
    grade_timeout: float,
    backend: str | None,
    pool_size: int,
    sandbox_limits: Mapping[str, Any] | None,
    system_prompt: str | None,
) -> SweEnv:
    if scaffold not in SCAFFOLDS:
        raise ValueError(f"unknown scaffold {scaffold!r}; choose one of {', '.join(SCAFFOLDS)}")
    if grader not in GRADERS:
        raise ValueError(f"unknown grader {grader!r}; choose one of {', '.join(GRADERS)}")
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")
    if command_timeout <= 0:
        raise ValueError("command_timeout must be positive")
    if pool_size < 1:
        raise ValueError("pool_size must be at least 1")
    if sandbox_limits is not None and not isinstance(sandbox_limits, Mapping):
        raise ValueError('sandbox_limits must be an object of SandboxLimits fields, e.g. {"memory_mb": 4096}')
    limits = make_limits(command_timeout, sandbox_limits)
    tasks = load_tasks(source, repos=repos, num_tasks=num_tasks, seed=seed, rows=rows)
    if not tasks:
        raise ValueError(f"source {source!r} gave no tasks")
    checked: Grader = "r2e" if grader == "r2e" else "swebench"
    cls: type[SweEnv]
    if scaffold == "r2e":
        from swe_env.scaffolds.r2e import R2EEnv

        cls = R2EEnv
    else:
        from swe_env.scaffolds.mini import MiniEnv

        cls = MiniEnv
    extra: dict[str, Any] = {} if system_prompt is None else {"system_prompt": system_prompt}
    return cls(
        tasks=tasks,
        grader=checked,
        max_turns=max_turns,
        command_timeout=command_timeout,
        max_timeouts=max_timeouts,
        wall_clock=wall_clock,
        grade_timeout=grade_timeout,
        backend=backend,
        pool_size=pool_size,
        limits=limits,
        **extra,
    )
