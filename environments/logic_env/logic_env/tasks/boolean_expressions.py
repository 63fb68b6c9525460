"""Boolean expressions: evaluate a nested expression over True/False (and, at higher difficulty,
named variables with given values, ``xor`` and implications).

The expression is stored as a tree and evaluated by this module; the answer is one word.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

#: A node: True/False | variable name | ["not", x] | [op, x, y] with op in and/or/xor/implies.
Node = Any
VARS = ("p", "q", "r", "s", "t", "u")
_WORD = re.compile(r"^\W*(true|false)\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class Config:
    depth: int = 3
    use_variables: bool = False
    extended_ops: bool = False

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(depth=2),
            "medium": cls(depth=3, use_variables=True),
            "hard": cls(depth=5, use_variables=True, extended_ops=True),
        }[difficulty]

    def validate(self) -> None:
        if not 1 <= self.depth <= 8:
            raise ValueError("depth must be between 1 and 8")


def evaluate(node: Node, env: Mapping[str, bool]) -> bool:
    if isinstance(node, bool):
        return node
    if isinstance(node, str):
        return env[node]
    op = node[0]
    if op == "not":
        return not evaluate(node[1], env)
    a, b = evaluate(node[1], env), evaluate(node[2], env)
    return {"and": a and b, "or": a or b, "xor": a != b, "implies": (not a) or b}[op]


def render(node: Node, top: bool = True) -> str:
    if isinstance(node, bool):
        return str(node)
    if isinstance(node, str):
        return node
    if node[0] == "not":
        return f"not {render(node[1], top=False)}"
    text = f"{render(node[1], top=False)} {node[0]} {render(node[2], top=False)}"
    return text if top else f"({text})"


def _build(rng: random.Random, depth: int, cfg: Config, names: list[str]) -> Node:
    if depth == 0 or (depth < cfg.depth and rng.random() < 0.25):
        if names and rng.random() < 0.5:
            return rng.choice(names)
        return rng.random() < 0.5
    if rng.random() < 0.2:
        return ["not", _build(rng, depth - 1, cfg, names)]
    ops = ["and", "or"] + (["xor", "implies"] if cfg.extended_ops else [])
    return [rng.choice(ops), _build(rng, depth - 1, cfg, names), _build(rng, depth - 1, cfg, names)]


def generate(rng: random.Random, cfg: Config) -> Item:
    names = sorted(rng.sample(VARS, rng.randint(2, 4))) if cfg.use_variables else []
    env = {n: rng.random() < 0.5 for n in names}
    want = rng.random() < 0.5  # balance True and False answers
    for _ in range(100):
        expr = _build(rng, cfg.depth, cfg, names)
        if evaluate(expr, env) == want:
            break
    value = evaluate(expr, env)
    given = ""
    if names:
        given = "Let " + ", ".join(f"{n} = {env[n]}" for n in names) + ".\n"
    ops_note = (
        " ('a xor b' is true when exactly one side is true; 'a implies b' is false only when a is true and b is false)"
        if cfg.extended_ops
        else ""
    )
    question = (
        f"{given}Evaluate the following Boolean expression{ops_note}. 'not' applies to what immediately "
        f"follows it, and parentheses group as written.\n\n{render(expr)}"
        + instruction("Write True or False, e.g. <answer>True</answer>.")
    )
    info: dict[str, Any] = {"expression": expr, "env": env}
    return {"question": question, "answer": str(value), "info": info}


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    text = bounded(answer_text, 50)
    if text is None:
        return 0.0
    m = _WORD.match(text)
    if m is None:
        return 0.0
    info = item["info"]
    value = evaluate(info["expression"], info.get("env", {}))
    return 1.0 if (m.group(1).lower() == "true") == value else 0.0


SPEC = TaskSpec(
    name="boolean_expressions",
    description="Evaluate a nested Boolean expression (with variables and xor/implies when harder).",
    answer_format="True or False",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
)
