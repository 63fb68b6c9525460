"""N-queens completion: some queens are already on the board; add the rest so that no two queens
share a row, column or diagonal.

The given queens are taken from a real solution, so a completion exists; the verifier accepts any
valid completion that keeps the given queens.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction


@dataclass(frozen=True)
class Config:
    size: int = 6
    num_given: int = 2

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(size=5, num_given=2),
            "medium": cls(size=6, num_given=1),
            "hard": cls(size=8, num_given=1),
        }[difficulty]

    def validate(self) -> None:
        if not 4 <= self.size <= 12:
            raise ValueError("size must be between 4 and 12")
        if not 0 <= self.num_given < self.size:
            raise ValueError("num_given must be between 0 and size - 1")


def completions(
    size: int, given: Mapping[int, int], limit: int, rng: random.Random | None = None
) -> list[list[int]]:
    """Up to ``limit`` solutions as column-per-row lists that keep ``given`` (row -> column)."""
    cols: list[int] = []
    found: list[list[int]] = []

    def free(r: int, c: int) -> bool:
        return all(c != pc and abs(c - pc) != r - pr for pr, pc in enumerate(cols))

    def place(r: int) -> None:
        if len(found) >= limit:
            return
        if r == size:
            found.append(cols[:])
            return
        options = [given[r]] if r in given else list(range(size))
        if rng is not None:
            rng.shuffle(options)
        for c in options:
            if free(r, c):
                cols.append(c)
                place(r + 1)
                cols.pop()

    place(0)
    return found


def render(size: int, queens: Mapping[int, int]) -> str:
    return "\n".join(" ".join("Q" if queens.get(r) == c else "." for c in range(size)) for r in range(size))


def generate(rng: random.Random, cfg: Config) -> Item:
    n = cfg.size
    solution = completions(n, {}, 1, rng)[0]
    rows = sorted(rng.sample(range(n), cfg.num_given))
    given = {r: solution[r] for r in rows}
    question = (
        f"Place {n} queens on this {n}x{n} board so that no two queens share a row, a column or a diagonal. "
        f"'Q' marks a queen already placed (keep it), '.' an empty square.\n\n{render(n, given)}"
        + instruction(
            f"Write the full board: {n} lines of {n} symbols separated by spaces, 'Q' for a queen and '.' "
            "for an empty square."
        )
    )
    info: dict[str, Any] = {"size": n, "given": [[r, c] for r, c in sorted(given.items())]}
    return {"question": question, "answer": render(n, dict(enumerate(solution))), "info": info}


def parse_board(text: str, n: int) -> list[int] | None:
    """Column of the single queen in each row, from lines of Q/./_ symbols; ``None`` if malformed."""
    rows: list[str] = []
    for line in text.splitlines():
        cells = "".join(line.split()).strip("`|")
        if not cells:
            continue
        if set(cells) - set("Qq._0*-"):
            return None
        rows.append(cells)
    if len(rows) != n or any(len(r) != n for r in rows):
        return None
    cols: list[int] = []
    for r in rows:
        queens = [i for i, ch in enumerate(r) if ch in "Qq"]
        if len(queens) != 1:
            return None
        cols.append(queens[0])
    return cols


def is_solution(cols: Sequence[int], given: Sequence[Sequence[int]]) -> bool:
    n = len(cols)
    if len(set(cols)) != n or any(cols[r] != c for r, c in given):
        return False
    return all(abs(cols[a] - cols[b]) != b - a for a in range(n) for b in range(a + 1, n))


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    n = int(info["size"])
    text = bounded(answer_text, 4 * n * n + 200)
    if text is None:
        return 0.0
    cols = parse_board(text, n)
    return 1.0 if cols is not None and is_solution(cols, info["given"]) else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    info = item["info"]
    n = int(info["size"])
    given = {int(r): int(c) for r, c in info["given"]}
    return [render(n, dict(enumerate(s))) for s in completions(n, given, limit)]


SPEC = TaskSpec(
    name="n_queens",
    description="Complete an N-queens board that already holds some queens.",
    answer_format="the full board, one row per line, 'Q' for queens and '.' for empty squares",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
