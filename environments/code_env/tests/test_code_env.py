"""code-env on the real sandbox backends: the oracle test over every bundled problem, hostile solutions,
sandbox failures, and whole runs through the engine and through ``vf-eval`` against the scripted server."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from code_env import (
    CodeEnv,
    ProblemTests,
    ScoreReport,
    ScoringLimits,
    load_environment,
    sample_records,
    score_solution,
)
from code_env.scoring import _files

import verifiers as vf
from tests.env_testing import run_vf_eval
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.errors import SandboxError
from verifiers.sandbox import SandboxPool, get_backend

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[3]


def answer(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}```\n"


async def score_on(backend: str, code: str, tests: dict[str, Any], **limits: Any) -> ScoreReport:
    """Score one solution on a fresh sandbox."""
    return (await score_many(backend, {"one": code}, tests, **limits))["one"]


async def score_many(
    backend: str, codes: dict[str, str], tests: dict[str, Any], **limits: Any
) -> dict[str, ScoreReport]:
    """Score several solutions one after the other on the same sandbox (which must survive each)."""
    lim = ScoringLimits(**limits)
    sandbox = await get_backend(backend).create(lim.sandbox_limits(len(tests["inputs"])))
    try:
        return {name: await score_solution(code, tests, sandbox, limits=lim) for name, code in codes.items()}
    finally:
        await sandbox.destroy()


async def test_every_bundled_problem_reference_passes_and_wrong_fails(secure_backend: str) -> None:
    limits = ScoringLimits(timeout=10.0)
    pool = SandboxPool(get_backend(secure_backend), size=4, limits=limits.sandbox_limits(15))
    async with pool:

        async def check(rec: dict[str, Any]) -> tuple[str, ScoreReport, ScoreReport]:
            async with pool.lease() as sb:
                good = await score_solution(rec["reference"], rec["tests"], sb, limits=limits)
            async with pool.lease() as sb:
                bad = await score_solution(rec["wrong"], rec["tests"], sb, limits=limits)
            return rec["id"], good, bad

        results = await asyncio.gather(*(check(r) for r in sample_records()))
    assert len(results) >= 30
    wrongly_failed = [(pid, good.cases) for pid, good, _ in results if not good.passed]
    wrongly_passed = [pid for pid, _, bad in results if bad.passed]
    assert not wrongly_failed and not wrongly_passed


STDIN_TESTS = {"fn_name": None, "inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]}


async def test_a_solution_that_never_ends_times_out(secure_backend: str) -> None:
    t0 = time.perf_counter()
    codes = {"sleeps": "import time\ntime.sleep(10**6)\n", "spins": "while True:\n    pass\n"}
    reports = await score_many(secure_backend, codes, STDIN_TESTS, timeout=1.0)
    assert time.perf_counter() - t0 < 20
    for report in reports.values():
        assert not report.passed
        assert report.metrics() == {"pass_rate": 0.0, "num_tests": 2.0, "timeouts": 2.0}


@pytest.fixture
def listener() -> Iterator[tuple[int, list[Any]]]:
    """A TCP server on the host's loopback that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[Any] = []
    yield server.getsockname()[1], accepted
    try:
        while True:
            conn, _ = server.accept()
            accepted.append(conn)
            conn.close()
    except OSError:
        pass
    server.close()


async def test_the_network_is_out_of_reach(secure_backend: str, listener: tuple[int, list[Any]]) -> None:
    port, accepted = listener
    code = (
        "import socket, urllib.request\n"
        "results = []\n"
        f"for target in [('127.0.0.1', {port}), ('1.1.1.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=2).close()\n"
        "        results.append('connected')\n"
        "    except OSError:\n"
        "        results.append('blocked')\n"
        "print(*results)\n"
    )
    tests = {"fn_name": None, "inputs": [""], "outputs": ["blocked blocked\n"]}
    report = await score_on(secure_backend, code, tests)
    assert report.passed, report.cases
    assert accepted == []


