"""Graph colouring: give each vertex one of k colours so that no edge joins two vertices of the same
colour.

Graphs are built around a hidden colouring (edges only join different colours), so one always exists;
usually many do, and the verifier accepts any proper colouring.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

_PAIR = re.compile(r"(\d+)\s*(?::|=|->|→)\s*(\d+)")


@dataclass(frozen=True)
class Config:
    num_vertices: int = 8
    num_colors: int = 3
    #: Probability that a pair of differently coloured vertices is joined.
    edge_probability: float = 0.5

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_vertices=6, num_colors=3, edge_probability=0.4),
            "medium": cls(num_vertices=9, num_colors=3, edge_probability=0.5),
            "hard": cls(num_vertices=14, num_colors=4, edge_probability=0.55),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_vertices <= 40:
            raise ValueError("num_vertices must be between 2 and 40")
        if not 2 <= self.num_colors <= min(9, self.num_vertices):
            raise ValueError("num_colors must be between 2 and min(9, num_vertices)")
        if not 0.0 < self.edge_probability <= 1.0:
            raise ValueError("edge_probability must be in (0, 1]")


def generate(rng: random.Random, cfg: Config) -> Item:
    n, k = cfg.num_vertices, cfg.num_colors
    colors = [i % k + 1 for i in range(n)]  # every colour used at least once
    rng.shuffle(colors)
    edges = [
        [u, v]
        for u in range(n)
        for v in range(u + 1, n)
        if colors[u] != colors[v] and rng.random() < cfg.edge_probability
    ]
    listing = ", ".join(f"{u}-{v}" for u, v in edges) or "(no edges)"
    question = (
        f"Colour the vertices 0 to {n - 1} of this graph with the colours 1 to {k} so that the two ends of "
        f"every edge get different colours.\n\nEdges: {listing}"
        + instruction(
            "Give the colour of every vertex as 'vertex: colour', separated by commas, e.g. "
            "<answer>0: 1, 1: 2, 2: 1</answer>."
        )
    )
    answer = ", ".join(f"{v}: {colors[v]}" for v in range(n))
    info: dict[str, Any] = {"num_vertices": n, "num_colors": k, "edges": edges}
    return {"question": question, "answer": answer, "info": info}


def is_coloring(colors: Mapping[int, int], n: int, k: int, edges: Sequence[Sequence[int]]) -> bool:
    if set(colors) != set(range(n)) or any(not 1 <= c <= k for c in colors.values()):
        return False
    return all(colors[u] != colors[v] for u, v in edges)


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    n, k = int(info["num_vertices"]), int(info["num_colors"])
    text = bounded(answer_text, 20 * n + 200)
    if text is None:
        return 0.0
    colors: dict[int, int] = {}
    for v, c in _PAIR.findall(text):
        if len(v) > 4 or len(c) > 4 or colors.setdefault(int(v), int(c)) != int(c):
            return 0.0
    return 1.0 if is_coloring(colors, n, k, info["edges"]) else 0.0


def solve(item: Mapping[str, Any], limit: int) -> list[str]:
    info = item["info"]
    n, k = int(info["num_vertices"]), int(info["num_colors"])
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for u, v in info["edges"]:
        neighbours[u].add(v)
        neighbours[v].add(u)
    colors = [0] * n
    out: list[str] = []

    def place(v: int) -> None:
        if len(out) >= limit:
            return
        if v == n:
            out.append(", ".join(f"{u}: {colors[u]}" for u in range(n)))
            return
        for c in range(1, k + 1):
            if all(colors[u] != c for u in neighbours[v]):
                colors[v] = c
                place(v + 1)
                colors[v] = 0

    place(0)
    return out


SPEC = TaskSpec(
    name="graph_coloring",
    description="Properly colour a graph's vertices with k colours.",
    answer_format="'vertex: colour' pairs separated by commas",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
    solve_fn=solve,
    multi_solution=True,
)
