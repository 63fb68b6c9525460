"""Seeded source mutations for the task generator: small, realistic bugs in covered functions.

Every mutation edits the source text in place (a token or a line range), so the gold patch — the reverse
diff — is a minimal, readable change rather than a reformatted file. Operators:

- ``flip_comparison``: ``<`` -> ``>=``, ``==`` -> ``!=``, ``in`` -> ``not in`` …
- ``shift_bound``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, an integer constant ± 1, a ``range`` bound ± 1
- ``drop_branch``: delete an ``if`` statement without ``else`` (not the only statement of its block)
- ``swap_arguments``: swap the first two positional arguments of a call, or the operands of ``-``
- ``change_default``: a parameter's constant default changes (``True`` -> ``False``, ``n`` -> ``n + 1``)
- ``return_early``: the function's final ``return`` is repeated before an earlier statement
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = (
    "flip_comparison",
    "shift_bound",
    "drop_branch",
    "swap_arguments",
    "change_default",
    "return_early",
)
_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "==", "in": "not in", "not in": "in"}
_SHIFT = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_CMP_TOKENS = {"<", "<=", ">", ">=", "==", "!=", "in", "not", "is"}


@dataclass(frozen=True)
class Mutation:
    path: str
    operator: str
    function: str
    lineno: int
    #: the replaced span, as (line, col) pairs (1-based lines, 0-based columns), end exclusive
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str
    description: str

    @property
    def key(self) -> str:
        return f"{self.path}:{self.start[0]}:{self.start[1]}:{self.operator}:{self.replacement}"


def apply_mutation(source: str, m: Mutation) -> str:
    """``source`` with the mutation's span replaced (spans are on ASCII lines: columns are characters)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    a = offsets[m.start[0] - 1] + m.start[1]
    b = offsets[m.end[0] - 1] + m.end[1] if m.end[0] <= len(lines) else len(source)
    return source[:a] + m.replacement + source[b:]


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Functions and methods with their qualified names."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                yield name, child
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")

    yield from walk(tree, "")


def _tokens_between(
    toks: list[tokenize.TokenInfo], start: tuple[int, int], end: tuple[int, int]
) -> list[tokenize.TokenInfo]:
    return [t for t in toks if t.start >= start and t.end <= end and t.type in (tokenize.OP, tokenize.NAME)]


def _line_span(lines: list[str], node: ast.stmt) -> tuple[tuple[int, int], tuple[int, int]]:
    end = node.end_lineno or node.lineno
    return (node.lineno, 0), (end + 1, 0) if end < len(lines) else (end, len(lines[end - 1]))


def _indent(lines: list[str], lineno: int) -> str:
    line = lines[lineno - 1]
    return line[: len(line) - len(line.lstrip())]