async def test_files_outside_the_sandbox_cannot_be_deleted(secure_backend: str, tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    code = (
        "import os, shutil\n"
        f"for path in [{str(precious)!r}, {str(tmp_path)!r}, '/usr/bin/env', '/etc/passwd', '/root']:\n"
        "    try:\n"
        "        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "print(input())\n"
    )
    report = await score_on(secure_backend, code, STDIN_TESTS)
    assert report.passed, report.cases
    assert precious.read_text() == "keep me"
    assert await asyncio.to_thread(os.path.exists, "/usr/bin/env")


async def test_expected_outputs_never_enter_the_sandbox(secure_backend: str) -> None:
    tests = {"fn_name": None, "inputs": ["\n"], "outputs": ["SECRET-4242\n"]}
    uploaded = _files("print(1)", ProblemTests.model_validate(tests), ScoringLimits())
    assert all(b"SECRET" not in data for data in uploaded.values())
    snoop = (
        "import os\n"
        "found = 'nothing'\n"
        "for root in ['.', '/tmp', '/workspace', '/dev/shm']:\n"
        "    for dirpath, _, files in os.walk(root):\n"
        "        for name in files:\n"
        "            try:\n"
        "                text = open(os.path.join(dirpath, name), errors='ignore').read()\n"
        "            except OSError:\n"
        "                continue\n"
        "            if 'SECRET-' in text:\n"
        "                found = text[text.index('SECRET-'):][:11]\n"
        "print(found)\n"
    )
    report = await score_on(secure_backend, snoop, tests)
    assert not report.passed and report.cases[0].status == "wrong"


async def test_misbehaving_solutions_only_fail_their_tests(secure_backend: str) -> None:
    cases = {
        "kills the runner": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "deletes the runner's files": (
            "import glob, shutil\nfor d in glob.glob('code-env-*'):\n    shutil.rmtree(d)\nprint(input())\n"
        ),
        "floods stdout": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
        "eats memory": "x = bytearray(8 * 1024**3)\nprint(input())\n",
        "leaves a child behind": "import subprocess\nsubprocess.Popen(['sleep', '1000'])\nprint(input())\n",
        "syntax error": "def broken(:\n",
        "exits non-zero": "import sys\nprint(input())\nsys.exit(3)\n",
    }
    # 10 s a test: a loaded machine's sandboxed python3 still answers in time; the hostile ones never do.
    reports = await score_many(secure_backend, cases, STDIN_TESTS, timeout=10.0, max_output_bytes=1 << 20)
    passed = {name for name, r in reports.items() if r.passed}
    assert passed == {"leaves a child behind"}  # a stray process does not spoil a correct answer
    assert reports["kills the runner"].cases[0].detail == "the test runner was killed before reporting"
    # its own output file went with the directory, but the runner carried on and reported every test
    assert [c.status for c in reports["deletes the runner's files"].cases] == ["wrong", "wrong"]
    assert reports["floods stdout"].cases[0].status in ("error", "killed")
    assert reports["eats memory"].cases[0].status == "error"
    assert "SyntaxError" in (reports["syntax error"].cases[0].detail or "")


SIX_TESTS = {
    "fn_name": None,
    "inputs": [f"{i}\n" for i in range(1, 7)],
    "outputs": [f"{i}\n" for i in range(1, 7)],
}
ONLY_THIRD_FAILS = ["passed", "passed", "{}", "passed", "passed", "passed"]


def statuses(report: ScoreReport) -> list[str]:
    return [c.status for c in report.cases]


async def test_a_test_that_hangs_only_fails_itself(secure_backend: str) -> None:
    """The tests of a problem share a test process; one that never ends times out on its own, whether
    the process's timer stops it or the runner has to kill the process (code stuck in C, a stopped
    process, a solution that swallows the timeout), and the tests after it still run."""
    codes = {
        "sleeps": "n = int(input())\nif n == 3:\n    import time\n    time.sleep(1e9)\nprint(n)\n",
        "backtracks in C": (
            "import re\nn = int(input())\nif n == 3:\n    re.match(r'(a+)+$', 'a' * 64 + 'b')\nprint(n)\n"
        ),
        "stops itself": (
            "import os, signal\nn = int(input())\nif n == 3:\n    os.kill(os.getpid(), signal.SIGSTOP)\nprint(n)\n"
        ),
        "swallows the timeout": (
            "n = int(input())\nwhile n == 3:\n    try:\n        while True:\n            pass\n"
            "    except BaseException:\n        pass\nprint(n)\n"
        ),
    }
    # 5 s a test: the other tests (and their process's start) fit it even on a loaded machine.
    t0 = time.perf_counter()
    reports = await score_many(secure_backend, codes, SIX_TESTS, timeout=5.0)
    assert time.perf_counter() - t0 < 600  # each hang cost its own timeout, not forever
    for name, report in reports.items():
        assert statuses(report) == [s.format("timeout") for s in ONLY_THIRD_FAILS], name
        assert report.metrics()["timeouts"] == 1.0


async def test_a_test_process_that_dies_only_fails_its_test(secure_backend: str) -> None:
    """A test that ends its process is scored from how the process ended (as when every test had a
    process of its own), and a fresh process runs the rest."""
    third = "n = int(input())\nif n == 3:\n    {}\nprint(n)\n"
    codes = {
        "exits 0 after flushing": "import os, sys\nn = int(input())\nprint(n)\nsys.stdout.flush()\nos._exit(0)\n",
        "exits 0 before flushing": "import os\nn = int(input())\nprint(n)\nif n == 3:\n    os._exit(0)\n",
        "exits 3": "import os\n" + third.format("os._exit(3)"),
        "segfaults": "import ctypes\n" + third.format("ctypes.string_at(0)"),
        "kills its process group": "import os, signal\n" + third.format("os.killpg(0, signal.SIGKILL)"),
        "closes every descriptor": "import os\nos.closerange(3, 1024)\nprint(input())\n",
        "writes to the report pipe": (
            "import os\n"
            + third.format(
                "for fd in range(3, 64):\n        try:\n"
                "            os.write(fd, b'forged\\n')\n        except OSError:\n            pass"
            )
        ),
    }
    reports = await score_many(secure_backend, codes, SIX_TESTS, timeout=10.0)  # ample on a loaded machine
    expected = {
        "exits 0 after flushing": ["passed"] * 6,
        "exits 0 before flushing": [s.format("wrong") for s in ONLY_THIRD_FAILS],  # its output was lost
        "exits 3": [s.format("error") for s in ONLY_THIRD_FAILS],
        "segfaults": [s.format("killed") for s in ONLY_THIRD_FAILS],
        "kills its process group": [s.format("killed") for s in ONLY_THIRD_FAILS],
        "closes every descriptor": ["passed"] * 6,  # the report pipe too: scored from its exit status
        "writes to the report pipe": [s.format("error") for s in ONLY_THIRD_FAILS],
    }
    assert {name: statuses(r) for name, r in reports.items()} == expected
    assert "segmentation fault" in (reports["segfaults"].cases[2].detail or "")
    assert "exit status 3" in (reports["exits 3"].cases[2].detail or "")


async def test_every_test_starts_from_a_clean_slate(secure_backend: str) -> None:
    """What a test changes is undone before the next one in the same process: the solution's globals
    (it runs again in a fresh namespace; a fresh ``Solution()`` per call), builtins, the recursion
    limit, the working directory and the standard streams."""
    stdin_code = (
        "import builtins, io, os, sys\n"
        "n = int(input())\n"
        "leaks = [name for name, leaked in [\n"
        "    ('globals', 'counter' in globals()),\n"
        "    ('builtins', hasattr(builtins, 'leak')),\n"
        "    ('recursion limit', sys.getrecursionlimit() == 4321),\n"
        "    ('cwd', os.getcwd() == '/tmp'),\n"
        "] if leaked]\n"
        "print(n, *leaks)\n"
        "counter = 1\n"
        "builtins.leak = True\n"
        "sys.setrecursionlimit(4321)\n"
        "os.chdir('/tmp')\n"
        "sys.stdout = io.StringIO()\n"  # the next test must still print to its own output
        "sys.stdin = io.StringIO('99\\n')\n"  # ... and read its own input
    )
    call_code = (
        "calls = 0\n"
        "class Solution:\n"
        "    seen = []\n"
        "    def f(self, x):\n"
        "        global calls\n"
        "        calls += 1\n"
        "        self.seen.append(x)\n"
        "        return x * calls * len(self.seen)\n"
    )
    call_tests = {"fn_name": "f", "inputs": [[i] for i in range(1, 7)], "outputs": list(range(1, 7))}
    report = await score_on(secure_backend, stdin_code, SIX_TESTS)
    assert report.passed, report.cases
    report = await score_on(secure_backend, call_code, call_tests)
    assert report.passed, report.cases


async def test_solutions_that_replace_or_close_stdout(secure_backend: str) -> None:
    codes = {
        "closes sys.stdout": "import sys\nprint(input())\nsys.stdout.close()\n",
        "reopens fd 1": "import os, sys\nsys.stdout = os.fdopen(1, 'w')\nprint(input())\n",
        "writes bytes": "import sys\nsys.stdout.buffer.write(input().encode() + b'\\n')\n",
        "writes to fd 1": "import os\nos.write(1, (input() + '\\n').encode())\n",
        "prints into a StringIO": "import io, sys\nsys.stdout = io.StringIO()\nprint(input())\n",
        "closes fd 1": "import os\nos.close(1)\nprint(input())\n",
    }
    reports = await score_many(secure_backend, codes, SIX_TESTS)
    assert {name: set(statuses(r)) for name, r in reports.items()} == {
        "closes sys.stdout": {"passed"},  # as with `python3`: what it printed was flushed on close
        "reopens fd 1": {"passed"},
        "writes bytes": {"passed"},
        "writes to fd 1": {"passed"},
        "prints into a StringIO": {"wrong"},
        "closes fd 1": {"error"},
    }


async def test_memory_left_by_earlier_tests_does_not_fail_a_test(secure_backend: str) -> None:
    """Tests share a process, and with it the memory limit: a test that runs out of memory in a process
    that already ran other tests runs again in a fresh one. Here every test keeps 60% of what was free
    at the start of its process, so a second test never fits beside the first."""
    code = (
        "import resource, sys\n"
        "n = int(input())\n"
        "if not hasattr(sys, 'kept'):\n"  # the first test of this process
        "    limit = resource.getrlimit(resource.RLIMIT_AS)[0]\n"
        "    with open('/proc/self/statm') as f:\n"
        "        used = int(f.read().split()[0]) * resource.getpagesize()\n"
        "    sys.size, sys.kept = (limit - used) * 6 // 10, []\n"
        "sys.kept.append(bytes(sys.size))\n"  # calloc'd: reserved, not touched
        "print(n)\n"
    )
    report = await score_on(secure_backend, code, SIX_TESTS, memory_mb=512)
    assert report.passed, report.cases


async def test_function_call_tests_use_solution_classes_and_tolerances(secure_backend: str) -> None:
    code = (
        "class Solution:\n"
        "    def split(self, xs: List[int], k: int):\n"  # typing names are predefined
        "        return (xs[:k], sum(xs) / 3)\n"
    )
    tests = {
        "fn_name": "split",
        "inputs": [[[1, 2, 3], 1], [[1, 1], 0]],
        "outputs": [[[1], 2.0], [[], 0.6667]],
    }
    report = await score_on(secure_backend, code, tests)
    assert report.passed, report.cases
    missing = await score_on(secure_backend, "def other():\n    pass\n", tests)
    assert not missing.passed and "no function 'split'" in (missing.cases[0].detail or "")


# --- the environment -------------------------------------------------------------------------------
def fake_state(env: CodeEnv, index: int, completion_text: str) -> vf.State:
    row = env.select_rows()[index]
    state = env.init_state(row, 0)
    state["completion"] = [{"role": "assistant", "content": completion_text}]
    return state


async def test_no_code_block_scores_zero_without_a_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    async def forbidden(*args: Any) -> Any:
        raise AssertionError("the sandbox must not be touched")

    env = load_environment()
    monkeypatch.setattr(env, "run_tests", forbidden)
    state = fake_state(env, 0, "I would add the numbers.")
    await env.score_rollout(state)
    assert state["reward"] == 0.0 and state["error"] is None
    n = len(sample_records()[0]["tests"]["inputs"])
    assert state["metrics"] == {
        "passed": 0.0,
        "pass_rate": 0.0,
        "num_tests": float(n),
        "timeouts": 0.0,
        "has_code": 0.0,
    }


async def test_sandbox_failures_are_retried_then_an_infra_error(
    fast_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import code_env.env as env_module

    real = env_module.score_solution
    failures = {"left": 0}

    async def flaky(*args: Any, **kwargs: Any) -> ScoreReport:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise SandboxError("sandbox died")
        return await real(*args, **kwargs)

    monkeypatch.setattr(env_module, "score_solution", flaky)
    env = load_environment(backend=fast_backend, pool_size=2, sandbox_retries=2)
    reference = sample_records()[0]["reference"]
    try:
        failures["left"] = 2  # two dead sandboxes, the third works
        ok = fake_state(env, 0, answer(reference))
        await env.score_rollout(ok)
        assert ok["reward"] == 1.0 and ok["error"] is None
        failures["left"] = 3  # more failures than retries
        broken = fake_state(env, 0, answer(reference))
        await env.score_rollout(broken)
        assert broken["reward"] is None
        assert broken["error"]["category"] == "infra" and broken["error"]["type"] == "SandboxError"
        assert "failed on 3 sandbox(es)" in broken["error"]["message"]
    finally:
        await env.teardown()


async def test_the_environment_reports_timeouts(fast_backend: str) -> None:
    env = load_environment(backend=fast_backend, timeout_per_test=0.5, pool_size=1)
    try:
        state = fake_state(env, 0, answer("import time\ntime.sleep(10**6)\n"))
        await env.score_rollout(state)
    finally:
        await env.teardown()
    n = float(len(sample_records()[0]["tests"]["inputs"]))
    assert state["reward"] == 0.0 and state["error"] is None
    assert state["metrics"]["timeouts"] == n and state["metrics"]["num_tests"] == n
    assert state["metrics"]["pass_rate"] == 0.0 and state["metrics"]["has_code"] == 1.0
    assert env.result_record(state)["sandbox_backend"] == fast_backend


def reference_handler(kind: str) -> Any:
    by_question = {r["question"]: r for r in sample_records()}

    def handler(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"].split("\n\n", 1)[1]
        return Reply(content=answer(by_question[question][kind]))

    return handler


async def test_end_to_end_through_the_engine(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    env = load_environment(backend=fast_backend)
    scripted.handler = reference_handler("reference")
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "good", max_concurrent=8)
    good = [json.loads(line) for line in (tmp_path / "good" / "results.jsonl").read_text().splitlines()]
    assert len(good) == len(sample_records())
    assert all(r["reward"] == 1.0 and r["error"] is None for r in good), [r["error"] for r in good]
    assert {r["sandbox_backend"] for r in good} == {fast_backend}
    assert all(r["metrics"]["pass_rate"] == 1.0 and r["metrics"]["num_tests"] >= 4 for r in good)
    assert scripted.requests[0]["messages"][0]["content"].startswith(
        "Solve the programming task below in a Python markdown code block."
    )

    scripted.handler = reference_handler("wrong")
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "bad", max_concurrent=8)
    bad = [json.loads(line) for line in (tmp_path / "bad" / "results.jsonl").read_text().splitlines()]
    assert all(r["reward"] == 0.0 and r["error"] is None for r in bad)
    meta = json.loads((tmp_path / "bad" / "metadata.json").read_text())
    assert meta["avg_reward"] == 0.0 and 0.0 < meta["avg_metrics"]["pass_rate"] < 1.0


def test_vf_eval_subprocess(fast_backend: str, tmp_path: Path) -> None:
    records = sample_records()[:4]
    rules = [Rule(match=r["question"][:60], content=answer(r["reference"])) for r in records]
    out = tmp_path / "run"
    with ScriptedServer(rules=rules, default="no idea") as server:
        args = ["code-env", "-b", server.url, "-m", "scripted", "-n", "6", "-r", "1"]
        proc = run_vf_eval(
            *args, "-a", json.dumps({"backend": fast_backend}), "-o", str(out), "--json", cwd=ROOT
        )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_id = {r["example_id"]: r for r in rows}
    assert len(rows) == 6
    assert [by_id[i]["reward"] for i in range(6)] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert by_id[5]["metrics"]["has_code"] == 0.0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["env_id"] == "code-env" and meta["env_args"] == {"backend": fast_backend}
