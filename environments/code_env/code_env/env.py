"""The code environment: one answer per problem, scored by running the problem's tests in a sandbox."""

from __future__ import annotations

from typing import Any

import verifiers as vf
from code_env.parsing import CodeParser
from code_env.pooled import PooledScorer
from code_env.scoring import CaseResult, ProblemTests, ScoreReport, ScoringLimits, score_solution


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
        self.limits = limits or ScoringLimits()
        self.max_tests = max_tests
        self.tolerance = tolerance
        self.scorer = PooledScorer(
            backend, size=pool_size, limits=self.limits.sandbox_limits(max_tests), retries=sandbox_retries
        )
        super().__init__(parser=CodeParser(), rubric=vf.Rubric([self.passed]), **kwargs)

    # --- sandboxes ---------------------------------------------------------------------------------
    async def setup(self) -> None:
        await super().setup()
        await self.scorer.start()

    async def teardown(self) -> None:
        try:
            await self.scorer.close()
        finally:
            await super().teardown()

    async def run_tests(self, code: str, tests: ProblemTests) -> tuple[ScoreReport, str]:
        """Score ``code`` on a pooled sandbox, retrying sandbox failures on fresh ones.

        Returns the report and the name of the backend that ran it.
        """
        return await self.scorer.run(
            lambda sandbox: score_solution(code, tests, sandbox, limits=self.limits, tolerance=self.tolerance)
        )

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
