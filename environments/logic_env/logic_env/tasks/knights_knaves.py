"""Knights and knaves: knights always tell the truth, knaves always lie; decide who is which.

Statements are generated for a hidden assignment so that each knight's statement is true and each
knave's is false; a puzzle is kept only if exactly one assignment fits. The verifier checks the
answer against the statements (consistency), not against the stored assignment.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

NAMES = (
    "Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kavya", "Luca", "Mira", "Nadia", "Oscar", "Priya", "Quinn", "Rosa", "Samir", "Tomas",
)  # fmt: skip

#: A statement as JSON: ["is", person, knight?] | ["not", s] | ["and"|"or"|"iff"|"imp", s, t]
#: | ["count", [people], k] (exactly k of them are knights).
Formula = list[Any]


@dataclass(frozen=True)
class Config:
    num_people: int = 3
    #: Allow compound statements (and/or/iff/if-then) and counting statements.
    compound: bool = True
    counting: bool = False

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_people=2, compound=True, counting=False),
            "medium": cls(num_people=3, compound=True, counting=False),
            "hard": cls(num_people=5, compound=True, counting=True),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_people <= 8:
            raise ValueError("num_people must be between 2 and 8")


def evaluate(f: Formula, knights: Sequence[bool]) -> bool:
    op = f[0]
    if op == "is":
        return knights[f[1]] == f[2]
    if op == "not":
        return not evaluate(f[1], knights)
    if op == "count":
        return sum(knights[p] for p in f[1]) == f[2]
    a, b = evaluate(f[1], knights), evaluate(f[2], knights)
    return {"and": a and b, "or": a or b, "iff": a == b, "imp": (not a) or b}[op]


def render(f: Formula, names: Sequence[str], speaker: int) -> str:
    def who(p: int) -> str:
        return "I" if p == speaker else names[p]

    def atom(g: Formula) -> str:
        p, kind = g[1], "a knight" if g[2] else "a knave"
        return f"{who(p)} {'am' if p == speaker else 'is'} {kind}"

    op = f[0]
    if op == "is":
        return atom(f)
    if op == "not":
        return f"it is not true that {render(f[1], names, speaker)}"
    if op == "count":
        group = ", ".join(who(p) for p in f[1])
        return f"exactly {f[2]} of {group} {'is a knight' if f[2] == 1 else 'are knights'}"
    a, b = render(f[1], names, speaker), render(f[2], names, speaker)
    return {
        "and": f"{a} and {b}",
        "or": f"{a} or {b} (or both)",
        "iff": f"{a} if and only if {b}",
        "imp": f"if {a}, then {b}",
    }[op]


def _random_formula(rng: random.Random, n: int, speaker: int, cfg: Config) -> Formula:
    def atom(exclude: int | None = None) -> Formula:
        p = rng.choice([q for q in range(n) if q != exclude])
        return ["is", p, rng.random() < 0.5]

    roll = rng.random()
    if cfg.counting and n >= 3 and roll < 0.25:
        group = sorted(rng.sample(range(n), rng.randint(2, min(n, 4))))
        return ["count", group, rng.randint(0, len(group))]
    if cfg.compound and roll < 0.75:
        a = atom(exclude=speaker)
        b = atom(exclude=a[1])
        return [rng.choice(["and", "or", "iff", "imp"]), a, b]
    return atom(exclude=speaker)


def generate(rng: random.Random, cfg: Config) -> Item:
    n = cfg.num_people
    names = sorted(rng.sample(NAMES, n))
    for _ in range(10_000):
        knights = [rng.random() < 0.5 for _ in range(n)]
        statements: list[Formula] = []
        for p in range(n):
            for _ in range(100):  # resample until the statement's truth matches the speaker's type
                f = _random_formula(rng, n, p, cfg)
                if evaluate(f, knights) == knights[p]:
                    break
            else:
                f = ["is", p, True] if knights[p] else ["not", ["is", (p + 1) % n, knights[(p + 1) % n]]]
            statements.append(f)
        fitting = [
            list(a)
            for a in itertools.product((True, False), repeat=n)
            if all(evaluate(s, a) == a[p] for p, s in enumerate(statements))
        ]
        if fitting == [knights]:
            break
    else:  # pragma: no cover
        raise RuntimeError("could not build a puzzle with a unique solution")
    lines = [f'{names[p]} says: "{_capital(render(s, names, p))}."' for p, s in enumerate(statements)]
    answer = ", ".join(f"{names[p]}: {'knight' if knights[p] else 'knave'}" for p in range(n))
    question = (
        f"On an island, every inhabitant is either a knight, who always tells the truth, or a knave, who "
        f"always lies. You meet {n} inhabitants: {', '.join(names)}.\n\n"
        + "\n".join(lines)
        + "\n\nWho is a knight and who is a knave?"
        + instruction(
            "List every inhabitant as 'Name: knight' or 'Name: knave', separated by commas, e.g. "
            "<answer>Zed: knight, Yan: knave</answer>."
        )
    )
    info: dict[str, Any] = {"names": names, "statements": statements}
    return {"question": question, "answer": answer, "info": info}


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    names: list[str] = info["names"]
    text = bounded(answer_text, 2000)
    if text is None:
        return 0.0
    pattern = re.compile(
        r"\b(" + "|".join(map(re.escape, names)) + r")\b\s*(?:is|:|=|-|—)?\s*(?:an?\s+)?(knight|knave)s?\b",
        re.IGNORECASE,
    )
    found: dict[str, bool] = {}
    lookup = {n.lower(): n for n in names}
    for m in pattern.finditer(text):
        name, kind = lookup[m.group(1).lower()], m.group(2).lower() == "knight"
        if found.setdefault(name, kind) != kind:
            return 0.0  # contradicts itself
    if set(found) != set(names):
        return 0.0
    knights = [found[n] for n in names]
    ok = all(evaluate(s, knights) == knights[p] for p, s in enumerate(info["statements"]))
    return 1.0 if ok else 0.0


SPEC = TaskSpec(
    name="knights_knaves",
    description="Decide who is a knight (always truthful) and who is a knave (always lying).",
    answer_format="'Name: knight, Name: knave, ...' for every inhabitant",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
)
