"""Scoring a Python solution against a problem's tests in one sandbox round trip.

``score_solution(code, tests, sandbox)`` uploads one bundle (the solution, the test *inputs* and the
runner script), runs the runner once, and compares the outputs it reports with the expected outputs
here, outside the sandbox: the expected outputs never enter it, so a solution cannot read them.
"""

from __future__ import annotations

import json
import marshal
import math
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from verifiers.errors import SandboxError
from verifiers.sandbox import Sandbox, SandboxLimits

__all__ = [
    "CaseResult",
    "OutputComparator",
    "ProblemTests",
    "ScoreReport",
    "ScoringLimits",
    "default_comparator",
    "score_solution",
    "stdout_matches",
    "values_match",
]

FLOAT_TOLERANCE = 1e-3
#: ``compare(got, expected)``: whether a test's output passes. ``got`` is the program's stdout (stdin/stdout
#: tests) or the function's return value decoded from JSON (call tests); ``expected`` is the test's output.
OutputComparator = Callable[[Any, Any], bool]
#: First line the runner prints: without it the runner never started (an infrastructure problem).
RUNNER_STARTED = "VF-CODE-RUNNER-STARTED"


class ProblemTests(BaseModel):
    """A problem's tests. ``fn_name`` null: stdin/stdout tests (inputs and outputs are strings);
    otherwise each input is the list of positional arguments and each output the return value."""

    fn_name: str | None = None
    inputs: list[Any]
    outputs: list[Any]

    @model_validator(mode="after")
    def _check(self) -> ProblemTests:
        if not self.fn_name:
            self.fn_name = None
        if len(self.inputs) != len(self.outputs):
            raise ValueError(f"{len(self.inputs)} test inputs but {len(self.outputs)} outputs")
        if self.fn_name is None:
            # Some sources store a stdin test as a list of lines.
            self.inputs = [_as_text(x) for x in self.inputs]
            self.outputs = [_as_text(x) for x in self.outputs]
        return self

    @property
    def mode(self) -> Literal["stdin", "call"]:
        return "stdin" if self.fn_name is None else "call"

    def __len__(self) -> int:
        return len(self.inputs)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"
    return json.dumps(value)


class ScoringLimits(BaseModel):
    """Per-test limits enforced inside the sandbox."""

    timeout: float = Field(default=6.0, gt=0, description="wall-clock seconds per test")
    memory_mb: int = Field(default=1024, ge=64, description="address-space limit per test")
    max_output_bytes: int = Field(default=2 << 20, ge=1024, description="stdout limit per test")

    def sandbox_limits(self, max_tests: int) -> SandboxLimits:
        """Limits for sandboxes that run up to ``max_tests`` tests per exec: room for the runner and for
        the report (the outputs of every test, JSON-escaped)."""
        return SandboxLimits(
            memory_mb=max(self.memory_mb, 256),
            cpu_s=math.ceil(self.timeout) + 5,
            max_file_mb=max(64, math.ceil(self.max_output_bytes / (1 << 20)) + 1),
            max_output_bytes=2 * max_tests * self.max_output_bytes + (1 << 20),
        )


CaseStatus = Literal["passed", "wrong", "error", "timeout", "killed", "skipped"]


class CaseResult(BaseModel):
    status: CaseStatus
    time: float = 0.0
    #: The error text (stderr tail) for ``error``/``killed``; kept short.
    detail: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class ScoreReport(BaseModel):
    """Per-test outcomes of one solution, in test order."""

    cases: list[CaseResult]

    @property
    def num_tests(self) -> int:
        return len(self.cases)

    @property
    def num_passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def passed(self) -> bool:
        """Every test passed (a problem with no tests never passes)."""
        return bool(self.cases) and self.num_passed == len(self.cases)

    @property
    def pass_rate(self) -> float:
        return self.num_passed / len(self.cases) if self.cases else 0.0

    @property
    def timeouts(self) -> int:
        return sum(c.status == "timeout" for c in self.cases)

    @property
    def num_run(self) -> int:
        """Tests that ran (all but those ``stop_on_failure`` skipped)."""
        return sum(c.status != "skipped" for c in self.cases)

    @property
    def runtime_errors(self) -> int:
        """Tests that raised, exited non-zero or were killed (memory, output, a signal)."""
        return sum(c.status in ("error", "killed") for c in self.cases)

    def metrics(self) -> dict[str, float]:
        return {
            "pass_rate": self.pass_rate,
            "num_tests": float(self.num_tests),
            "timeouts": float(self.timeouts),
        }


