"""Grid mazes: find a shortest path from S to G moving up, down, left and right.

Mazes are random walls with a reachable goal at a minimum distance; the verifier replays the moves
(no walls, no leaving the grid), requires ending on G and requires the path to be shortest (by BFS),
so every shortest path scores 1.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_WORDS = {"UP": "U", "DOWN": "D", "LEFT": "L", "RIGHT": "R", "U": "U", "D": "D", "L": "L", "R": "R"}
_TOKEN = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Config:
    rows: int = 7
    cols: int = 7
    wall_density: float = 0.3
    min_distance: int = 6

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(rows=5, cols=5, wall_density=0.25, min_distance=4),
            "medium": cls(rows=7, cols=7, wall_density=0.3, min_distance=8),
            "hard": cls(rows=10, cols=10, wall_density=0.35, min_distance=14),
        }[difficulty]

    def validate(self) -> None:
        if not (2 <= self.rows <= 30 and 2 <= self.cols <= 30):
            raise ValueError("rows and cols must be between 2 and 30")
        if not 0.0 <= self.wall_density < 0.7:
            raise ValueError("wall_density must be in [0, 0.7)")
        if not 1 <= self.min_distance <= self.rows * self.cols // 2:
            raise ValueError("min_distance must be between 1 and half the cells")


def distances(grid: Sequence[str], start: tuple[int, int]) -> dict[tuple[int, int], int]:
    dist = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES.values():
            nr, nc = r + dr, c + dc
            if (
                0 <= nr < len(grid)
                and 0 <= nc < len(grid[0])
                and grid[nr][nc] != "#"
                and (nr, nc) not in dist
            ):
                dist[(nr, nc)] = dist[(r, c)] + 1
                queue.append((nr, nc))
    return dist


def _find(grid: Sequence[str], ch: str) -> tuple[int, int]:
    for r, row in enumerate(grid):
        c = row.find(ch)
        if c >= 0:
            return r, c
    raise ValueError(f"no {ch!r} in the maze")


def generate(rng: random.Random, cfg: Config) -> Item:
    for _ in range(10_000):
        cells = [
            ["#" if rng.random() < cfg.wall_density else "." for _ in range(cfg.cols)]
            for _ in range(cfg.rows)
        ]
        open_cells = [(r, c) for r in range(cfg.rows) for c in range(cfg.cols) if cells[r][c] == "."]
        if len(open_cells) < 2:
            continue
        start = rng.choice(open_cells)
        dist = distances(["".join(row) for row in cells], start)
        far = [cell for cell, d in dist.items() if d >= cfg.min_distance]
        if far:
            goal = rng.choice(far)
            break
    else:  # pragma: no cover
        raise RuntimeError(f"no maze found for {cfg}")
    cells[start[0]][start[1]] = "S"
    cells[goal[0]][goal[1]] = "G"
    grid = ["".join(row) for row in cells]
    path = next(_shortest_paths(grid))
    question = (
        "Find a shortest path through this maze from S to G. '#' is a wall, '.' is open floor. Each move goes "
        "one cell up (U), down (D), left (L) or right (R); you cannot enter walls or leave the grid.\n\n"
        + "\n".join(grid)
        + instruction(
            "Write the moves as letters separated by spaces, e.g. <answer>R R D L</answer>. "
            "Any path of the shortest possible length is accepted."
        )
    )
    info: dict[str, Any] = {"grid": grid, "distance": dist[goal]}
    return {"question": question, "answer": " ".join(path), "info": info}


def _shortest_paths(grid: Sequence[str]) -> Iterator[list[str]]:
    """Every shortest path from S to G, as move lists (walking back along decreasing distance to G)."""
    start, goal = _find(grid, "S"), _find(grid, "G")
    to_goal = distances(grid, goal)

    def walk(cell: tuple[int, int]) -> Iterator[list[str]]:
        if cell == goal:
            yield []
            return
        for name, (dr, dc) in MOVES.items():
            nxt = (cell[0] + dr, cell[1] + dc)
            if to_goal.get(nxt) == to_goal[cell] - 1:
                for rest in walk(nxt):
                    yield [name, *rest]

    yield from walk(start)


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    grid: list[str] = item["info"]["grid"]
    text = bounded(answer_text, 8 * len(grid) * len(grid[0]) + 100)
    if text is None:
        return 0.0
    moves: list[str] = []
    for tok in _TOKEN.findall(text.upper()):
        if tok in _WORDS:
            moves.append(_WORDS[tok])
        elif set(tok) <= set(MOVES):  # written without spaces: "RRDL"
            moves.extend(tok)
        else:
            return 0.0
    r, c = _find(grid, "S")
    for m in moves:
        dr, dc = MOVES[m]
        r, c = r + dr, c + dc
        if not (0 <= r < len(grid) and 0 <= c < len(grid[0])) or grid[r][c] == "#":
            return 0.0
    if grid[r][c] != "G":
        return 0.0
    shortest = distances(grid, _find(grid, "S"))[(r, c)]
    return 1.0 if len(moves) == shortest else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    out: list[str] = []
    for path in _shortest_paths(item["info"]["grid"]):
        out.append(" ".join(path))
        if len(out) >= limit:
            break
    return out


SPEC = TaskSpec(
    name="maze",
    description="Find a shortest path from S to G in a grid maze.",
    answer_format="moves as letters U/D/L/R separated by spaces",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
