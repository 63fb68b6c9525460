"""``ScienceRubric``: the SDK's math rubric stack, routed by the kind of answer.

* ``numeric`` — units are stripped from both the reference and the response, then math-verify (and the
  judge, when configured, if math-verify does not confirm);
* ``symbolic`` — math-verify on the expressions as written (then the judge);
* ``word`` — the judge when configured, else a normalised exact match against the reference and any
  ``info["aliases"]``;
* ``choice`` — the option letters must match (``B``, ``(B)``, ``\\text{B}``, ``B) argon``).

The kind is ``info["answer_type"]`` when the row has one, else ``classify(answer)``. Every rollout gets
the same metric keys: ``HybridMathRubric``'s plus ``exact_match`` (word and letter answers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import verifiers as vf
from science_env.answers import AnswerKind, choice_letter, classify, normalize_words, strip_units

KINDS: tuple[AnswerKind, ...] = ("numeric", "symbolic", "word", "choice")


def answer_kind(answer: str, info: Mapping[str, Any]) -> AnswerKind:
    kind = info.get("answer_type")
    if kind in KINDS:
        return kind  # type: ignore[return-value]
    return classify(answer)


class ScienceRubric(vf.HybridMathRubric):
    """Reward ``correct``: see the module docstring."""

    def _metrics(self) -> dict[str, float]:
        return {**super()._metrics(), "exact_match": 0.0}

    async def score_answer(
        self, *, response: str | None, answer: str, question: str, info: Mapping[str, Any]
    ) -> vf.Score:
        kind = answer_kind(answer, info)
        if kind in ("numeric", "symbolic"):
            return await self._score_math(kind, response=response, answer=answer, question=question)
        metrics = self._metrics()
        if response is None:
            return vf.Score(0.0, metrics)
        metrics["parsed"] = 1.0
        if len(response) > self.max_answer_chars:
            metrics["answer_too_long"] = 1.0
            return vf.Score(0.0, metrics)
        if kind == "choice":
            want = choice_letter(answer)
            match = want is not None and choice_letter(response) == want
            metrics["exact_match"] = float(match)
            return vf.Score(float(match), metrics)
        accepted = {normalize_words(a) for a in [answer, *info.get("aliases", [])]}
        match = normalize_words(response) in accepted
        metrics["exact_match"] = float(match)
        score = vf.Score(float(match), metrics)
        if match:
            return score
        return await self.ask_judge(score, response=response, answer=answer, question=question)

    async def _score_math(
        self, kind: AnswerKind, *, response: str | None, answer: str, question: str
    ) -> vf.Score:
        # Inline-math dollars are markup, not part of the answer.
        gold, pred = answer.replace("$", ""), None if response is None else response.replace("$", "")
        if kind == "numeric":
            gold = strip_units(gold)
            pred = None if pred is None else strip_units(pred)
        # math-verify alone on the stripped forms (MathRubric's scoring), then the judge on the originals.
        score = await vf.MathRubric.score_answer(self, response=pred, answer=gold, question=question, info={})
        return await self.judge_unconfirmed(score, response=response, answer=answer, question=question)
