"""Cryptarithms: each letter stands for a different digit; find digits that make the sum true.

Puzzles are built from a real sum, so a solution always exists; with ``unique=True`` only puzzles with
exactly one solution are kept. The verifier checks the arithmetic and the letter rules for whatever
assignment the answer gives, so any valid assignment scores 1.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

_PAIR = re.compile(r"\b([A-Z])\s*(?:=|:|->|→|is)\s*(\d)\b")
_TERM = re.compile(r"\d+|[+\-*=]")


@dataclass(frozen=True)
class Config:
    num_addends: int = 2
    min_digits: int = 3
    max_digits: int = 4
    unique: bool = True

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_addends=2, min_digits=2, max_digits=3),
            "medium": cls(num_addends=2, min_digits=3, max_digits=4),
            "hard": cls(num_addends=3, min_digits=3, max_digits=5),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_addends <= 5:
            raise ValueError("num_addends must be between 2 and 5")
        if not 1 <= self.min_digits <= self.max_digits <= 8:
            raise ValueError("need 1 <= min_digits <= max_digits <= 8")


def arithmetic(values: Sequence[int], ops: Sequence[str]) -> int:
    """``values[0] ops[0] values[1] ...`` with ``*`` binding tighter than ``+``/``-``."""
    total, sign, term = 0, 1, values[0]
    for op, v in zip(ops, values[1:], strict=True):
        if op == "*":
            term *= v
        else:
            total += sign * term
            sign, term = (1 if op == "+" else -1), v
    return total + sign * term


def addition_solutions(addends: Sequence[str], result: str, limit: int) -> list[dict[str, int]]:
    """Up to ``limit`` letter->digit assignments for ``sum(addends) == result`` (column by column,
    least significant first, carrying as on paper)."""
    width = len(result)
    if any(len(w) > width for w in addends):
        return []
    cols = [([w[-1 - j] for w in addends if j < len(w)], result[-1 - j]) for j in range(width)]
    leading = {w[0] for w in [*addends, result] if len(w) > 1}
    assign: dict[str, int] = {}
    used = [False] * 10
    found: list[dict[str, int]] = []

    def column(j: int, carry: int) -> None:
        if len(found) >= limit:
            return
        if j == width:
            if carry == 0:
                found.append(dict(assign))
            return
        letters, res = cols[j]
        todo = [ch for ch in dict.fromkeys(letters) if ch not in assign]

        def place(k: int) -> None:
            if len(found) >= limit:
                return
            if k < len(todo):
                ch = todo[k]
                for d in range(10):
                    if not used[d] and not (d == 0 and ch in leading):
                        assign[ch], used[d] = d, True
                        place(k + 1)
                        del assign[ch]
                        used[d] = False
                return
            total = sum(assign[ch] for ch in letters) + carry
            digit = total % 10
            if res in assign:
                if assign[res] == digit:
                    column(j + 1, total // 10)
            elif not used[digit] and not (digit == 0 and res in leading):
                assign[res], used[digit] = digit, True
                column(j + 1, total // 10)
                del assign[res]
                used[digit] = False

        place(0)

    column(0, 0)
    return found


def generate(rng: random.Random, cfg: Config) -> Item:
    for _ in range(10_000):
        numbers = [
            rng.randint(10 ** (d - 1) if d > 1 else 0, 10**d - 1)
            for d in (rng.randint(cfg.min_digits, cfg.max_digits) for _ in range(cfg.num_addends))
        ]
        total = sum(numbers)
        letters = rng.sample(string.ascii_uppercase, 10)
        words = ["".join(letters[int(ch)] for ch in str(n)) for n in numbers]
        result = "".join(letters[int(ch)] for ch in str(total))
        if not cfg.unique or len(addition_solutions(words, result, 2)) == 1:
            break
    else:  # pragma: no cover
        raise RuntimeError("no cryptarithm with a unique solution found")
    used = sorted(set("".join(words) + result))
    mapping = {letters[int(ch)]: int(ch) for n in [*numbers, total] for ch in str(n)}
    equation = " + ".join(words) + " = " + result
    question = (
        "Solve this cryptarithm. Each letter stands for a digit (0-9); different letters stand for "
        "different digits, and no number with more than one digit starts with 0.\n\n"
        f"{equation}"
        + instruction(
            "Give the digit of every letter as 'LETTER=digit', separated by commas, "
            "e.g. <answer>X=1, Y=2</answer>."
        )
    )
    answer = ", ".join(f"{ch}={mapping[ch]}" for ch in used)
    info: dict[str, Any] = {"words": words, "ops": ["+"] * (len(words) - 1), "result": result}
    return {"question": question, "answer": answer, "info": info}


def _from_equation(text: str, words: Sequence[str], ops: Sequence[str], result: str) -> dict[str, int] | None:
    """The assignment implied by a numeric equation like ``123 + 456 = 579`` (aligned with the words)."""
    tokens = _TERM.findall(text)
    want = [t for w, op in zip(words, [*ops, "="], strict=True) for t in ("#" + w, op)] + ["#" + result]
    if len(tokens) != len(want):
        return None
    mapping: dict[str, int] = {}
    for tok, spec in zip(tokens, want, strict=True):
        if spec.startswith("#"):
            word = spec[1:]
            if not tok.isdigit() or len(tok) != len(word):
                return None
            for ch, digit in zip(word, tok, strict=True):
                if mapping.setdefault(ch, int(digit)) != int(digit):
                    return None
        elif tok != spec:
            return None
    return mapping


def check(mapping: Mapping[str, int], words: Sequence[str], ops: Sequence[str], result: str) -> bool:
    letters = set("".join(words) + result)
    if not letters <= set(mapping):
        return False
    used = [mapping[ch] for ch in letters]
    if len(set(used)) != len(used) or any(not 0 <= d <= 9 for d in used):
        return False
    if any(len(w) > 1 and mapping[w[0]] == 0 for w in [*words, result]):
        return False

    def value(word: str) -> int:
        return int("".join(str(mapping[ch]) for ch in word))

    return arithmetic([value(w) for w in words], ops) == value(result)


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    words, ops, result = list(info["words"]), list(info["ops"]), str(info["result"])
    text = bounded(answer_text, 2000)
    if text is None:
        return 0.0
    pairs = _PAIR.findall(text)
    mapping: dict[str, int] | None
    if pairs:
        mapping = {}
        for ch, digit in pairs:
            if mapping.setdefault(ch, int(digit)) != int(digit):
                return 0.0
    else:
        mapping = _from_equation(text, words, ops, result)
    if mapping is None:
        return 0.0
    return 1.0 if check(mapping, words, ops, result) else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    info = item["info"]
    if set(info["ops"]) != {"+"}:
        return [str(item["answer"])]
    sols = addition_solutions(info["words"], info["result"], limit)
    return [", ".join(f"{ch}={d}" for ch, d in sorted(s.items())) for s in sols]


SPEC = TaskSpec(
    name="cryptarithm",
    description="Find digits for the letters of an addition so that the sum is correct.",
    answer_format="'A=1, B=2, ...' for every letter (a numeric equation such as 12 + 34 = 46 also works)",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
