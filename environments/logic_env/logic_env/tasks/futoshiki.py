"""Futoshiki: fill an n x n Latin square that respects given numbers and inequalities between
neighbouring cells.

Puzzles are built from a random Latin square; clues (inequalities first, then givens) are added until
the solution is unique (``unique=True``). The verifier checks the rules, not the stored grid.
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

#: An inequality ``((r1, c1), (r2, c2), "<" | ">")`` between orthogonal neighbours, 0-based.
Constraint = tuple[tuple[int, int], tuple[int, int], str]


@dataclass(frozen=True)
class Config:
    size: int = 5
    num_inequalities: int = 6
    num_givens: int = 3
    unique: bool = True

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(size=4, num_inequalities=4, num_givens=3),
            "medium": cls(size=5, num_inequalities=6, num_givens=3),
            "hard": cls(size=6, num_inequalities=8, num_givens=3),
        }[difficulty]

    def validate(self) -> None:
        if not 3 <= self.size <= 7:
            raise ValueError("size must be between 3 and 7")
        if self.num_inequalities < 0 or self.num_givens < 0:
            raise ValueError("clue counts must be >= 0")


def latin_square(rng: random.Random, n: int) -> list[list[int]]:
    """A random Latin square: row-by-row backtracking with shuffled candidates (cheap for n <= 7)."""
    grid: list[list[int]] = []

    def fill(row: list[int]) -> bool:
        if len(row) == n:
            grid.append(row)
            return True
        c = len(row)
        used = {g[c] for g in grid} | set(row)
        return any(v not in used and fill([*row, v]) for v in rng.sample(range(1, n + 1), n))

    while len(grid) < n:
        if not fill([]):  # a dead end for this row: start the square again
            grid.clear()
    return grid


def _holds(a: int, b: int, sign: str) -> bool:
    return a < b if sign == "<" else a > b


def solutions(
    size: int, givens: Mapping[tuple[int, int], int], constraints: Sequence[Constraint], limit: int
) -> list[list[list[int]]]:
    """Up to ``limit`` solutions: bitmask backtracking, most-constrained cell first; an inequality with
    one side known bounds the other side's candidates."""
    grid = [[0] * size for _ in range(size)]
    rows = [0] * size
    cols = [0] * size
    full = (1 << (size + 1)) - 2
    # per cell: (other cell, True if this cell must be smaller)
    links: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]] = {}
    for a, b, sign in constraints:
        links.setdefault(a, []).append((b, sign == "<"))
        links.setdefault(b, []).append((a, sign == ">"))
    for (r, c), v in givens.items():
        bit = 1 << v
        if grid[r][c] or (rows[r] | cols[c]) & bit:
            return []
        grid[r][c] = v
        rows[r] |= bit
        cols[c] |= bit
    for a, b, sign in constraints:  # clues among givens must already hold
        va, vb = grid[a[0]][a[1]], grid[b[0]][b[1]]
        if va and vb and not _holds(va, vb, sign):
            return []
    found: list[list[list[int]]] = []

    def candidates(r: int, c: int) -> int:
        mask = full & ~(rows[r] | cols[c])
        for (orow, ocol), smaller in links.get((r, c), ()):
            ov = grid[orow][ocol]
            if ov:
                # smaller: keep values < ov; else keep values > ov
                mask &= ((1 << ov) - 1) if smaller else ~((1 << (ov + 1)) - 1)
        return mask

    def search() -> None:
        best: tuple[int, int] | None = None
        best_mask = 0
        best_n = size + 1
        for r in range(size):
            for c in range(size):
                if grid[r][c] == 0:
                    mask = candidates(r, c)
                    n = mask.bit_count()
                    if n < best_n:
                        best, best_mask, best_n = (r, c), mask, n
                        if n == 0:
                            return
        if best is None:
            found.append([row[:] for row in grid])
            return
        r, c = best
        mask = best_mask
        while mask and len(found) < limit:
            bit = mask & -mask
            mask ^= bit
            grid[r][c] = bit.bit_length() - 1
            rows[r] |= bit
            cols[c] |= bit
            search()
            rows[r] ^= bit
            cols[c] ^= bit
            grid[r][c] = 0

    search()
    return found


