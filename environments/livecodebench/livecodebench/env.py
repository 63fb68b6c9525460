"""The LiveCodeBench environment: one answer per problem, run against the problem's public and private tests
in a sandbox, reward 1 only when every test passes."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from code_env import CaseResult, PooledScorer, ProblemTests, ScoreReport, ScoringLimits, score_solution

import verifiers as vf
from livecodebench.cases import decode_private, decode_public
from livecodebench.dataset import ProblemSource, row_label
from livecodebench.grading import comparator, harness_header, problem_tests
from livecodebench.parsing import code_parser
from livecodebench.prompts import user_prompt

#: Problems whose decoded tests are kept (a group's rollouts are scored together; decoding a release-v6
#: problem's private tests takes up to a second and tens of MB).
DECODED_PROBLEMS = 16
#: Tests a sandbox is sized for (output limits of one round trip); problems with more still run.
SANDBOX_TESTS = 100


class LiveCodeBenchEnv(vf.SingleTurnEnv):
    """Single-turn code generation scored in sandboxes (see the package README for the protocol).

    The rows hold the prompt and, in ``info``, the problem's identity and the window; the tests stay in the
    source and are decoded when a rollout is scored (a problem's private tests are megabytes: results
    would otherwise carry them once per rollout). A sandbox failure is retried on a fresh sandbox
    ``sandbox_retries`` times, then recorded as an infra error (``SandboxError``), never as a score of 0.
    """

    def __init__(
        self,
        problems: ProblemSource,
        *,
        limits: ScoringLimits,
        early_exit: bool = True,
        backend: str | None = None,
        pool_size: int = 8,
        sandbox_retries: int = 2,
        **kwargs: Any,
    ) -> None:
        self.problems = problems
        self.limits = limits
        self.early_exit = early_exit
        self.header = harness_header()
        self.scorer = PooledScorer(
            backend,
            size=pool_size,
            limits=limits.sandbox_limits(SANDBOX_TESTS),
            retries=sandbox_retries,
            label="livecodebench",
        )
        self._decoded: OrderedDict[str, ProblemTests | Exception] = OrderedDict()
        self._pending: dict[str, asyncio.Future[ProblemTests | Exception]] = {}
        super().__init__(
            eval_dataset=self._rows, parser=code_parser(), rubric=vf.Rubric([self.passed]), **kwargs
        )

    # --- data --------------------------------------------------------------------------------------
    def _rows(self) -> vf.data.Rows:
        return vf.data.Rows(
            self.problems.records,
            self._to_row,
            subset=self.problems.indices,
            provenance=self.problems.record(),
        )

    def _to_row(self, record: Any, index: int) -> dict[str, Any]:
        problem = self.problems.problem(index)
        return {
            "example_id": index,
            "question": user_prompt(problem.question_content, problem.starter_code),
            "answer": "",
            "info": {
                "question_id": problem.question_id,
                "question_title": problem.question_title,
                "platform": problem.platform,
                "contest_id": problem.contest_id,
                "contest_date": problem.contest_date.isoformat(),
                "difficulty": problem.difficulty,
                "func_name": problem.func_name,
                "source": self.problems.describe(),
                "window": self.problems.window.as_info(),
            },
            "task": "livecodebench",
        }

    def _decode(self, question_id: str) -> ProblemTests:
        index, problem = self.problems.find(question_id)
        row = row_label(index, problem.question_id)
        cases = decode_public(problem.public_test_cases, row=row)
        cases += decode_private(problem.private_test_cases, row=row)
        return problem_tests(cases, problem.func_name, row=row)

    def _decode_outcome(self, question_id: str) -> ProblemTests | Exception:
        try:
            return self._decode(question_id)
        except Exception as exc:  # kept, so every rollout of a broken row gets the same error, once decoded
            return exc

    async def tests_of(self, question_id: str) -> ProblemTests:
        """The public then private tests of a problem, decoded once (in a thread) for concurrent callers,
        the last ``DECODED_PROBLEMS`` problems kept."""
        outcome = self._decoded.get(question_id)
        if outcome is None:
            loop = asyncio.get_running_loop()
            pending = self._pending.get(question_id)
            if pending is None or pending.get_loop() is not loop:  # (a run on another loop left it)
                pending = loop.run_in_executor(None, self._decode_outcome, question_id)
                self._pending[question_id] = pending
            outcome = await asyncio.shield(pending)
            self._pending.pop(question_id, None)
            self._decoded[question_id] = outcome
            while len(self._decoded) > DECODED_PROBLEMS:
                self._decoded.popitem(last=False)
        self._decoded.move_to_end(question_id)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

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
        """Every test of a problem in one sandbox round trip (retried on a fresh sandbox if one fails);
        returns the report and the backend that ran it."""
        compare = comparator(tests.fn_name)
        return await self.scorer.run(
            lambda sandbox: score_solution(
                code,
                tests,
                sandbox,
                limits=self.limits,
                compare=compare,
                header=self.header,
                stop_on_failure=self.early_exit,
            )
        )

    # --- reward ------------------------------------------------------------------------------------
    async def passed(self, completion: vf.Messages, info: dict[str, Any], state: vf.State) -> vf.Score:
        """1 when the solution passes every public and private test, else 0; with ``pass_rate`` (of all
        tests), ``num_tests``, ``tests_run``, ``timeouts``, ``runtime_errors`` and ``has_code``."""
        tests = await self.tests_of(str(info["question_id"]))
        code = self.parser.parse_answer(completion)
        if code is None:  # nothing to run: the sandbox is not touched
            missing = CaseResult(status="skipped", detail="no code block in the answer")
            report = ScoreReport(cases=[missing.model_copy() for _ in tests.inputs])
        else:
            report, state["sandbox_backend"] = await self.run_tests(code, tests)
        state["first_failure"] = _first_failure(report)
        return vf.Score(
            1.0 if report.passed else 0.0,
            {
                "pass_rate": report.pass_rate,
                "num_tests": float(report.num_tests),
                "tests_run": float(report.num_run),
                "timeouts": float(report.timeouts),
                "runtime_errors": float(report.runtime_errors),
                "has_code": float(code is not None),
            },
        )

    def result_record(self, state: vf.State) -> dict[str, Any]:
        record = super().result_record(state)
        record["sandbox_backend"] = state.get("sandbox_backend")
        record["first_failure"] = state.get("first_failure")
        return record


def _first_failure(report: ScoreReport) -> dict[str, Any] | None:
    """The first test that did not pass: its index, status and (short) error text."""
    for i, case in enumerate(report.cases):
        if not case.passed:
            detail = case.detail[-300:] if case.detail else None
            return {"test": i, "status": case.status, "detail": detail}
    return None