# --- comparing outputs -----------------------------------------------------------------------------
def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _tokens_close(got: list[str], expected: list[str], tolerance: float) -> bool:
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected, strict=True):
        if g == e:
            continue
        a, b = _number(g), _number(e)
        if a is None or b is None or abs(a - b) > tolerance:
            return False
    return True


def stdout_matches(got: str, expected: str, *, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """A stdin/stdout test passes when the output matches under any of: exact after trimming; line by
    line with blank lines dropped and each line stripped; token by token; token by token with numeric
    tokens equal within ``tolerance``. (Each rule accepts more than the previous one; the cheap ones
    come first.)"""
    if got.strip() == expected.strip():
        return True
    if _lines(got) == _lines(expected):
        return True
    got_tokens, expected_tokens = got.split(), expected.split()
    if got_tokens == expected_tokens:
        return True
    return _tokens_close(got_tokens, expected_tokens, tolerance)


def _normalise(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_normalise(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def _equal(got: Any, expected: Any, tolerance: float) -> bool:
    if isinstance(got, bool) or isinstance(expected, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(got, int | float) and isinstance(expected, int | float):
        if isinstance(got, int) and isinstance(expected, int):
            return got == expected
        return math.isclose(got, expected, rel_tol=0.0, abs_tol=tolerance) or got == expected
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(
            _equal(g, e, tolerance) for g, e in zip(got, expected, strict=True)
        )
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(_equal(got[k], expected[k], tolerance) for k in got)
    return bool(got == expected)


def values_match(got: Any, expected: Any, *, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """A function-call test passes when the return value equals the expected one, tuples compared as
    lists and floats within ``tolerance``. Datasets in the APPS/TACO tradition wrap the expected value
    in a one-element list, so ``[x]`` also accepts ``x``."""
    got, expected = _normalise(got), _normalise(expected)
    if _equal(got, expected, tolerance):
        return True
    return isinstance(expected, list) and len(expected) == 1 and _equal(got, expected[0], tolerance)


# --- the round trip --------------------------------------------------------------------------------
@cache
def runner_source() -> str:
    """The runner script uploaded with every problem (read once from the package)."""
    return resources.files("code_env").joinpath("runner.py").read_text(encoding="utf-8")


#: Identifies an interpreter's code-object format; the same expression runs in the sandbox (``_BOOT``).
_INTERPRETER_TAG = "repr((sys.version, sys.implementation.cache_tag, sys.implementation.name))"

#: What the sandbox runs (``python3 -c _BOOT <dir>``): the runner's code object as compiled here when the
#: sandbox's interpreter is this one (the built-in backends run the host's), else the runner compiled from
#: source. Compiling the runner costs ~15 ms of CPU a problem under gVisor; a plain ``python3 -c``
#: (like a plain ``python3 SCRIPT``) runs inside an interpreter the agent forked ahead of time.
_BOOT = f"""\
import marshal, sys
d = sys.argv[1]
with open(d + '/runner.code', 'rb') as f:
    tag, _, blob = f.read().partition(b'\\n')
if tag == {_INTERPRETER_TAG}.encode():
    code = marshal.loads(blob)
else:
    with open(d + '/runner.py', 'rb') as f:
        code = compile(f.read(), d + '/runner.py', 'exec')
exec(code, {{'__name__': '__main__', '__file__': d + '/runner.py', '__builtins__': __builtins__}})
"""


@cache
def runner_code() -> bytes:
    """``runner.code``: this interpreter's tag, a newline, the runner's code object (marshalled)."""
    tag = eval(_INTERPRETER_TAG, {"sys": sys}).encode()  # the very expression the sandbox evaluates
    return tag + b"\n" + marshal.dumps(compile(runner_source(), "runner.py", "exec"))


def _files(
    code: str,
    tests: ProblemTests,
    limits: ScoringLimits,
    *,
    header: str | None = None,
    stop_on_failure: bool = False,
) -> dict[str, bytes]:
    """The solution, the test inputs and the runner, as uploaded into the sandbox."""
    spec = {
        "mode": tests.mode,
        "fn_name": tests.fn_name,
        "inputs": tests.inputs,
        **limits.model_dump(),
        "header": header,
        "stop_on_failure": stop_on_failure,
    }
    return {
        "solution.py": code.encode(),
        "tests.json": json.dumps(spec, ensure_ascii=False).encode(),
        "runner.py": runner_source().encode(),
        "runner.code": runner_code(),
    }


def default_comparator(
    mode: Literal["stdin", "call"], tolerance: float = FLOAT_TOLERANCE
) -> OutputComparator:
    """The comparison code-env uses: ``stdout_matches`` for stdin/stdout tests, ``values_match`` for calls."""
    if mode == "stdin":
        return lambda got, expected: stdout_matches(str(got), expected, tolerance=tolerance)
    return lambda got, expected: values_match(got, expected, tolerance=tolerance)


def _compare(raw: Sequence[Mapping[str, Any]], tests: ProblemTests, compare: OutputComparator) -> ScoreReport:
    cases: list[CaseResult] = []
    for i, expected in enumerate(tests.outputs):
        r = raw[i]
        status = r.get("status")
        time_s = float(r.get("time") or 0.0)
        if status == "ok":
            out = r.get("out")
            if tests.mode == "stdin":
                out = str(out)
            cases.append(CaseResult(status="passed" if compare(out, expected) else "wrong", time=time_s))
        elif status == "skipped":
            cases.append(CaseResult(status="skipped"))
        elif status in ("error", "timeout", "killed"):
            detail = r.get("error")
            cases.append(
                CaseResult(status=status, time=time_s, detail=str(detail)[-500:] if detail else None)
            )
        else:
            cases.append(CaseResult(status="error", time=time_s, detail=f"runner reported status {status!r}"))
    return ScoreReport(cases=cases)


def parse_runner_output(
    stdout: str,
    tests: ProblemTests,
    *,
    tolerance: float = FLOAT_TOLERANCE,
    compare: OutputComparator | None = None,
) -> ScoreReport:
    """Turn the runner's stdout into a report.

    No start marker means the runner never ran: a ``SandboxError`` (infrastructure). A start marker
    without a valid report means the solution killed or wedged the runner: every test failed.
    """
    lines = stdout.splitlines()
    if RUNNER_STARTED not in lines[:1]:
        raise SandboxError(f"the test runner did not start: {stdout[-300:]!r}")
    for line in reversed(lines[1:]):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        results = report.get("results") if isinstance(report, dict) else None
        if isinstance(results, list) and len(results) == len(tests.inputs):
            return _compare(results, tests, compare or default_comparator(tests.mode, tolerance))
    failed = CaseResult(status="error", detail="the test runner was killed before reporting")
    return ScoreReport(cases=[failed.model_copy() for _ in tests.inputs])


async def score_solution(
    code: str,
    tests: ProblemTests | Mapping[str, Any],
    sandbox: Sandbox,
    *,
    limits: ScoringLimits | None = None,
    tolerance: float = FLOAT_TOLERANCE,
    compare: OutputComparator | None = None,
    header: str | None = None,
    stop_on_failure: bool = False,
) -> ScoreReport:
    """Run every test of a problem against ``code`` in ``sandbox`` (one upload, one exec).

    ``compare`` replaces the default comparison (``default_comparator``; ``tolerance`` is its float
    tolerance). ``header`` is Python source run once in the sandbox before the tests: the names it defines
    are predefined in every test (both modes), instead of the default names of call tests. With
    ``stop_on_failure`` the runner stops at the first test that does not run to completion (error, timeout,
    killed): the rest are ``skipped``. Wrong answers cannot stop it, since outputs are compared out here.

    Raises ``SandboxError`` when the sandbox fails (the caller may retry on a fresh
    one); a solution that crashes, hangs or misbehaves only fails its tests.
    """
    suite = tests if isinstance(tests, ProblemTests) else ProblemTests.model_validate(tests)
    limits = limits or ScoringLimits()
    if not suite.inputs:
        return ScoreReport(cases=[])
    workdir = f"code-env-{uuid.uuid4().hex[:12]}"  # unique, so a shared sandbox can score concurrently
    files = _files(code, suite, limits, header=header, stop_on_failure=stop_on_failure)
    await sandbox.upload_files(files, workdir)
    # The runner enforces each test's timeout; this outer bound only catches a wedged runner.
    budget = len(suite.inputs) * (limits.timeout + 1.0) + 15.0
    # No -I: the runner drops the working and bundle directories from sys.path itself.
    result = await sandbox.exec(["python3", "-c", _BOOT, workdir], timeout=budget)
    if result.timed_out:
        stuck = CaseResult(status="timeout", time=limits.timeout, detail="the test runner ran out of time")
        return ScoreReport(cases=[stuck.model_copy() for _ in suite.inputs])
    return parse_runner_output(result.stdout, suite, tolerance=tolerance, compare=compare)
