"""``MultipleChoiceRubric``: the option letter a model committed to, checked against the rollout's answer.

The letter is read by ``verifiers.parsers.extract_choice_letter`` from the answer text after any closed
``<think>`` block (an unclosed one, cut-off reasoning, gives no letter). The rollout's ``answer`` is the
correct letter *as the model saw it*: an environment that shuffles options sets it per rollout and keeps the
order in ``info`` (``verifiers.data.choices``), so a re-score compares against the same letters.

Metrics on every rollout: ``correct`` (the reward), ``unparsed`` (no letter found; its mean is the run's
unparsed rate) and ``truncated`` (cut off at the token limit or inside ``<think>``).
"""

from __future__ import annotations

from typing import Any

from verifiers.errors import ScoringError
from verifiers.parsers.choice import LETTERS, extract_choice_letter
from verifiers.parsers.parser import Parser
from verifiers.parsers.think import MaybeThinkParser
from verifiers.rubrics.metrics import truncated
from verifiers.rubrics.rubric import Rubric, Score
from verifiers.types import Messages


class MultipleChoiceRubric(Rubric):
    """Reward ``correct``: 1.0 when the committed letter is the rollout's ``answer`` (see the module docstring).

    The valid letters are the question's, ``info["letters"]`` (e.g. ``"ABCD"``), else all of A–J: a letter
    beyond the question's options is never read as an answer.
    """

    def __init__(self, parser: Parser | None = None, *, weight: float = 1.0) -> None:
        super().__init__(parser=parser or MaybeThinkParser())
        self.parser_is_default = parser is None
        self.add_reward_func(self.correct, weight)
        self.add_metric(truncated)

    def letter(self, completion: Messages | str, letters: str = LETTERS) -> str | None:
        """The letter the completion commits to, or ``None``."""
        text = self.parser.parse_answer(completion)
        return None if text is None else extract_choice_letter(text, letters)

    def correct(self, completion: Messages | str, answer: str, info: dict[str, Any]) -> Score:
        letters = str((info or {}).get("letters") or LETTERS)
        gold = str(answer).strip()
        if len(gold) != 1 or gold not in letters:
            raise ScoringError(f"the reference answer {gold!r} is not one of the options {letters}")
        chosen = self.letter(completion, letters)
        return Score(1.0 if chosen == gold else 0.0, {"unparsed": 1.0 if chosen is None else 0.0})
