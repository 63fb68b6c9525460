"""Multiple-choice options: letters, and a seeded shuffle that a re-run and a re-score reproduce exactly.

``choice_order(key, seed, rollout_index, n)`` is the order the ``n`` options are shown in, a function of
nothing else: each option's rank is the sha256 of ``(key, seed, rollout_index, option)``, so the order is
the same in every process, Python version and machine (``random``'s algorithms are not promised to be).
An environment records the order (and the correct letter it gives) in the rollout's ``info``, where
``vf-eval --rescore`` reads it back instead of shuffling again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Option letters, up to MMLU-Pro's ten.
LETTERS = "ABCDEFGHIJ"


def letters_for(n: int) -> str:
    """The letters of ``n`` options (``A``… ), at most ``len(LETTERS)``."""
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"a question needs 1 to {len(LETTERS)} options, not {n}")
    return LETTERS[:n]


def choice_order(key: str | int, seed: int, rollout_index: int, n: int) -> list[int]:
    """A permutation of ``range(n)``: the option shown first, second, … for this question (``key``, e.g.
    its record id), ``seed`` and rollout."""

    def rank(option: int) -> bytes:
        return hashlib.sha256(f"{key}\x00{seed}\x00{rollout_index}\x00{option}".encode()).digest()

    return sorted(range(n), key=rank)


@dataclass(frozen=True, slots=True)
class ShuffledChoices:
    """Options in the order shown: ``options[i]`` is labelled ``LETTERS[i]`` and was the source's option
    ``order[i]``; ``answer`` is the letter of the correct one."""

    options: tuple[str, ...]
    order: tuple[int, ...]
    answer: str

    def info(self) -> dict[str, Any]:
        """What a rollout records so a re-score sees the letters the model saw."""
        return {"choice_order": list(self.order), "answer_letter": self.answer}


def shuffle_choices(
    options: Sequence[str], correct: int, *, key: str | int, seed: int, rollout_index: int
) -> ShuffledChoices:
    """``options`` (the correct one at index ``correct``) in the order ``choice_order`` gives."""
    letters_for(len(options))
    if not 0 <= correct < len(options):
        raise ValueError(f"correct option {correct} is not one of the {len(options)} options")
    order = choice_order(key, seed, rollout_index, len(options))
    return ShuffledChoices(
        options=tuple(options[i] for i in order), order=tuple(order), answer=LETTERS[order.index(correct)]
    )


def format_choices(options: Sequence[str], *, style: str = "{letter}) {option}") -> str:
    """One line per option, ``A) first`` … (``style`` with ``{letter}`` and ``{option}``)."""
    letters = letters_for(len(options))
    return "\n".join(style.format(letter=letters[i], option=str(o).strip()) for i, o in enumerate(options))
