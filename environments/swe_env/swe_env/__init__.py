"""swe-env: fix a repository from an issue text with tools in a sandbox; the reward is whether its hidden
tests then end exactly as expected.

Importing this package does no work; ``load_environment`` loads the tasks and returns an environment
whose sandboxes start with the run. See README.md for the scaffolds, graders, task sources and generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from swe_env.scaffolds.base import SweEnv

__all__ = ["load_environment"]


def load_environment(
    scaffold: Literal["r2e", "mini"] = "r2e",
    grader: Literal["r2e", "swebench"] = "r2e",
    source: str = "bundled",
    *,
    repos: Sequence[str | Path] | None = None,
    rows: Sequence[dict[str, Any]] | str | Path | None = None,
    num_tasks: int | None = None,
    seed: int = 0,
    max_turns: int = 200,
    command_timeout: float = 60.0,
    max_timeouts: int = 3,
    wall_clock: float | None = 1800.0,
    grade_timeout: float = 120.0,
    backend: str | None = None,
    pool_size: int = 8,
    sandbox_limits: Mapping[str, Any] | None = None,
    system_prompt: str | None = None,
) -> SweEnv:
    """The SWE environment.

    Args:
        scaffold: ``r2e`` (R2E-Gym's file_editor/search/execute_bash/finish tools) or ``mini``
            (mini-swe-agent: one ```bash block per reply).
        grader: ``r2e`` (reward 1 only if every expected test status is met) or ``swebench``
            (FAIL_TO_PASS all pass and PASS_TO_PASS all still pass).
        source: ``bundled`` (the project-written tasks), ``generated`` (seeded mutations of ``repos``),
            ``r2e`` or ``swebench`` (``rows`` of those datasets; rows needing a container image fail).
        repos: Repositories to mutate for ``source="generated"`` (default: the bundled ones).
        rows: Dataset rows for ``source="r2e"``/``"swebench"``, or the path of a JSON / JSON Lines file
            of them (nothing is downloaded).
        num_tasks: At most this many tasks (all by default).
        seed: Seed of the generator.
        max_turns: Model calls per rollout (R2E-Gym's and INTELLECT-3's 200 by default).
        command_timeout: Seconds one command may run before it is killed.
        max_timeouts: The rollout ends (and is graded) after this many command timeouts.
        wall_clock: Seconds the agent loop may take in all (then it ends and is graded); None: no limit.
        grade_timeout: Seconds the hidden tests may run (past it: an infra error, not a 0).
        backend: Sandbox backend (``runsc``, ``bwrap``, ``local``); default: the best secure one.
        pool_size: Sandboxes kept warm (rollouts beyond that wait for one).
        sandbox_limits: Overrides of swe-env's sandbox limits (``SandboxLimits`` fields, e.g.
            ``{"memory_mb": 4096, "max_procs": 256}``; see ``swe_env.limits``), for the agent's commands
            and the grading run alike; ``python -m swe_env.validate --sandbox-limits`` takes the same.
        system_prompt: Replaces the scaffold's system prompt.
    """
    from swe_env.env import build_environment

    return build_environment(
        scaffold=scaffold,
        grader=grader,
        source=source,
        repos=repos,
        rows=rows,
        num_tasks=num_tasks,
        seed=seed,
        max_turns=max_turns,
        command_timeout=command_timeout,
        max_timeouts=max_timeouts,
        wall_clock=wall_clock,
        grade_timeout=grade_timeout,
        backend=backend,
        pool_size=pool_size,
        sandbox_limits=sandbox_limits,
        system_prompt=system_prompt,
    )
