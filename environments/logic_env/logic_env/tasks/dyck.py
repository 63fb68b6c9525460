"""Dyck-language completion: close every open bracket of a prefix, in the right order, with the
shortest possible continuation.

The verifier accepts either the continuation alone (only closing brackets) or the whole sequence
(prefix followed by the continuation), and checks that the result is balanced; with only closing
brackets allowed, the balanced completion is unique.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
CLOSERS = {v: k for k, v in PAIRS.items()}


@dataclass(frozen=True)
class Config:
    num_types: int = 3
    #: Length of the shown prefix (in brackets).
    prefix_length: int = 16
    #: How many brackets at least must still be closed.
    min_open: int = 3
    max_depth: int = 8

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_types=2, prefix_length=8, min_open=2, max_depth=4),
            "medium": cls(num_types=3, prefix_length=18, min_open=3, max_depth=7),
            "hard": cls(num_types=4, prefix_length=36, min_open=5, max_depth=12),
        }[difficulty]

    def validate(self) -> None:
        if not 1 <= self.num_types <= 4:
            raise ValueError("num_types must be between 1 and 4")
        if not 1 <= self.min_open <= self.max_depth or self.prefix_length < self.min_open:
            raise ValueError("need 1 <= min_open <= max_depth and min_open <= prefix_length")


def generate(rng: random.Random, cfg: Config) -> Item:
    openers = list(PAIRS)[: cfg.num_types]
    for _ in range(10_000):
        stack: list[str] = []
        prefix: list[str] = []
        for i in range(cfg.prefix_length):
            remaining = cfg.prefix_length - i
            must_open = len(stack) + remaining <= cfg.min_open  # leave enough open at the end
            can_close = bool(stack) and not must_open
            if len(stack) < cfg.max_depth and (not can_close or rng.random() < 0.55):
                ch = rng.choice(openers)
                stack.append(ch)
                prefix.append(ch)
            else:
                prefix.append(PAIRS[stack.pop()])
        if len(stack) >= cfg.min_open:
            break
    completion = [PAIRS[ch] for ch in reversed(stack)]
    shown = " ".join(prefix)
    answer = " ".join(completion)
    example = "] )" if answer != "] )" else ") ]"  # never this item's own answer
    question = (
        "Complete the following bracket sequence so that every bracket is closed in the right order, "
        f"adding as few brackets as possible (only closing brackets):\n\n{shown}"
        + instruction(
            f"Write only the brackets you add, separated by spaces, e.g. <answer>{example}</answer>. "
            "(Writing the whole completed sequence is also accepted.)"
        )
    )
    info: dict[str, Any] = {"prefix": "".join(prefix)}
    return {"question": question, "answer": answer, "info": info}


def balanced(seq: str) -> bool:
    stack: list[str] = []
    for ch in seq:
        if ch in PAIRS:
            stack.append(ch)
        elif ch in CLOSERS:
            if not stack or stack.pop() != CLOSERS[ch]:
                return False
        else:
            return False
    return not stack


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    prefix: str = item["info"]["prefix"]
    text = bounded(answer_text, 4 * len(prefix) + 200)
    if text is None:
        return 0.0
    tokens = "".join(text.split()).strip("`'\"")
    if not tokens:
        return 0.0
    if any(ch in PAIRS for ch in tokens):  # the whole sequence was written out
        if not tokens.startswith(prefix):
            return 0.0
        tokens = tokens[len(prefix) :]
        if any(ch in PAIRS for ch in tokens):
            return 0.0
    if any(ch not in CLOSERS for ch in tokens):
        return 0.0
    return 1.0 if balanced(prefix + tokens) else 0.0


SPEC = TaskSpec(
    name="dyck_language",
    description="Close all open brackets of a multi-type bracket prefix with the shortest completion.",
    answer_format="the closing brackets to add, separated by spaces",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
)
