"""A seeded procedural generator of math problems whose answers are computed with sympy.

Item ``i`` of seed ``s`` depends only on ``(s, i, difficulty)``, so more items extend a run without
changing the first ones. ``difficulty`` (1 easy … 3 hard) scales the numbers and picks harder variants.
Every item carries alternative notations of its answer in ``info["alternatives"]`` (all verified equal
by the tests).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

Problem = tuple[str, str, list[str]]  # question, gold answer (LaTeX), alternative notations

FAMILIES = (
    "arithmetic",
    "fraction_sum",
    "linear_equation",
    "quadratic_roots",
    "radical",
    "circle",
    "linear_system",
    "inequality",
    "gcd_lcm",
    "series",
)


def _nonzero(rng: random.Random, lo: int, hi: int) -> int:
    while True:
        v = rng.randint(lo, hi)
        if v != 0:
            return v


def _frac_forms(value: Any) -> list[str]:
    """Alternative notations of a rational (plain slash form, a decimal when it terminates)."""
    import sympy as sp

    value = sp.Rational(value)
    p, q = int(value.p), int(value.q)
    if q == 1:
        return [str(p), f"{p}.0"]
    forms = [f"{p}/{q}", f"\\frac{{{2 * p}}}{{{2 * q}}}"]
    qq = q
    for f in (2, 5):
        while qq % f == 0:
            qq //= f
    if qq == 1:  # terminating decimal
        forms.append(str(sp.Float(value, 30)).rstrip("0").rstrip("."))
    return forms


def _arithmetic(rng: random.Random, level: int) -> Problem:
    hi = 10 ** (level + 1)
    a, b, c, d = (rng.randint(2, hi) for _ in range(4))
    op1, op2 = rng.choice("+-"), rng.choice("+-")
    mult = rng.randint(2, 5 * level + 4)
    expr = f"({a} {op1} {b}) \\times {mult} {op2} {c}"
    value = (a + b if op1 == "+" else a - b) * mult + (c if op2 == "+" else -c)
    if level >= 3:
        expr += f" - {d}^2"
        value -= d * d
    return f"Compute ${expr}$.", str(value), [f"{value}.0", f"x = {value}"]


def _fraction_sum(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    hi = 6 + 6 * level
    a, b = rng.randint(1, hi), rng.randint(2, hi)
    c, d = rng.randint(1, hi), rng.randint(2, hi)
    op = rng.choice(["+", "-"]) if level >= 2 else "+"
    value = sp.Rational(a, b) + (sp.Rational(c, d) if op == "+" else -sp.Rational(c, d))
    q = f"Compute $\\frac{{{a}}}{{{b}}} {op} \\frac{{{c}}}{{{d}}}$ and simplify."
    return q, sp.latex(value), _frac_forms(value)


def _linear_equation(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    x = sp.Symbol("x")
    hi = 5 * level + 4
    a, c = _nonzero(rng, -hi, hi), _nonzero(rng, -hi, hi)
    while c == a:
        c = _nonzero(rng, -hi, hi)
    b, d = rng.randint(-hi * 3, hi * 3), rng.randint(-hi * 3, hi * 3)
    (sol,) = sp.solve(sp.Eq(a * x + b, c * x + d), x)
    lhs, rhs = sp.latex(a * x + b), sp.latex(c * x + d)
    return f"Solve for $x$: ${lhs} = {rhs}$.", sp.latex(sol), [f"x = {sp.latex(sol)}", *_frac_forms(sol)]


def _quadratic_roots(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    x = sp.Symbol("x")
    hi = 3 * level + 3
    r1 = rng.randint(-hi, hi)
    r2 = rng.randint(-hi, hi)
    while r2 == r1:
        r2 = rng.randint(-hi, hi)
    k = rng.randint(1, level)
    poly = sp.expand(k * (x - r1) * (x - r2))
    lo_r, hi_r = sorted((r1, r2))
    gold = f"{lo_r}, {hi_r}"
    alts = [f"{hi_r}, {lo_r}", f"\\{{{lo_r}, {hi_r}\\}}", f"\\{{{hi_r},{lo_r}\\}}"]
    return f"Find all real solutions of ${sp.latex(poly)} = 0$.", gold, alts


def _radical(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    a = rng.randint(2, 3 + 3 * level)
    b = rng.choice([2, 3, 5, 6, 7, 10, 11, 13][: 3 + 2 * level])
    value = a * sp.sqrt(b)
    if level >= 2 and rng.random() < 0.5:
        c = rng.randint(2, 6)
        q = f"Simplify $\\sqrt{{{a * a * b}}} + \\sqrt{{{c * c * b}}}$."
        value = (a + c) * sp.sqrt(b)
    else:
        q = f"Simplify $\\sqrt{{{a * a * b}}}$."
    coef = int(value / sp.sqrt(b))
    gold = f"{coef}\\sqrt{{{b}}}"
    return q, gold, [f"{coef} \\sqrt{{{b}}}", f"\\sqrt{{{b}}} \\cdot {coef}", f"{coef}\\cdot\\sqrt{{{b}}}"]


def _circle(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    r = rng.randint(2, 4 + 4 * level)
    kind = rng.choice(["area", "circumference", "sphere"] if level >= 2 else ["area", "circumference"])
    if kind == "area":
        q, value = f"What is the area of a circle with radius {r}?", r * r * sp.pi
    elif kind == "circumference":
        q, value = f"What is the circumference of a circle with radius {r}?", 2 * r * sp.pi
    else:
        q, value = f"What is the volume of a sphere with radius {r}?", sp.Rational(4, 3) * r**3 * sp.pi
    coef = sp.Rational(value / sp.pi)
    gold = sp.latex(value)
    alts = [f"\\pi \\cdot {sp.latex(coef)}"]
    if coef.q == 1:
        alts.append(f"{coef} \\pi")
    else:
        alts.append(f"{coef.p}\\pi/{coef.q}")
    return q, gold, alts


def _linear_system(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    x, y = sp.symbols("x y")
    hi = 3 * level + 3
    xs, ys = rng.randint(-hi, hi), rng.randint(-hi, hi)
    while True:
        a, b, c, d = (_nonzero(rng, -level - 3, level + 3) for _ in range(4))
        if a * d - b * c != 0:
            break
    e1, e2 = sp.latex(sp.Eq(a * x + b * y, a * xs + b * ys)), sp.latex(sp.Eq(c * x + d * y, c * xs + d * ys))
    q = f"Solve the system ${e1}$, ${e2}$. Give the answer as $(x, y)$."
    return q, f"({xs}, {ys})", [f"({xs},{ys})", f"\\left({xs}, {ys}\\right)"]


def _inequality(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    x = sp.Symbol("x")
    a = _nonzero(rng, -3 * level - 2, 3 * level + 2)
    b, c = rng.randint(-10 * level, 10 * level), rng.randint(-10 * level, 10 * level)
    strict = rng.random() < 0.5
    rel = (a * x + b < c) if strict else (a * x + b <= c)
    sol = sp.solve_univariate_inequality(rel, x, relational=False)
    sym = "<" if strict else "\\le"
    q = f"Solve ${sp.latex(a * x + b)} {sym} {c}$. Give the answer in interval notation."
    lo, hi = sol.start, sol.end
    left = "(" if sol.left_open else "["
    right = ")" if sol.right_open else "]"
    lo_s, hi_s = sp.latex(lo), sp.latex(hi)
    gold = f"{left}{lo_s}, {hi_s}{right}"
    return q, gold, [f"{left}{lo_s},{hi_s}{right}", f"\\left{left}{lo_s}, {hi_s}\\right{right}"]


def _gcd_lcm(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    g = rng.randint(2, 6 * level + 6)
    m, n = rng.randint(2, 8 * level), rng.randint(2, 8 * level)
    a, b = g * m, g * n
    if rng.random() < 0.5:
        value = sp.gcd(a, b)
        q = f"What is the greatest common divisor of {a} and {b}?"
    else:
        value = sp.lcm(a, b)
        q = f"What is the least common multiple of {a} and {b}?"
    return q, str(value), [f"{value}.0"]


def _series(rng: random.Random, level: int) -> Problem:
    import sympy as sp

    n = rng.randint(5, 10 * level + 10)
    a0, d = rng.randint(-10, 20), _nonzero(rng, -5, 5 + level)
    k = sp.Symbol("k", integer=True)
    value = sp.summation(a0 + d * k, (k, 0, n - 1))
    q = f"What is the sum of the first {n} terms of the arithmetic sequence {a0}, {a0 + d}, {a0 + 2 * d}, ...?"
    return q, str(value), [f"{value}.0"]


_MAKERS: dict[str, Callable[[random.Random, int], Problem]] = {
    "arithmetic": _arithmetic,
    "fraction_sum": _fraction_sum,
    "linear_equation": _linear_equation,
    "quadratic_roots": _quadratic_roots,
    "radical": _radical,
    "circle": _circle,
    "linear_system": _linear_system,
    "inequality": _inequality,
    "gcd_lcm": _gcd_lcm,
    "series": _series,
}


def generate_item(index: int, *, seed: int, difficulty: int) -> dict[str, Any]:
    """Problem ``index`` of the stream for ``(seed, difficulty)``."""
    if difficulty not in (1, 2, 3):
        raise ValueError(f"difficulty must be 1, 2 or 3, not {difficulty!r}")
    rng = random.Random(f"math-env:{seed}:{difficulty}:{index}")
    family = FAMILIES[rng.randrange(len(FAMILIES))]
    question, answer, alternatives = _MAKERS[family](rng, difficulty)
    return {
        "question": question,
        "answer": answer,
        "info": {"family": family, "difficulty": difficulty, "alternatives": alternatives},
    }


def generate(num_examples: int, *, seed: int = 0, difficulty: int = 2) -> list[dict[str, Any]]:
    """``num_examples`` problems (question, answer, info) for ``seed``."""
    if num_examples < 1:
        raise ValueError("num_examples must be at least 1 for source='generated'")
    return [generate_item(i, seed=seed, difficulty=difficulty) for i in range(num_examples)]
