"""What both scaffolds share: a warm sandbox per rollout holding the task's repository, per-command
timeouts with a counter, the wall clock, the metrics, and grading once the agent stops.

Lifecycle of one rollout: a sandbox is leased from the warm pool (never started on the critical path),
the task's repository is uploaded with its git history (``prepare_repo``), the scaffold's loop runs until
the agent submits or a limit ends it (``max_turns``, ``max_timeouts`` command timeouts, ``wall_clock``
seconds), then ``grade()`` restores the hidden tests, runs them and stores the outcome; the rubric turns
it into the reward. A grading run that says nothing about the patch is an infra error on the rollout
(``GradingInfraError``), never a 0.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import verifiers as vf
from swe_env.grading import Grader, grade
from swe_env.limits import sandbox_limits
from swe_env.repo import RUNNER_DIR, prepare_repo
from swe_env.task import SweTask, task_to_row
from verifiers.errors import EnvError, InfraError, RewardFunctionError
from verifiers.sandbox import Sandbox, SandboxLimits

#: Where the repository lives, relative to the sandbox's workspace.
REPO = "repo"
SANDBOX = "sandbox"
GRADE = "swe_grade"
#: Per-rollout counters, zero at the start so run averages count every rollout.
COUNTERS = ("turns", "format_errors", "timeouts", "edit_failures", "commands")


class GradingInfraError(InfraError):
    """The hidden tests could not say anything about the patch (runner missing, untouched suite broken,
    the whole run timed out)."""


def bump(state: vf.State, key: str, by: float = 1.0) -> None:
    metrics = state.setdefault("metrics", {})
    metrics[key] = metrics.get(key, 0.0) + by


class SweEnv(vf.SandboxEnv):
    """Base of the scaffolds: one task per row, graded in the rollout's own sandbox.

    Args:
        tasks: The tasks (rows are ``task_to_row`` of each, in order).
        grader: ``r2e`` (every expected status) or ``swebench`` (FAIL_TO_PASS and PASS_TO_PASS).
        max_turns: Model calls per rollout.
        command_timeout: Seconds one command may run (then it is killed and counted).
        max_timeouts: The rollout ends (and is graded) after this many command timeouts.
        wall_clock: Seconds the agent loop may take in all (then it ends and is graded); None: no limit.
        grade_timeout: Seconds the hidden test run may take (past it: an infra error).
        limits: The sandbox limits (default: ``swe_env.limits.sandbox_limits(command_timeout)``, which
            validation and the generator use too).
    """

    scaffold: ClassVar[str] = ""

    def __init__(
        self,
        *,
        tasks: Sequence[SweTask],
        grader: Grader = "r2e",
        max_turns: int = 200,
        command_timeout: float = 60.0,
        max_timeouts: int = 3,
        wall_clock: float | None = None,
        grade_timeout: float = 120.0,
        backend: str | None = None,
        pool_size: int = 8,
        limits: SandboxLimits | None = None,
        **kwargs: Any,
    ) -> None:
        if not tasks:
            raise ValueError("swe-env needs at least one task")
        if max_timeouts < 1:
            raise ValueError("max_timeouts must be at least 1")
        if wall_clock is not None and wall_clock <= 0:
            raise ValueError("wall_clock must be a positive number of seconds (or None)")
        if grade_timeout <= 0:
            raise ValueError("grade_timeout must be positive")
        self.tasks: dict[str, SweTask] = {t.task_id: t for t in tasks}
        if len(self.tasks) != len(tasks):
            raise ValueError("task ids must be unique")
        self.grader: Grader = grader
        self.max_timeouts = max_timeouts
        self.wall_clock = wall_clock
        self.grade_timeout = grade_timeout
        rows = [task_to_row(t, i) for i, t in enumerate(tasks)]
        # the same limits as validation and the generator (swe_env.limits)
        limits = limits or sandbox_limits(command_timeout)
        super().__init__(
            eval_dataset=rows,
            backend=backend,
            pool_size=pool_size,
            limits=limits,
            command_timeout=command_timeout,
            max_tool_output_chars=None,  # the scaffolds clip their own observations
            max_turns=max_turns,
            rubric=vf.Rubric([self.solved]),
            task="swe",
            **kwargs,
        )
        # SandboxEnv's generic bash/python tools are not part of either scaffold.
        self.tools.clear()

    # --- per rollout -------------------------------------------------------------------------------
    def task_of(self, state: vf.State) -> SweTask:
        task_id = state["info"]["task_id"]
        try:
            return self.tasks[task_id]
        except KeyError:
            raise EnvError(f"row names task {task_id!r}, which this environment does not have") from None

    def repo_root(self, state: vf.State) -> str:
        """Absolute path of the repository as commands see it."""
        sandbox: Sandbox = state[SANDBOX]
        return f"{sandbox.workdir.rstrip('/')}/{REPO}"

    def instance_prompt(self, task: SweTask, root: str) -> str:
        """The first user message (the scaffold's template around the issue text)."""
        return task.problem_statement

    async def setup_state(self, state: vf.State) -> None:
        await super().setup_state(state)  # leases the sandbox
        for key in COUNTERS:
            state["metrics"].setdefault(key, 0.0)
        state["swe_t0"] = time.monotonic()
        sandbox: Sandbox = state[SANDBOX]
        task = self.task_of(state)
        await prepare_repo(sandbox, task, REPO)
        # The agent's own `python -m pytest` finds the bundled runner through the user site directory,
        # so no PYTHONPATH is needed (which would keep `python3 -c` off the sandbox's fast path).
        v = sys.version_info
        await sandbox.write_file(
            f".local/lib/python{v.major}.{v.minor}/site-packages/swe_runner.pth",
            f"{sandbox.workdir.rstrip('/')}/{RUNNER_DIR}\n",
        )
        prompt = state["prompt"]
        if prompt and prompt[-1].get("role") == "user":
            prompt[-1]["content"] = self.instance_prompt(task, self.repo_root(state))

    @vf.stop
    def out_of_time(self, state: vf.State) -> bool:
        return self.wall_clock is not None and time.monotonic() - state["swe_t0"] > self.wall_clock

    def steps_remaining(self, state: vf.State) -> int:
        return self.max_turns - len(state["turns"])

    def count_timeout(self, state: vf.State) -> None:
        """One more command ran out of time; the ``max_timeouts``-th ends the rollout."""
        bump(state, "timeouts")
        if state["metrics"]["timeouts"] >= self.max_timeouts:
            state.stop("max_timeouts")

    def update_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: vf.Messages, state: vf.State
    ) -> dict[str, Any]:
        return {**tool_args, "state": state}

    async def cleanup_state(self, state: vf.State) -> None:
        try:
            state["metrics"]["turns"] = float(len(state["turns"]))
            # Graded only when the loop ended on its own (not on an error, nor when cancelled).
            if state.get("error") is None and state.get("stop_condition") and SANDBOX in state:
                await self.grade_state(state)
        finally:
            await super().cleanup_state(state)

    async def grade_state(self, state: vf.State) -> None:
        result = await grade(
            state[SANDBOX], self.task_of(state), grader=self.grader, workdir=REPO, timeout=self.grade_timeout
        )
        state[GRADE] = {
            "reward": result.reward,
            "metrics": dict(result.metrics),
            "statuses": dict(result.statuses),
            "exit_code": result.exit_code,
            "log_tail": result.log[-4000:],
            "infra_error": result.infra_error,
        }
        if result.infra_error is not None:
            state["error"] = GradingInfraError(result.infra_error).to_record()

    # --- reward ------------------------------------------------------------------------------------
    async def solved(self, state: vf.State) -> vf.Score:
        """1 when the hidden tests end as the task expects (under ``grader``), else 0."""
        graded: Mapping[str, Any] | None = state.get(GRADE)
        if graded is None:
            raise RewardFunctionError("the rollout was never graded")
        return vf.Score(float(graded["reward"]), {k: float(v) for k, v in graded["metrics"].items()})

    def result_record(self, state: vf.State) -> dict[str, Any]:
        record = super().result_record(state)
        graded = state.get(GRADE)
        record["grading"] = (
            None
            if graded is None
            else {k: graded[k] for k in ("statuses", "exit_code", "log_tail", "infra_error")}
        )
        record["scaffold"] = self.scaffold
        return record
