"""Game of 24 (and its generalisation to other targets and operator sets).

Use every given number exactly once with the allowed operators and parentheses to reach the target.
The verifier evaluates the answer exactly (``Fraction``) through the whitelisting parser in ``arith``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from logic_env.tasks.arith import NotArithmetic, evaluate
from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

ALL_OPS = ("+", "-", "*", "/")
_TRAILING_EQ = re.compile(r"=\s*(-?\d+)\s*\.?\s*$")


@dataclass(frozen=True)
class Config:
    num_numbers: int = 4
    min_number: int = 1
    max_number: int = 13
    target: int = 24
    ops: tuple[str, ...] = field(default=ALL_OPS)

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_numbers=4, max_number=9),
            "medium": cls(num_numbers=4, max_number=13),
            "hard": cls(num_numbers=5, max_number=13),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_numbers <= 6:
            raise ValueError("num_numbers must be between 2 and 6")
        if not 1 <= self.min_number <= self.max_number <= 100:
            raise ValueError("need 1 <= min_number <= max_number <= 100")
        if not self.ops or not set(self.ops) <= set(ALL_OPS):
            raise ValueError(f"ops must be a non-empty subset of {ALL_OPS}")


def _combine(
    a: tuple[Fraction, str], b: tuple[Fraction, str], ops: tuple[str, ...]
) -> Iterator[tuple[Fraction, str]]:
    (x, ex), (y, ey) = a, b
    if "+" in ops:
        yield x + y, f"({ex} + {ey})"
    if "*" in ops:
        yield x * y, f"({ex} * {ey})"
    if "-" in ops:
        yield x - y, f"({ex} - {ey})"
        yield y - x, f"({ey} - {ex})"
    if "/" in ops:
        if y != 0:
            yield x / y, f"({ex} / {ey})"
        if x != 0:
            yield y / x, f"({ey} / {ex})"


@lru_cache(maxsize=65536)
def _solvable(values: tuple[Fraction, ...], target: Fraction, ops: tuple[str, ...]) -> bool:
    if len(values) == 1:
        return values[0] == target
    n = len(values)
    for i in range(n):
        for j in range(i + 1, n):
            rest = [values[k] for k in range(n) if k != i and k != j]
            for v, _ in _combine((values[i], ""), (values[j], ""), ops):
                if _solvable(tuple(sorted([*rest, v])), target, ops):
                    return True
    return False


def _expressions(items: list[tuple[Fraction, str]], target: Fraction, ops: tuple[str, ...]) -> Iterator[str]:
    """Every expression (as written by this solver) over ``items`` that equals ``target``."""
    if len(items) == 1:
        if items[0][0] == target:
            yield items[0][1][1:-1] if items[0][1].startswith("(") else items[0][1]
        return
    if not _solvable(tuple(sorted(v for v, _ in items)), target, ops):
        return
    n = len(items)
    for i in range(n):
        for j in range(i + 1, n):
            rest = [items[k] for k in range(n) if k != i and k != j]
            for combined in _combine(items[i], items[j], ops):
                yield from _expressions([*rest, combined], target, ops)


def generate(rng: random.Random, cfg: Config) -> Item:
    ops = tuple(o for o in ALL_OPS if o in cfg.ops)
    target = Fraction(cfg.target)
    for _ in range(10_000):
        numbers = sorted(rng.randint(cfg.min_number, cfg.max_number) for _ in range(cfg.num_numbers))
        if _solvable(tuple(Fraction(n) for n in numbers), target, ops):
            break
    else:  # pragma: no cover - every shipped preset is solvable far sooner
        raise RuntimeError(f"no solvable numbers found for {cfg}")
    rng.shuffle(numbers)
    solution = next(_expressions([(Fraction(n), str(n)) for n in numbers], target, ops))
    op_text = ", ".join(ops)
    question = (
        f"Use each of the numbers {', '.join(map(str, numbers))} exactly once, together with the operators "
        f"{op_text} and parentheses, to write an expression whose value is exactly {cfg.target}. "
        "Division is exact (fractions are allowed along the way); no other operators, no concatenating "
        "digits, and no unary minus."
        + instruction(
            f"Write just the expression, for example <answer>(a + b) * c - d</answer> with the numbers in "
            f"place of the letters (a trailing '= {cfg.target}' is allowed)."
        )
    )
    info: dict[str, Any] = {"numbers": numbers, "target": cfg.target, "ops": list(ops)}
    return {"question": question, "answer": solution, "info": info}


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    text = bounded(answer_text, 300)
    if text is None:
        return 0.0
    target = Fraction(info["target"])
    m = _TRAILING_EQ.search(text)
    if m is not None:
        if len(m.group(1)) > 12 or Fraction(int(m.group(1))) != target:
            return 0.0
        text = text[: m.start()]
    try:
        result = evaluate(text)
    except NotArithmetic:
        return 0.0
    if sorted(result.numbers) != sorted(int(n) for n in info["numbers"]):
        return 0.0
    if not result.ops <= set(info.get("ops", ALL_OPS)):
        return 0.0
    return 1.0 if result.value == target else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    info = item["info"]
    ops = tuple(o for o in ALL_OPS if o in info.get("ops", ALL_OPS))
    out: list[str] = []
    for expr in _expressions([(Fraction(n), str(n)) for n in info["numbers"]], Fraction(info["target"]), ops):
        if expr not in out:
            out.append(expr)
            if len(out) >= limit:
                break
    return out


SPEC = TaskSpec(
    name="game_of_24",
    description="Combine all given numbers with + - * / and parentheses to reach the target (24).",
    answer_format="an arithmetic expression, e.g. (8 - 4) * (3 + 3)",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
