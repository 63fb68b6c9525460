"""A small exact evaluator for arithmetic written by a model: ``ast`` with a node whitelist, ``Fraction``
values, integer literals only, no powers, no names, no calls. Model text is parsed, never executed."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

#: Characters an arithmetic answer may contain (``×``/``÷`` are normalised first).
_ALLOWED_CHARS = re.compile(r"^[0-9+\-*/()\s]*$")
MAX_EXPR_CHARS = 200
#: Operators by symbol, for families that restrict them.
OP_SYMBOLS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


class NotArithmetic(ValueError):
    """The text is not an allowed arithmetic expression."""


@dataclass(frozen=True)
class Evaluated:
    value: Fraction
    #: Every integer literal, in order of appearance.
    numbers: tuple[int, ...]
    #: Every binary operator symbol used.
    ops: frozenset[str]


def normalize(text: str) -> str:
    return text.replace("×", "*").replace("÷", "/").replace("−", "-").replace("x", "*").replace("X", "*")


def evaluate(text: str, *, allow_unary_minus: bool = False, max_chars: int = MAX_EXPR_CHARS) -> Evaluated:
    """Exact value of ``text``; raises ``NotArithmetic`` for anything but ``+ - * /``, parentheses and
    integer literals (division by zero included)."""
    expr = normalize(text).strip()
    if not expr or len(expr) > max_chars:
        raise NotArithmetic("empty or too long")
    if not _ALLOWED_CHARS.match(expr) or "**" in expr or "//" in expr:
        raise NotArithmetic("disallowed characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotArithmetic(f"not an expression: {exc}") from None
    numbers: list[int] = []
    ops: set[str] = set()

    def walk(node: ast.AST, depth: int) -> Fraction:
        if depth > 64:
            raise NotArithmetic("nested too deeply")
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if node.value > 10**9:
                raise NotArithmetic("literal too large")
            numbers.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in OP_SYMBOLS:
            left = walk(node.left, depth + 1)
            right = walk(node.right, depth + 1)
            ops.add(OP_SYMBOLS[type(node.op)])
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if right == 0:
                raise NotArithmetic("division by zero")
            return left / right
        if allow_unary_minus and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand, depth + 1)
        raise NotArithmetic(f"disallowed syntax: {type(node).__name__}")

    value = walk(tree.body, 0)
    return Evaluated(value, tuple(numbers), frozenset(ops))