def find_mutations(path: str, source: str, covered: set[int] | None = None) -> list[Mutation]:
    """Every mutation of ``source`` (a module) inside functions; only on ``covered`` lines if given."""
    tree = ast.parse(source)
    toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    out: list[Mutation] = []

    def add(
        op: str, fn: str, node: ast.AST, start: tuple[int, int], end: tuple[int, int], repl: str, desc: str
    ) -> None:
        lineno = getattr(node, "lineno", start[0])
        if covered is not None and lineno not in covered:
            return
        if not all(lines[i - 1].isascii() for i in range(start[0], min(end[0], len(lines)) + 1)):
            return  # ast columns are bytes, tokenize's are characters: keep to lines where they agree
        out.append(Mutation(path, op, fn, lineno, start, end, repl, desc))

    for fname, fn in _functions(tree):
        # defaults of the function's own parameters
        positional = [*fn.args.posonlyargs, *fn.args.args]
        pairs = list(
            zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults, strict=True)
        )
        pairs += [
            (a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None
        ]
        for arg, default in pairs:
            if not isinstance(default, ast.Constant) or default.end_col_offset is None:
                continue
            v = default.value
            new: str | None = None
            if isinstance(v, bool):
                new = repr(not v)
            elif isinstance(v, int):
                new = repr(v + 1)
            elif isinstance(v, float):
                new = repr(v * 2 if v else 1.0)
            elif isinstance(v, str):
                new = repr(v + " ") if v else "' '"
            if new is not None:
                span = (
                    (default.lineno, default.col_offset),
                    (default.end_lineno or default.lineno, default.end_col_offset),
                )
                # a default is evaluated at definition time: the coverage of the `def` line counts
                if covered is None or fn.lineno in covered:
                    out.append(
                        Mutation(
                            path,
                            "change_default",
                            fname,
                            fn.lineno,
                            span[0],
                            span[1],
                            new,
                            f"default of `{arg.arg}`",
                        )
                    )

        body_nodes = [n for stmt in fn.body for n in ast.walk(stmt)]
        for node in body_nodes:
            if isinstance(node, ast.Compare) and len(node.ops) == 1:
                left_end = (node.left.end_lineno or 0, node.left.end_col_offset or 0)
                right = node.comparators[0]
                right_start = (right.lineno, right.col_offset)
                op_toks = [t for t in _tokens_between(toks, left_end, right_start) if t.string in _CMP_TOKENS]
                if not op_toks:
                    continue
                text = " ".join(t.string for t in op_toks)
                span = (op_toks[0].start, op_toks[-1].end)
                if text in _FLIP:
                    add("flip_comparison", fname, node, *span, _FLIP[text], f"`{text}` -> `{_FLIP[text]}`")
                if text in _SHIFT:
                    add("shift_bound", fname, node, *span, _SHIFT[text], f"`{text}` -> `{_SHIFT[text]}`")
            elif (
                isinstance(node, ast.Constant)
                and type(node.value) is int
                and node.end_col_offset is not None
                and node.lineno == node.end_lineno
            ):
                seg = lines[node.lineno - 1][node.col_offset : node.end_col_offset]
                if not seg.isdigit():
                    continue
                span = ((node.lineno, node.col_offset), (node.lineno, node.end_col_offset))
                add("shift_bound", fname, node, *span, str(node.value + 1), f"constant {node.value} + 1")
                if node.value > 0:
                    add("shift_bound", fname, node, *span, str(node.value - 1), f"constant {node.value} - 1")
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
                    bound = node.args[-1] if len(node.args) <= 2 else node.args[1]
                    bseg = ast.get_source_segment(source, bound)
                    if bseg and not isinstance(bound, ast.Constant) and bound.lineno == bound.end_lineno:
                        span = ((bound.lineno, bound.col_offset), (bound.lineno, bound.end_col_offset or 0))
                        simple = isinstance(bound, ast.Name | ast.Attribute | ast.Call | ast.Subscript)
                        shifted = f"{bseg} - 1" if simple else f"({bseg}) - 1"
                        add("shift_bound", fname, node, *span, shifted, "range bound - 1")
                pos_args = [a for a in node.args if not isinstance(a, ast.Starred)]
                if len(pos_args) >= 2 and len(node.args) == len(pos_args):
                    a, b = pos_args[0], pos_args[1]
                    sa, sb = ast.get_source_segment(source, a), ast.get_source_segment(source, b)
                    if sa and sb and sa != sb and a.lineno == b.end_lineno:
                        span = ((a.lineno, a.col_offset), (b.end_lineno or b.lineno, b.end_col_offset or 0))
                        between = lines[a.lineno - 1][a.end_col_offset or 0 : b.col_offset]
                        add(
                            "swap_arguments",
                            fname,
                            node,
                            *span,
                            f"{sb}{between}{sa}",
                            "first two arguments swapped",
                        )
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
                sa, sb = ast.get_source_segment(source, node.left), ast.get_source_segment(source, node.right)
                if sa and sb and sa != sb and node.lineno == node.end_lineno and "\n" not in sa + sb:
                    span = (
                        (node.left.lineno, node.left.col_offset),
                        (node.right.lineno, node.right.end_col_offset or 0),
                    )
                    between = lines[node.lineno - 1][node.left.end_col_offset or 0 : node.right.col_offset]
                    add("swap_arguments", fname, node, *span, f"{sb}{between}{sa}", "operands of `-` swapped")

        # statement-level operators, on every block of the function
        for node in [fn, *body_nodes]:
            for field in ("body", "orelse"):
                block = getattr(node, field, None)
                if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                    continue
                for stmt in block:
                    if (
                        isinstance(stmt, ast.If)
                        and not stmt.orelse
                        and len(block) > 1
                        and not (node is fn and stmt is block[-1])
                    ):
                        start, end = _line_span(lines, stmt)
                        add("drop_branch", fname, stmt, start, end, "", f"`if` at line {stmt.lineno} removed")
        body = fn.body
        final = body[-1]
        if isinstance(final, ast.Return) and final.lineno == final.end_lineno:
            ret = lines[final.lineno - 1].strip()
            first = (
                1
                if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
                else 0
            )
            for stmt in body[first + 1 : -1]:
                if isinstance(stmt, ast.Return):
                    continue
                indent = _indent(lines, stmt.lineno)
                add(
                    "return_early",
                    fname,
                    stmt,
                    (stmt.lineno, 0),
                    (stmt.lineno, 0),
                    f"{indent}{ret}\n",
                    f"early `{ret}`",
                )
    # one mutation per (span, replacement): an op can be found twice (e.g. nested walks)
    seen: set[str] = set()
    unique: list[Mutation] = []
    for m in out:
        if m.key not in seen:
            seen.add(m.key)
            unique.append(m)
    return unique
