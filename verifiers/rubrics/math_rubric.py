"""``MathRubric``: the final ``\\boxed{}`` answer checked against the reference with math-verify.

The verdict is exactly math-verify's ``verify(parse("\\boxed{gold}"), parse("\\boxed{answer}"))`` with
its default settings, computed in a warm pool of worker processes (``MathVerifyPool``) with a hard
per-item timeout. Importing this module imports neither math-verify nor sympy; only the workers do.

Outcomes, all recorded as metrics on every rollout (same keys each time, so averages are honest):

* ``correct`` — the reward: 1.0 when math-verify confirms the answer, else 0.0;
* ``parsed`` — an answer was found (an unclosed ``<think>`` or a missing box gives 0, with no
  verification at all);
* ``answer_too_long`` — the answer exceeded ``max_answer_chars`` and was rejected unverified (scored 0);
* ``verify_timeout`` — verification was cut short (math-verify's own 5 s limits, or the pool's hard
  ``timeout`` after which the worker is killed and replaced);
* ``verify_seconds`` — time spent verifying in a worker.

Timeout decision: with ``on_timeout="zero"`` (default) an answer that cannot be verified in time scores 0
with ``verify_timeout = 1``. In RL the policy wrote it, so it should not be rewarded, and masking it
would hide answers like ``10^{10^{10^{10}}}`` from the training signal. ``on_timeout="error"`` records a
``VerificationTimeoutError`` scoring error instead (reward ``None``), for evals that must not count a
verifier limit as a wrong answer. A worker that dies on an item is always a ``ScoringError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from verifiers.errors import ScoringError, VerificationTimeoutError
from verifiers.parsers.boxed import extract_boxed_answer
from verifiers.parsers.parser import Parser, question_text
from verifiers.parsers.think import MaybeThinkParser
from verifiers.rubrics.math_pool import MathVerifyPool, VerifyOutcome
from verifiers.rubrics.rubric import Rubric, Score
from verifiers.types import Messages

OnTimeout = Literal["zero", "error"]


class MathRubric(Rubric):
    """Rewards a final answer that math-verify proves equal to the reference answer.

    Args:
        parser: extracts the answer; default ``MaybeThinkParser(extract_boxed_answer)`` (last box after
            any closed think block). When left default, an environment may lend its own parser.
        timeout: hard limit in seconds on verifying one answer; the worker is killed past it.
        max_answer_chars: longer answers score 0 without verification (cheap rejection of junk).
        on_timeout: ``"zero"`` or ``"error"`` (see the module docstring).
        workers: worker processes (default: CPU count, at most 4). Ignored when ``pool`` is given.
        pool: share one ``MathVerifyPool`` between rubrics; the rubric then never closes it.
        weight: weight of ``correct`` in the reward.
    """

    def __init__(
        self,
        parser: Parser | None = None,
        *,
        timeout: float = 10.0,
        max_answer_chars: int = 1000,
        on_timeout: OnTimeout = "zero",
        workers: int | None = None,
        pool: MathVerifyPool | None = None,
        weight: float = 1.0,
    ) -> None:
        if on_timeout not in ("zero", "error"):
            raise ValueError(f"on_timeout must be 'zero' or 'error', not {on_timeout!r}")
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        if max_answer_chars < 1:
            raise ValueError("max_answer_chars must be at least 1")
        super().__init__(parser=parser or MaybeThinkParser(extract_boxed_answer))
        self.parser_is_default = parser is None
        self.timeout = float(timeout)
        self.max_answer_chars = max_answer_chars
        self.on_timeout: OnTimeout = on_timeout
        self.workers = workers
        self._pool = pool
        self._owns_pool = pool is None
        self.add_reward_func(self.correct, weight)

    # --- lifecycle ---------------------------------------------------------------------------------
    @property
    def pool(self) -> MathVerifyPool:
        """The verification pool, created on first use (workers start when first needed)."""
        if self._pool is None or (self._owns_pool and self._pool.closed):
            self._pool = MathVerifyPool(self.workers, timeout=self.timeout)
        return self._pool

    async def setup(self) -> None:
        """Start the workers (they warm up while the first rollouts are generated)."""
        self.pool.start()

    async def teardown(self) -> None:
        if self._owns_pool and self._pool is not None:
            pool, self._pool = self._pool, None
            await asyncio.to_thread(pool.close)  # joins worker threads: keep the event loop free

    def close(self) -> None:
        """Stop the workers this rubric owns (a later use starts a fresh pool)."""
        if self._owns_pool and self._pool is not None:
            self._pool.close()
            self._pool = None

    # --- scoring -----------------------------------------------------------------------------------
    async def verify(self, answer: str, response: str) -> VerifyOutcome:
        """math-verify's verdict on ``response`` against the reference ``answer`` (raw strings)."""
        return await self.pool.verify(answer, response, item_timeout=self.timeout)

    def extract(self, completion: Messages | str) -> str | None:
        """The answer to check, or ``None`` when the completion has none."""
        return self.parser.parse_answer(completion)

    async def correct(
        self, prompt: Messages | str, completion: Messages | str, answer: str, info: dict[str, Any]
    ) -> Score:
        return await self.score_answer(
            response=self.extract(completion),
            answer=answer,
            question=question_text(prompt, info),
            info=info or {},
        )

    def _metrics(self) -> dict[str, float]:
        return {"parsed": 0.0, "answer_too_long": 0.0, "verify_timeout": 0.0, "verify_seconds": 0.0}

    async def score_answer(
        self, *, response: str | None, answer: str, question: str, info: Mapping[str, Any]
    ) -> Score:
        """Score one extracted answer. Subclasses override this to add checks (a judge, units, ...)."""
        metrics = self._metrics()
        if response is None:
            return Score(0.0, metrics)
        metrics["parsed"] = 1.0
        if len(response) > self.max_answer_chars:
            metrics["answer_too_long"] = 1.0
            return Score(0.0, metrics)
        if not str(answer).strip():
            raise ScoringError("the reference answer is empty: nothing to verify against")
        outcome = await self.verify(str(answer), response)
        return self.apply_outcome(outcome, metrics)

    def apply_outcome(self, outcome: VerifyOutcome, metrics: dict[str, float]) -> Score:
        """Turn a verification outcome into a score (raising for crashes and, if asked, timeouts)."""
        metrics["verify_seconds"] = outcome.seconds
        if outcome.status == "crashed":
            raise ScoringError("the math-verify worker died while verifying this answer")
        if outcome.status == "error":
            raise ScoringError("math-verify raised an error while verifying this answer")
        if outcome.timed_out:
            if self.on_timeout == "error":
                how = "the hard timeout" if outcome.killed else "math-verify's own timeout"
                raise VerificationTimeoutError(
                    f"verification exceeded {how} (timeout={self.timeout:g}s); answer rejected unverified"
                )
            metrics["verify_timeout"] = 1.0
        return Score(1.0 if outcome.correct else 0.0, metrics)
