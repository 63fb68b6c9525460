"""How a solution is judged, following LiveCodeBench's own grader (``lcb_runner/evaluation/testing_util.py``).

- **The program's namespace.** The grader runs every solution under a header that star-imports a fixed list
  of standard modules (so ``sqrt``, ``deque`` or ``List`` work unimported), imports them by name, and raises
  the recursion limit to 50,000; its evaluator also raises the int-to-string limit to 50,000 digits.
  ``harness_header()`` is that header, run once in the sandbox before the tests.
- **stdin/stdout tests** (AtCoder, Codeforces): the output and the expected output are trimmed, split on
  newlines and each line stripped; the line counts must agree, and each line must be equal as text or, when
  both are whitespace-separated numbers, equal as ``Decimal`` lists (``2.50`` equals ``2.5``, ``1e2`` equals
  ``100``; there is no tolerance: ``0.3333`` is not ``0.33333``).
- **functional tests** (LeetCode): the input holds one JSON value per line, the arguments; the test calls
  ``Solution().<func_name>(*arguments)`` (or a top-level ``<func_name>`` when there is no ``Solution`` class)
  and passes when the return value ``==`` the JSON-decoded expected output (a tuple counts as a list).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from code_env import OutputComparator, ProblemTests

from livecodebench.cases import InvalidTestsError, TestCase

#: Modules whose public names the grader's header star-imports, in its order (a later one shadows an earlier
#: one: ``builtins`` puts ``open`` back after ``io``, ``typing`` comes last).
STAR_IMPORTS = (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
    "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing",
)  # fmt: skip
#: Modules it then imports by name (after the star imports: ``datetime`` is the module, not the class).
MODULE_IMPORTS = STAR_IMPORTS[:-2]
RECURSION_LIMIT = 50_000
INT_MAX_STR_DIGITS = 50_000


def harness_header() -> str:
    """Python source run before the tests; the names it defines are predefined in every test."""
    lines = [f"from {m} import *" for m in STAR_IMPORTS]
    lines += [f"import {m}" for m in MODULE_IMPORTS]
    lines.append(f"sys.setrecursionlimit({RECURSION_LIMIT})")
    lines.append(
        f"if hasattr(sys, 'set_int_max_str_digits'): sys.set_int_max_str_digits({INT_MAX_STR_DIGITS})"
    )
    return "\n".join(lines) + "\n"


# --- comparing -------------------------------------------------------------------------------------
def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def _line_matches(got: str, expected: str) -> bool:
    if got == expected:
        return True
    got_numbers, expected_numbers = _decimals(got), _decimals(expected)
    if got_numbers is None or expected_numbers is None:
        return False
    try:
        return got_numbers == expected_numbers
    except InvalidOperation:  # a signalling NaN cannot be compared
        return False


def stdout_matches(got: str, expected: str) -> bool:
    """Whether a stdin/stdout test's output passes (the rule in the module docstring)."""
    got_lines, expected_lines = _stripped_lines(got), _stripped_lines(expected)
    if len(got_lines) != len(expected_lines):
        return False
    return all(_line_matches(g, e) for g, e in zip(got_lines, expected_lines, strict=True))


def value_matches(got: Any, expected: Any) -> bool:
    """Whether a functional test's return value (decoded from JSON) equals the expected one."""
    if isinstance(got, tuple):
        got = list(got)
    try:
        return bool(got == expected)
    except Exception:  # an exotic value whose == raises: not equal
        return False


# --- the tests of a problem ------------------------------------------------------------------------
def _arguments(text: str, where: str) -> list[Any]:
    try:
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    except ValueError as exc:
        raise InvalidTestsError(f"{where}: an argument line is not JSON ({exc})") from None


def problem_tests(cases: Sequence[TestCase], fn_name: str | None, *, row: str) -> ProblemTests:
    """The tests in code-env's shape: stdin/stdout when the problem has no ``func_name`` (as LiveCodeBench
    decides), otherwise calls with the JSON-decoded arguments and expected values."""
    if not fn_name:
        return ProblemTests(fn_name=None, inputs=[c.input for c in cases], outputs=[c.output for c in cases])
    inputs, outputs = [], []
    for i, case in enumerate(cases):
        where = f"{row}: test {i}"
        inputs.append(_arguments(case.input, where))
        try:
            outputs.append(json.loads(case.output))
        except ValueError as exc:
            raise InvalidTestsError(f"{where}: the expected output is not JSON ({exc})") from None
    return ProblemTests(fn_name=fn_name, inputs=inputs, outputs=outputs)


def comparator(fn_name: str | None) -> OutputComparator:
    """The comparison of a problem's tests."""
    return value_matches if fn_name else stdout_matches