def _render(size: int, givens: Mapping[tuple[int, int], int], constraints: Sequence[Constraint]) -> str:
    rows = [" ".join(str(givens.get((r, c), "_")) for c in range(size)) for r in range(size)]
    cons = [
        f"(row {a[0] + 1}, col {a[1] + 1}) {s} (row {b[0] + 1}, col {b[1] + 1})" for a, b, s in constraints
    ]
    return "\n".join(rows) + "\n\nInequalities:\n" + ("\n".join(cons) if cons else "(none)")


def generate(rng: random.Random, cfg: Config) -> Item:
    n = cfg.size
    solution = latin_square(rng, n)
    pairs = [((r, c), (r, c + 1)) for r in range(n) for c in range(n - 1)]
    pairs += [((r, c), (r + 1, c)) for r in range(n - 1) for c in range(n)]
    rng.shuffle(pairs)
    cells = [(r, c) for r in range(n) for c in range(n)]
    rng.shuffle(cells)

    def inequality(a: tuple[int, int], b: tuple[int, int]) -> Constraint:
        return (a, b, "<" if solution[a[0]][a[1]] < solution[b[0]][b[1]] else ">")

    constraints = [inequality(a, b) for a, b in pairs[: cfg.num_inequalities]]
    givens = {cell: solution[cell[0]][cell[1]] for cell in cells[: cfg.num_givens]}
    spare_pairs, spare_cells = pairs[cfg.num_inequalities :], cells[cfg.num_givens :]
    if cfg.unique:
        # While another solution exists, add a clue that rules it out: an inequality it breaks if there
        # is one among the unused pairs, else a given where it differs. Ends: each step removes `alt`.
        while len(found := solutions(n, givens, constraints, 2)) > 1:
            alt = found[0] if found[0] != solution else found[1]
            breaking = [
                (a, b)
                for a, b in spare_pairs
                if (alt[a[0]][a[1]] < alt[b[0]][b[1]]) != (solution[a[0]][a[1]] < solution[b[0]][b[1]])
            ]
            if breaking:
                a, b = rng.choice(breaking)
                spare_pairs.remove((a, b))
                constraints.append(inequality(a, b))
            else:
                cell = rng.choice([(r, c) for r, c in spare_cells if alt[r][c] != solution[r][c]])
                spare_cells.remove(cell)
                givens[cell] = solution[cell[0]][cell[1]]
    constraints.sort()
    question = (
        f"Solve this {n}x{n} Futoshiki puzzle. Fill every blank (_) with a number from 1 to {n} so that each "
        f"row and each column contains every number from 1 to {n} exactly once, the given numbers are kept, "
        "and every inequality below holds (rows and columns are numbered from 1, top-left).\n\n"
        + _render(n, givens, constraints)
        + instruction(f"Write the completed grid: {n} lines, each with {n} numbers separated by spaces.")
    )
    info: dict[str, Any] = {
        "size": n,
        "givens": [[r, c, v] for (r, c), v in sorted(givens.items())],
        "constraints": [[list(a), list(b), s] for a, b, s in constraints],
    }
    return {"question": question, "answer": format_grid(solution), "info": info}


def _parts(info: Mapping[str, Any]) -> tuple[int, dict[tuple[int, int], int], list[Constraint]]:
    givens = {(int(r), int(c)): int(v) for r, c, v in info["givens"]}
    constraints: list[Constraint] = [
        ((int(a[0]), int(a[1])), (int(b[0]), int(b[1])), str(s)) for a, b, s in info["constraints"]
    ]
    return int(info["size"]), givens, constraints


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    n, givens, constraints = _parts(item["info"])
    grid = parse_int_grid(answer_text, n, n)
    if grid is None or not is_latin_square(grid):
        return 0.0
    if any(grid[r][c] != v for (r, c), v in givens.items()):
        return 0.0
    if not all(_holds(grid[a[0]][a[1]], grid[b[0]][b[1]], s) for a, b, s in constraints):
        return 0.0
    return 1.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    n, givens, constraints = _parts(item["info"])
    return [format_grid(g) for g in solutions(n, givens, constraints, limit)]


SPEC = TaskSpec(
    name="futoshiki",
    description="Fill a Latin square that respects given numbers and inequalities between neighbours.",
    answer_format="the full grid, one row per line, numbers separated by spaces",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
