"""Sudoku on 4x4 (2x2 boxes), 6x6 (2x3 boxes) and 9x9 (3x3 boxes) grids.

Puzzles are cut from a random full grid, so they always have a solution; with ``unique=True`` a clue is
only removed while the solution stays unique. The verifier checks the rules, not the stored grid.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import (
    Difficulty,
    Item,
    TaskSpec,
    format_grid,
    instruction,
    is_latin_square,
    parse_int_grid,
)

BOXES: dict[int, tuple[int, int]] = {4: (2, 2), 6: (2, 3), 9: (3, 3)}


@dataclass(frozen=True)
class Config:
    size: int = 6
    #: Fraction of cells left blank (capped where uniqueness can no longer be kept).
    blank_fraction: float = 0.5
    unique: bool = True

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(size=4, blank_fraction=0.5),
            "medium": cls(size=6, blank_fraction=0.5),
            "hard": cls(size=9, blank_fraction=0.55),
        }[difficulty]

    def validate(self) -> None:
        if self.size not in BOXES:
            raise ValueError(f"size must be one of {sorted(BOXES)}")
        if not 0.0 < self.blank_fraction < 1.0:
            raise ValueError("blank_fraction must be in (0, 1)")


def full_grid(rng: random.Random, size: int) -> list[list[int]]:
    """A random valid grid: a shifted base pattern, then symbol, row/band and column/stack shuffles."""
    br, bc = BOXES[size]
    digits = list(range(1, size + 1))
    rng.shuffle(digits)

    def shuffled_lines(group: int, groups: int) -> list[int]:
        order = rng.sample(range(groups), groups)
        return [g * group + i for g in order for i in rng.sample(range(group), group)]

    rows = shuffled_lines(br, size // br)
    cols = shuffled_lines(bc, size // bc)
    return [[digits[(bc * (r % br) + r // br + c) % size] for c in cols] for r in rows]


def solutions(puzzle: Sequence[Sequence[int]], limit: int) -> list[list[list[int]]]:
    """Up to ``limit`` solutions (bitmask backtracking, most-constrained cell first)."""
    size = len(puzzle)
    br, bc = BOXES[size]
    full = (1 << (size + 1)) - 2
    grid = [list(r) for r in puzzle]
    rows = [0] * size
    cols = [0] * size
    boxes = [0] * size
    empty: list[tuple[int, int]] = []
    for r in range(size):
        for c in range(size):
            v = grid[r][c]
            if v:
                bit = 1 << v
                b = (r // br) * (size // bc) + c // bc
                if (rows[r] | cols[c] | boxes[b]) & bit:
                    return []
                rows[r] |= bit
                cols[c] |= bit
                boxes[b] |= bit
            else:
                empty.append((r, c))
    found: list[list[list[int]]] = []

    def search() -> None:
        best = -1
        best_mask = 0
        best_count = size + 1
        for i, (r, c) in enumerate(empty):
            if grid[r][c]:
                continue
            mask = full & ~(rows[r] | cols[c] | boxes[(r // br) * (size // bc) + c // bc])
            n = mask.bit_count()
            if n < best_count:
                best, best_mask, best_count = i, mask, n
                if n <= 1:
                    break
        if best < 0:
            found.append([list(row) for row in grid])
            return
        r, c = empty[best]
        b = (r // br) * (size // bc) + c // bc
        mask = best_mask
        while mask and len(found) < limit:
            bit = mask & -mask
            mask ^= bit
            grid[r][c] = bit.bit_length() - 1
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            search()
            rows[r] ^= bit
            cols[c] ^= bit
            boxes[b] ^= bit
            grid[r][c] = 0

    search()
    return found


def generate(rng: random.Random, cfg: Config) -> Item:
    size = cfg.size
    br, bc = BOXES[size]
    solution = full_grid(rng, size)
    puzzle = [row[:] for row in solution]
    target = round(cfg.blank_fraction * size * size)
    cells = [(r, c) for r in range(size) for c in range(size)]
    rng.shuffle(cells)
    blanks = 0
    for r, c in cells:
        if blanks >= target:
            break
        keep = puzzle[r][c]
        puzzle[r][c] = 0
        if cfg.unique and len(solutions(puzzle, 2)) != 1:
            puzzle[r][c] = keep
            continue
        blanks += 1
    shown = "\n".join(" ".join(str(v) if v else "_" for v in row) for row in puzzle)
    question = (
        f"Solve this {size}x{size} Sudoku. Fill every blank (_) with a number from 1 to {size} so that each "
        f"row, each column and each {br}x{bc} box (boxes of {br} rows by {bc} columns, tiling the grid from "
        f"the top-left) contains every number from 1 to {size} exactly once. Keep the given numbers.\n\n"
        f"{shown}"
        + instruction(
            f"Write the completed grid: {size} lines, each with {size} numbers separated by spaces."
        )
    )
    info: dict[str, Any] = {"puzzle": puzzle, "size": size, "box": [br, bc]}
    return {"question": question, "answer": format_grid(solution), "info": info}


def is_solution(grid: Sequence[Sequence[int]], puzzle: Sequence[Sequence[int]], box: Sequence[int]) -> bool:
    size = len(puzzle)
    br, bc = box
    want = set(range(1, size + 1))
    if any(puzzle[r][c] and grid[r][c] != puzzle[r][c] for r in range(size) for c in range(size)):
        return False
    if not is_latin_square(grid):
        return False
    for r0 in range(0, size, br):
        for c0 in range(0, size, bc):
            if {grid[r][c] for r in range(r0, r0 + br) for c in range(c0, c0 + bc)} != want:
                return False
    return True


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    size = int(info["size"])
    grid = parse_int_grid(answer_text, size, size)
    if grid is None:
        return 0.0
    return 1.0 if is_solution(grid, info["puzzle"], info["box"]) else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    return [format_grid(g) for g in solutions(item["info"]["puzzle"], limit)]


SPEC = TaskSpec(
    name="sudoku",
    description="Complete a 4x4, 6x6 or 9x9 Sudoku grid.",
    answer_format="the full grid, one row per line, numbers separated by spaces",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
