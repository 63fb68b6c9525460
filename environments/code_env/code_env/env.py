"""The code environment: one answer per problem, scored by running the problem's tests in a sandbox."""

from __future__ import annotations

import logging
from typing import Any

import verifiers as vf
from code_env.parsing import CodeParser
from code_env.scoring import CaseResult, ProblemTests, ScoreReport, ScoringLimits, score_solution
from verifiers.errors import SandboxError
from verifiers.sandbox import LazySandboxPool

log = logging.getLogger("code_env")


class CodeEnv(vf.SingleTurnEnv):
    """Single-turn: the model answers with a Python code block; the reward is 1 when every test passes.

    Sandboxes come from a warm ``SandboxPool`` started by ``setup()`` (or on first use) and closed by
    ``teardown()``. A sandbox failure is retried on a fresh sandbox ``sandbox_retries`` times, then
    recorded as an infra error (``SandboxError``): never as a score of 0.
    """

    def __init__(
        self,
        *,
        max_tests: int = 15,
        limits: ScoringLimits | None = None,
        backend: str | None = None,
        pool_size: int = 8,
        sandbox_retries: int = 2,
        tolerance: float = 1e-3,
        **kwargs: Any,
    ) -> None:
        if sandbox_retries < 0:
            raise ValueError("sandbox_retries cannot be negative")
        self.limits = limits or ScoringLimits()
        self.max_tests = max_tests
        self.sandbox_retries = sandbox_retries
        self.tolerance = tolerance
        self._sandboxes = LazySandboxPool(
            backend, size=pool_size, limits=self.limits.sandbox_limits(max_tests)
        )
        super().__init__(parser=CodeParser(), rubric=vf.Rubric([self.passed]), **kwargs)

    # --- sandboxes ---------------------------------------------------------------------------------
    async def setup(self) -> None:
        await super().setup()
        await self._sandboxes.get()

    async def teardown(self) -> None:
        try:
            await self._sandboxes.close()
        finally:
            await super().teardown()

    async def run_tests(self, code: str, tests: ProblemTests) -> tuple[ScoreReport, str]:
        """Score ``code`` on a pooled sandbox, retrying sandbox failures on fresh ones.

        Returns the report and the name of the backend that ran it.
        """
        pool = await self._sandboxes.get()
        error: SandboxError | None = None
        for attempt in range(self.sandbox_retries + 1):
            sandbox = await pool.acquire()
            failed = False
            try:
                report = await score_solution(
                    code, tests, sandbox, limits=self.limits, tolerance=self.tolerance
                )
                return report, sandbox.backend
            except SandboxError as exc:
                error, failed = exc, True
                log.warning("code-env: sandbox failure (attempt %d): %s", attempt + 1, exc)
            finally:
                # A sandbox that failed us is not trusted again, even if it still answers: the pool
                # replaces it in the background.
                pool.release(sandbox, discard=failed)
        raise SandboxError(
            f"scoring failed on {self.sandbox_retries + 1} sandbox(es); last error: {error}"
        ) from error

    # --- reward ------------------------------------------------------------------------------------
    async def passed(self, completion: vf.Messages, info: dict[str, Any], state: vf.State) -> vf.Score:
        """1 when the last code block passes every test, else 0; with ``pass_rate``, ``num_tests``,
        ``timeouts`` and ``has_code`` metrics."""
        tests = ProblemTests.model_validate(info["tests"])
        code = self.parser.parse_answer(completion)
        if code is None:  # nothing to run: the sandbox is not touched
            missing = CaseResult(status="error", detail="no Python code block in the answer")
            report = ScoreReport(cases=[missing.model_copy() for _ in tests.inputs])
        else:
            report, state["sandbox_backend"] = await self.run_tests(code, tests)
        state["test_results"] = [c.model_dump() for c in report.cases]
        return vf.Score(
            1.0 if report.passed else 0.0, {**report.metrics(), "has_code": float(code is not None)}
        )

    def result_record(self, state: vf.State) -> dict[str, Any]:
        record = super().result_record(state)
        record["sandbox_backend"] = state.get("sandbox_backend")
        return record
