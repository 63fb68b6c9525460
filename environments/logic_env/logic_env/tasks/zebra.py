"""Zebra (Einstein) puzzles: houses in a row, each with one value of every attribute; clues pin
down the single arrangement.

Clues are drawn true for a hidden arrangement; while another arrangement also fits, a true clue that
rules it out is added, so the solution is unique. With ``prune=True`` clues that are not needed are then
dropped. The verifier checks the answer against every clue.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("name", ("Anna", "Boris", "Carmen", "Dev", "Elif", "Felix")),
    ("color", ("red", "green", "blue", "yellow", "white", "purple")),
    ("pet", ("cat", "dog", "parrot", "goldfish", "horse", "rabbit")),
    ("drink", ("tea", "coffee", "milk", "juice", "water", "cocoa")),
    ("job", ("baker", "doctor", "pilot", "farmer", "teacher", "lawyer")),
    ("hobby", ("chess", "hiking", "cycling", "gardening", "knitting", "singing")),
)
#: How each attribute's value is named inside a clue.
_PHRASE = {
    "name": "{v}",
    "color": "the person in the {v} house",
    "pet": "the {v} owner",
    "drink": "the person who drinks {v}",
    "job": "the {v}",
    "hobby": "the person who enjoys {v}",
}
#: A clue: [kind, x, y_or_k] with x, y = [attribute, value index] and k a 0-based house.
Clue = list[Any]
Arrangement = list[list[int]]  # [attribute][value] -> house


@dataclass(frozen=True)
class Config:
    num_houses: int = 4
    num_attributes: int = 3
    prune: bool = True

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_houses=3, num_attributes=3),
            "medium": cls(num_houses=4, num_attributes=3),
            "hard": cls(num_houses=5, num_attributes=4),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_houses <= 6:
            raise ValueError("num_houses must be between 2 and 6")
        if not 2 <= self.num_attributes <= len(ATTRIBUTES):
            raise ValueError(f"num_attributes must be between 2 and {len(ATTRIBUTES)}")


def holds(clue: Clue, arr: Arrangement) -> bool:
    kind = clue[0]
    px = arr[clue[1][0]][clue[1][1]]
    if kind == "pos":
        return px == clue[2]
    if kind == "notpos":
        return px != clue[2]
    py = arr[clue[2][0]][clue[2][1]]
    return {
        "same": px == py,
        "notsame": px != py,
        "left": px + 1 == py,
        "before": px < py,
        "next": abs(px - py) == 1,
    }[kind]


def _revise(kind: str, dx: int, dy: int, full: int) -> tuple[int, int]:
    """Both domains (bitmasks of houses) narrowed to values with support under the binary clue."""
    if kind == "same":
        both = dx & dy
        return both, both
    if kind == "notsame":
        if dy & (dy - 1) == 0:
            dx &= ~dy
        if dx & (dx - 1) == 0:
            dy &= ~dx
        return dx, dy
    if kind == "left":  # hx + 1 == hy
        return dx & (dy >> 1), dy & (dx << 1) & full
    if kind == "next":
        return dx & ((dy << 1) | (dy >> 1)) & full, dy & ((dx << 1) | (dx >> 1)) & full
    # before: hx < hy
    if not dx or not dy:
        return 0, 0
    top_y = dy.bit_length() - 1
    low_x = (dx & -dx).bit_length() - 1
    return dx & ((1 << top_y) - 1), dy & ~((1 << (low_x + 1)) - 1)


def solutions(n: int, k: int, clues: Sequence[Clue], limit: int) -> list[Arrangement]:
    """Up to ``limit`` arrangements satisfying ``clues``: house domains as bitmasks, propagated to a
    fixpoint (clues, all-different, hidden singles), then search on the smallest open domain."""
    full = (1 << n) - 1
    dom = [[full] * n for _ in range(k)]
    binary: list[tuple[str, int, int, int, int]] = []
    for clue in clues:
        (a, v), kind = clue[1], clue[0]
        if kind == "pos":
            dom[a][v] &= 1 << clue[2]
        elif kind == "notpos":
            dom[a][v] &= ~(1 << clue[2])
        else:
            binary.append((kind, a, v, clue[2][0], clue[2][1]))
    found: list[Arrangement] = []

    def propagate(d: list[list[int]]) -> bool:
        changed = True
        while changed:
            changed = False
            for kind, a, v, b, w in binary:
                nx, ny = _revise(kind, d[a][v], d[b][w], full)
                if nx != d[a][v] or ny != d[b][w]:
                    if not nx or not ny:
                        return False
                    d[a][v], d[b][w] = nx, ny
                    changed = True
            for row in d:
                for v in range(n):
                    dv = row[v]
                    if not dv:
                        return False
                    if dv & (dv - 1) == 0:  # placed: no other value of this attribute goes there
                        for u in range(n):
                            if u != v and row[u] & dv:
                                row[u] &= ~dv
                                changed = True
                for h in range(n):  # a house that only one value can take gets it
                    bit = 1 << h
                    holders = [v for v in range(n) if row[v] & bit]
                    if not holders:
                        return False
                    if len(holders) == 1 and row[holders[0]] != bit:
                        row[holders[0]] = bit
                        changed = True
        return True

    def search(d: list[list[int]]) -> None:
        if not propagate(d):
            return
        best: tuple[int, int] | None = None
        best_n = n + 1
        for a in range(k):
            for v in range(n):
                c = d[a][v].bit_count()
                if 1 < c < best_n:
                    best, best_n = (a, v), c
        if best is None:
            found.append([[dv.bit_length() - 1 for dv in row] for row in d])
            return
        a, v = best
        rest = d[a][v]
        while rest and len(found) < limit:
            bit = rest & -rest
            rest ^= bit
            child = [row[:] for row in d]
            child[a][v] = bit
            search(child)

    search(dom)
    return found


def _random_clue(rng: random.Random, n: int, k: int, arr: Arrangement) -> Clue:
    """A random clue that is true of ``arr``."""
    while True:
        kind = rng.choices(
            ["pos", "notpos", "same", "notsame", "left", "before", "next"], [2, 1, 4, 1, 2, 1, 2]
        )[0]
        a = rng.randrange(k)
        x = [a, rng.randrange(n)]
        if kind in ("pos", "notpos"):
            house = arr[a][x[1]] if kind == "pos" else rng.choice([h for h in range(n) if h != arr[a][x[1]]])
            return [kind, x, house]
        b = rng.choice([i for i in range(k) if i != a]) if kind in ("same", "notsame") else rng.randrange(k)
        y = [b, rng.randrange(n)]
        if x == y:
            continue
        clue: Clue = [kind, x, y]
        if holds(clue, arr):
            return clue


def describe(clue: Clue) -> str:
    def who(x: Sequence[int]) -> str:
        name, values = ATTRIBUTES[x[0]]
        return _PHRASE[name].format(v=values[x[1]])

    kind, x = clue[0], who(clue[1])
    if kind == "pos":
        text = f"{x} lives in house {clue[2] + 1}."
    elif kind == "notpos":
        text = f"{x} does not live in house {clue[2] + 1}."
    else:
        y = who(clue[2])
        text = {
            "same": f"{x} is {y}.",
            "notsame": f"{x} is not {y}.",
            "left": f"{x} lives directly left of {y}.",
            "before": f"{x} lives somewhere to the left of {y}.",
            "next": f"{x} and {y} live next to each other.",
        }[kind]
    return text[0].upper() + text[1:]


def generate(rng: random.Random, cfg: Config) -> Item:
    n, k = cfg.num_houses, cfg.num_attributes
    arr: Arrangement = [rng.sample(range(n), n) for _ in range(k)]
    clues = [_random_clue(rng, n, k, arr) for _ in range(n)]
    while len(found := solutions(n, k, clues, 2)) > 1:
        alt = found[0] if found[0] != arr else found[1]
        for _ in range(1000):  # a true clue that the other arrangement breaks
            clue = _random_clue(rng, n, k, arr)
            if not holds(clue, alt):
                break
        clues.append(clue)
    if cfg.prune:
        for clue in rng.sample(clues, len(clues)):
            rest = [c for c in clues if c is not clue]
            if len(solutions(n, k, rest, 2)) == 1:
                clues = rest
    attrs = ATTRIBUTES[:k]
    lists = "\n".join(f"- {name}: {', '.join(values[:n])}" for name, values in attrs)
    houses = [[attrs[a][1][v] for a in range(k) for v in range(n) if arr[a][v] == h] for h in range(n)]
    answer = "\n".join(f"House {h + 1}: {', '.join(vals)}" for h, vals in enumerate(houses))
    order = ", ".join(name for name, _ in attrs)
    question = (
        f"There are {n} houses in a row, numbered 1 to {n} from left to right. Each house has exactly one "
        f"value of each attribute below, and no two houses share a value:\n{lists}\n\nClues:\n"
        + "\n".join(f"{i + 1}. {describe(c)}" for i, c in enumerate(clues))
        + "\n\nWork out every house."
        + instruction(
            f"Write one line per house, 'House <number>: <{order}>', e.g. "
            f"<answer>\nHouse 1: {', '.join(name.upper() for name, _ in attrs)}\n...\n</answer>"
        )
    )
    info: dict[str, Any] = {"num_houses": n, "num_attributes": k, "clues": clues}
    return {"question": question, "answer": answer, "info": info}


_HOUSE = re.compile(r"^\W*(?:house\s*)?(\d+)\b", re.IGNORECASE)


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    n, k = int(info["num_houses"]), int(info["num_attributes"])
    text = bounded(answer_text, 3000)
    if text is None:
        return 0.0
    arr: Arrangement = [[-1] * n for _ in range(k)]
    seen: set[int] = set()
    for line in text.splitlines():
        m = _HOUSE.match(line)
        if m is None:
            continue
        house = int(m.group(1)) - 1 if len(m.group(1)) < 3 else -1
        if not 0 <= house < n or house in seen:
            return 0.0
        seen.add(house)
        rest = line[m.end() :].lower()
        for a in range(k):
            hits = [
                v for v, value in enumerate(ATTRIBUTES[a][1][:n]) if re.search(rf"\b{value.lower()}\b", rest)
            ]
            if len(hits) != 1 or arr[a][hits[0]] != -1:
                return 0.0
            arr[a][hits[0]] = house
    if len(seen) != n:
        return 0.0
    return 1.0 if all(holds(c, arr) for c in info["clues"]) else 0.0


SPEC = TaskSpec(
    name="zebra_puzzle",
    description="Einstein-style puzzle: place every attribute value in a row of houses from clues.",
    answer_format="one line per house: 'House 1: value, value, ...'",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
)
