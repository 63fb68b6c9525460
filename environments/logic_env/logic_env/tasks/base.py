"""The shape every task family shares: a config dataclass, a seeded generator, a verifier.

A family module defines a ``Config`` dataclass with a ``preset(difficulty)`` class method, a
``generate(rng, config) -> Item`` function, a ``score(answer_text, item) -> float`` verifier and, where
the family admits several answers, a ``solve(item, limit) -> list[str]`` helper that lists valid
answers (tests use it to check that the verifier accepts every solution, not only the stored one).

Verifiers only ever parse model text (regular expressions, ``ast`` with a node whitelist); they never
execute it, and every one bounds the length of what it reads before doing anything else.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")


class Item(TypedDict):
    """One generated puzzle: the prompt text, the stored (reference) answer and what the verifier needs."""

    question: str
    answer: str
    info: dict[str, Any]


Generator = Callable[[random.Random, Any], Item]
Scorer = Callable[[str, Mapping[str, Any]], float]
Solver = Callable[[Mapping[str, Any], int], list[str]]


@dataclass(frozen=True)
class TaskSpec:
    """A registered task family."""

    name: str
    description: str
    #: How the answer must be written, as said in every question.
    answer_format: str
    config_cls: type[Any]
    generate_fn: Generator
    score_fn: Scorer
    solve_fn: Solver | None = None
    #: Whether items may have several valid answers (the verifier must accept all of them).
    multi_solution: bool = False

    def config(self, difficulty: Difficulty = "medium", **overrides: Any) -> Any:
        """The preset for ``difficulty`` with ``overrides`` applied (unknown fields raise)."""
        base = self.config_cls.preset(difficulty)
        if overrides:
            known = {f.name for f in dataclasses.fields(base)}
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ValueError(
                    f"task {self.name!r} has no config field(s) {unknown}; fields: {sorted(known)}"
                )
            base = dataclasses.replace(base, **overrides)
        base.validate()
        return base

    def generate(self, seed: int | str, config: Any | None = None) -> Item:
        """One item, fully determined by ``seed`` and ``config``."""
        cfg = config if config is not None else self.config()
        item = self.generate_fn(random.Random(f"{self.name}:{seed}"), cfg)
        item["info"]["task"] = self.name
        return item

    def score(self, answer_text: str | None, item: Mapping[str, Any]) -> float:
        if answer_text is None:
            return 0.0
        return float(self.score_fn(answer_text, item))

    def solve(self, item: Mapping[str, Any], limit: int = 5) -> list[str]:
        """Up to ``limit`` valid answers (just the stored one for single-answer families)."""
        if self.solve_fn is None:
            return [str(item["answer"])]
        return self.solve_fn(item, limit)


# --- helpers shared by the families ----------------------------------------------------------------


def instruction(fmt: str) -> str:
    """The closing sentence of every question: where and how to write the answer."""
    return (
        "\n\nThink it through, then give only your final answer inside <answer></answer> tags. " + fmt.strip()
    )


def bounded(text: str, limit: int) -> str | None:
    """``text`` stripped, or ``None`` when it is longer than ``limit`` (hostile or rambling answers)."""
    if len(text) > limit:
        return None
    return text.strip()


_INT = re.compile(r"-?\d+")
_BRACKET_ROW = re.compile(r"[\[(]([^\[\]()]*)[\])]")
_ROW_LABEL = re.compile(r"^\s*row\s*\d+\s*[:.)-]", re.IGNORECASE)


def parse_int_grid(text: str, rows: int, cols: int, *, limit: int = 4000) -> list[list[int]] | None:
    """A ``rows`` x ``cols`` grid of integers written one row per line (``1 2 3``), as nested brackets
    (``[[1, 2], [3, 4]]`` / ``((1, 2), (3, 4))``) or as comma-separated rows (``1 2, 3 4``).
    ``None`` if no reading has the right shape."""
    body = bounded(text, limit)
    if body is None:
        return None
    candidates: list[list[str]] = []
    if body.count("[") >= 2 or body.count("(") >= 2:
        candidates.append(_BRACKET_ROW.findall(body))
    candidates.append(body.splitlines())
    candidates.append(re.split(r"[,;\n]", body))
    for lines in candidates:
        grid: list[list[int]] = []
        for line in lines:
            nums = _INT.findall(_ROW_LABEL.sub("", line))
            if not nums:
                continue
            if any(len(n) > 9 for n in nums):  # no cell is that large; avoid big-int work
                return None
            grid.append([int(n) for n in nums])
        if len(grid) == rows and all(len(r) == cols for r in grid):
            return grid
        # rows written with the digits run together ("1234"): split into single-digit cells
        if len(grid) == rows and cols < 10 and all(len(r) == 1 and len(str(r[0])) == cols for r in grid):
            return [[int(ch) for ch in str(r[0])] for r in grid]
    return None


def is_latin_square(grid: Sequence[Sequence[int]]) -> bool:
    """Every row and every column of the n x n ``grid`` holds each number from 1 to n exactly once."""
    want = set(range(1, len(grid) + 1))
    return all(set(row) == want for row in grid) and all(
        {row[c] for row in grid} == want for c in range(len(grid))
    )


def format_grid(grid: Sequence[Sequence[int]]) -> str:
    return "\n".join(" ".join(str(v) for v in row) for row in grid)
