"""``HybridMathRubric``: math-verify first, an LLM judge only when math-verify does not confirm.

The reward ``correct`` is math-verify OR judge. Both outcomes are kept as metrics on every rollout:
``math_verify_correct``, ``judge_called`` and ``judge_correct`` (0 when the judge was not asked), next
to ``MathRubric``'s ``parsed``, ``answer_too_long``, ``verify_timeout`` and ``verify_seconds``.

The judge is asked only about an extracted answer (no answer or an overlong one scores 0 without it);
an unreachable judge is an infra error on the rollout, as in ``JudgeRubric``. Without a judge this is
exactly ``MathRubric``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers.parsers.parser import Parser
from verifiers.rubrics.judge_rubric import JudgeRubric
from verifiers.rubrics.math_pool import MathVerifyPool
from verifiers.rubrics.math_rubric import MathRubric, OnTimeout
from verifiers.rubrics.rubric import Score


class HybridMathRubric(MathRubric):
    """``MathRubric`` with an optional ``JudgeRubric`` as fallback (see the module docstring).

    ``judge`` is used only through ``judge.judge(question=..., answer=..., response=...)``; its own
    parser and reward function are not involved.
    """

    def __init__(
        self,
        parser: Parser | None = None,
        *,
        judge: JudgeRubric | None = None,
        timeout: float = 10.0,
        max_answer_chars: int = 1000,
        on_timeout: OnTimeout = "zero",
        workers: int | None = None,
        pool: MathVerifyPool | None = None,
        weight: float = 1.0,
    ) -> None:
        super().__init__(
            parser,
            timeout=timeout,
            max_answer_chars=max_answer_chars,
            on_timeout=on_timeout,
            workers=workers,
            pool=pool,
            weight=weight,
        )
        self.judge = judge

    async def setup(self) -> None:
        await super().setup()
        if self.judge is not None:
            await self.judge.setup()

    async def teardown(self) -> None:
        try:
            await super().teardown()
        finally:
            if self.judge is not None:
                await self.judge.teardown()

    def _metrics(self) -> dict[str, float]:
        return {**super()._metrics(), "math_verify_correct": 0.0, "judge_called": 0.0, "judge_correct": 0.0}

    async def score_answer(
        self, *, response: str | None, answer: str, question: str, info: Mapping[str, Any]
    ) -> Score:
        score = await super().score_answer(response=response, answer=answer, question=question, info=info)
        return await self.judge_unconfirmed(score, response=response, answer=answer, question=question)

    async def judge_unconfirmed(
        self, score: Score, *, response: str | None, answer: str, question: str
    ) -> Score:
        """Record math-verify's verdict ``score`` and, when it did not confirm an extracted answer of
        acceptable length, fold in the judge's (``response`` and ``answer`` as the judge should see them)."""
        score.metrics["math_verify_correct"] = score.value
        if score.value >= 1.0 or response is None or score.metrics.get("answer_too_long"):
            return score
        return await self.ask_judge(score, response=response, answer=answer, question=question)

    async def ask_judge(self, score: Score, *, response: str, answer: str, question: str) -> Score:
        """Fold the judge's verdict into ``score`` (unchanged when no judge is configured)."""
        if self.judge is None:
            return score
        verdict = await self.judge.judge(question=question, answer=str(answer), response=response)
        score.metrics["judge_called"] = 1.0
        score.metrics["judge_correct"] = 1.0 if verdict.correct else 0.0
        return Score(1.0 if verdict.correct else score.value, score.metrics)


def math_or_hybrid_rubric(
    *,
    judge: JudgeRubric | None = None,
    timeout: float = 10.0,
    max_answer_chars: int = 1000,
    workers: int | None = None,
) -> MathRubric:
    """``MathRubric`` with these options, or ``HybridMathRubric`` when ``judge`` is given (an environment's
    ``judge_*`` arguments made into a judge by ``judge_from_args``)."""
    if judge is None:
        return MathRubric(timeout=timeout, max_answer_chars=max_answer_chars, workers=workers)
    return HybridMathRubric(judge=judge, timeout=timeout, max_answer_chars=max_answer_chars, workers=workers)
