"""livecodebench on the real sandbox backends: golden, alternative and wrong solutions of every fixture problem
(stdin/stdout and functional), time limits, runtime errors, early exit, a killed sandbox, a hostile row, and
whole runs through the engine and through ``vf-eval`` against the scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from code_env import ScoringLimits, score_solution
from lcb_testing import IN_WINDOW, PROBLEMS, SOLUTIONS, answer, malicious_row, record, records, write_rows
from livecodebench import LiveCodeBenchEnv, decode_private, decode_public, load_environment

import verifiers as vf
from tests.env_testing import run_vf_eval
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.sandbox import get_backend

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[3]


def fake_state(env: LiveCodeBenchEnv, question_id: str, reply: str) -> vf.State:
    row = next(r for r in env.select_rows() if r["info"]["question_id"] == question_id)
    state = env.init_state(row, 0)
    state["completion"] = [{"role": "assistant", "content": reply}]
    return state


async def score(env: LiveCodeBenchEnv, question_id: str, code: str) -> vf.State:
    state = fake_state(env, question_id, answer(code))
    await env.score_rollout(state)
    return state


async def test_golden_and_alternative_solutions_pass_and_wrong_ones_fail(secure_backend: str) -> None:
    env = load_environment(str(PROBLEMS), start_date=None, end_date=None, backend=secure_backend, pool_size=4)
    try:
        jobs = [(qid, kind) for qid in SOLUTIONS for kind in ("golden", "alt", "wrong")]
        states = await asyncio.gather(*(score(env, qid, SOLUTIONS[qid][kind]) for qid, kind in jobs))
    finally:
        await env.teardown()
    results = {job: s for job, s in zip(jobs, states, strict=True)}
    errors = {job: s["error"] for job, s in results.items() if s["error"] is not None}
    assert not errors
    for (qid, kind), state in results.items():
        metrics = state["metrics"]
        rec = record(qid)
        n = len(
            decode_public(rec["public_test_cases"], row=qid)
            + decode_private(rec["private_test_cases"], row=qid)
        )
        assert metrics["num_tests"] == n >= 20, qid
        if kind == "wrong":
            assert state["reward"] == 0.0, (qid, state["first_failure"])
            assert metrics["pass_rate"] < 1.0 and metrics["tests_run"] == metrics["num_tests"]
            assert state["first_failure"]["status"] == "wrong"
        else:
            assert state["reward"] == 1.0, (qid, kind, state["first_failure"])
            assert metrics["pass_rate"] == 1.0 and metrics["tests_run"] == metrics["num_tests"]
            assert state["first_failure"] is None
        assert state["sandbox_backend"] == secure_backend
    # the wrong solutions that are right on some tests score a pass rate between 0 and 1
    for qid in ("abc900_a", "abc905_b", "3400", "3481", "3533"):
        assert 0.0 < results[(qid, "wrong")]["metrics"]["pass_rate"] < 1.0, qid


async def test_big_integers_print_only_under_the_harness_header(fast_backend: str) -> None:
    """2**20000 has 6,021 digits: Python refuses to print it unless the int-to-str limit is raised, as the
    official evaluator raises it (the header does here)."""
    env = load_environment(str(PROBLEMS), backend=fast_backend, pool_size=1)
    try:
        tests = await env.tests_of("2041A")
        lim = ScoringLimits(timeout=6.0)
        sandbox = await get_backend(fast_backend).create(lim.sandbox_limits(len(tests)))
        try:
            bare = await score_solution(SOLUTIONS["2041A"]["golden"], tests, sandbox, limits=lim)
        finally:
            await sandbox.destroy()
        with_header = await score(env, "2041A", SOLUTIONS["2041A"]["golden"])
    finally:
        await env.teardown()
    assert not bare.passed and "Exceeds the limit (4300 digits)" in str([c.detail for c in bare.cases])
    assert with_header["reward"] == 1.0


TLE = "import time\ntime.sleep(10**6)\n"
SPIN = "while True:\n    pass\n"
CRASH = "raise RuntimeError('boom')\n"
FN_CRASH = "class Solution:\n    def countPairs(self, nums, target):\n        return nums[10**9]\n"


async def test_time_limits_and_runtime_errors_with_early_exit(secure_backend: str) -> None:
    env = load_environment(str(PROBLEMS), backend=secure_backend, timeout_per_test=1.0, pool_size=2)
    try:
        sleeps, spins, crashes, fn_crashes = await asyncio.gather(
            score(env, "abc900_a", TLE),
            score(env, "abc912_c", SPIN),
            score(env, "abc905_b", CRASH),
            score(env, "3400", FN_CRASH),
        )
    finally:
        await env.teardown()
    for state in (sleeps, spins):
        assert state["reward"] == 0.0 and state["error"] is None
        assert state["metrics"]["timeouts"] == 1.0 and state["metrics"]["tests_run"] == 1.0
        assert state["metrics"]["num_tests"] >= 30 and state["first_failure"]["status"] == "timeout"
    for state in (crashes, fn_crashes):
        assert state["reward"] == 0.0 and state["error"] is None
        assert state["metrics"]["runtime_errors"] == 1.0 and state["metrics"]["tests_run"] == 1.0
        assert state["metrics"]["timeouts"] == 0.0
    assert "RuntimeError: boom" in crashes["first_failure"]["detail"]
    assert "IndexError" in fn_crashes["first_failure"]["detail"]


async def test_without_early_exit_every_test_runs(fast_backend: str, tmp_path: Path) -> None:
    # a problem with 24 tests, of which a solution times out on the odd inputs and crashes on n % 4 == 2
    code = (
        "n = int(input())\nif n % 2:\n    while True: pass\nif n % 4 == 2:\n    raise ValueError(n)\n"
        "print('Even')\n"
    )
    env = load_environment(
        str(PROBLEMS),
        start_date=None,
        backend=fast_backend,
        timeout_per_test=0.5,
        early_exit=False,
        pool_size=1,
    )
    try:
        state = await score(env, "abc899_a", code)
        tests = await env.tests_of("abc899_a")
    finally:
        await env.teardown()
    numbers = [int(t) for t in tests.inputs]
    odd = sum(n % 2 for n in numbers)
    crash = sum(n % 4 == 2 for n in numbers)
    assert 0 < odd < len(numbers) and crash > 0
    m = state["metrics"]
    assert m["tests_run"] == m["num_tests"] == len(numbers)
    assert m["timeouts"] == odd and m["runtime_errors"] == crash
    assert m["pass_rate"] == (len(numbers) - odd - crash) / len(numbers)


async def test_no_code_block_scores_zero_without_a_sandbox(fast_backend: str) -> None:
    env = load_environment(str(PROBLEMS), backend=fast_backend, pool_size=1)
    state = fake_state(env, "3400", "<think>I would write a loop but I ran out of")
    await env.score_rollout(state)
    assert state["reward"] == 0.0 and state["error"] is None
    assert state["metrics"]["has_code"] == 0.0 and state["metrics"]["tests_run"] == 0.0
    assert "sandbox_backend" not in state  # nothing ran
    await env.teardown()


async def test_a_killed_sandbox_is_an_infra_error(fast_backend: str) -> None:
    env = load_environment(
        str(PROBLEMS), backend=fast_backend, sandbox_retries=0, pool_size=1, timeout_per_test=30.0
    )
    try:
        pool = await env.scorer.pool()
        state = fake_state(env, "abc900_a", answer(TLE))
        scoring = asyncio.create_task(env.score_rollout(state))
        # the rollout holds the sandbox once it runs the tests (the pool offers no event for it)
        while not pool._leased:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        next(iter(pool._leased))._kill()
        await scoring
    finally:
        await env.teardown()
    assert state["reward"] is None
    assert state["error"]["category"] == "infra" and state["error"]["type"] == "SandboxError"
    assert "failed on 1 sandbox(es)" in state["error"]["message"]


async def test_a_malicious_row_is_an_env_error_that_runs_nothing(fast_backend: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write_rows(tmp_path / "problems.jsonl", [*records(), malicious_row(marker)])
    env = load_environment(str(path), backend=fast_backend, pool_size=1)
    try:
        state = await score(env, "abc999_x", SOLUTIONS["abc900_a"]["golden"])
        ok = await score(env, "abc900_a", SOLUTIONS["abc900_a"]["golden"])
    finally:
        await env.teardown()
    assert state["reward"] is None and state["error"]["category"] == "env"
    assert (
        "livecodebench row 11 (question_id 'abc999_x'): private_test_cases: refused to unpickle"
        in (state["error"]["message"])
    )
    assert not marker.exists()
    assert ok["reward"] == 1.0  # the other rows are unaffected


def solution_for(body: dict[str, Any]) -> Reply:
    """The scripted model: each fixture problem's golden solution, found by its statement."""
    prompt = body["messages"][-1]["content"]
    for rec in records():
        if rec["question_content"] in prompt:
            return Reply(content=answer(SOLUTIONS[rec["question_id"]]["golden"]))
    return Reply(content="no idea")


async def test_end_to_end_through_the_engine(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    env = load_environment(str(PROBLEMS), backend=fast_backend, pool_size=4)
    scripted.handler = solution_for
    await env.a_evaluate(
        scripted.url, "m", output_dir=tmp_path / "run", max_concurrent=8, rollouts_per_example=2
    )
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * len(IN_WINDOW)
    assert all(r["reward"] == 1.0 and r["error"] is None for r in rows), [r["first_failure"] for r in rows]
    assert {r["info"]["question_id"] for r in rows} == set(IN_WINDOW)
    assert all(r["info"]["window"] == {"start_date": "2024-08-01", "end_date": "2025-05-01"} for r in rows)
    assert all("tests" not in r["info"] for r in rows)  # the tests stay in the source
    request = scripted.requests[0]["messages"]
    assert request[0]["content"].startswith("You are an expert Python programmer.")
    assert request[1]["content"].startswith("### Question:\n")


def test_vf_eval_end_to_end(fast_backend: str, tmp_path: Path) -> None:
    """``vf-eval livecodebench -a '{"source": FILE}'`` with a scripted model answering each problem's golden
    solution, except one problem answered with another problem's solution."""
    rules = [
        Rule(match=rec["question_content"], content=answer(SOLUTIONS[rec["question_id"]]["golden"]))
        for rec in records()
        if rec["question_id"] != "3481"
    ]
    rules.append(Rule(match=record("3481")["question_content"], content=answer(SOLUTIONS["3400"]["golden"])))
    out = tmp_path / "run"
    env_args = {"source": str(PROBLEMS), "backend": fast_backend}
    with ScriptedServer(rules=rules, default="no idea") as server:
        args = ["livecodebench", "-b", server.url, "-m", "scripted", "-r", "1", "-a", json.dumps(env_args)]
        proc = run_vf_eval(*args, "-o", str(out), "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    rewards = {r["info"]["question_id"]: r["reward"] for r in rows}
    assert rewards == {qid: (0.0 if qid == "3481" else 1.0) for qid in IN_WINDOW}
    wrong = next(r for r in rows if r["info"]["question_id"] == "3481")
    assert wrong["error"] is None and wrong["metrics"]["runtime_errors"] == 1.0  # no isBalanced method
    assert all(r["info"]["window"] == {"start_date": "2024-08-01", "end_date": "2025-05-01"} for r in rows)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["env_id"] == "livecodebench" and meta["env_args"] == env_args
    assert meta["rollouts_per_example"] == 1 and meta["num_examples"] == len(IN_WINDOW)
    # The data the run saw: the file, the window as the selection, the window's rows and their fingerprint.
    dataset = meta["dataset"]
    assert dataset["dataset"] == str(PROBLEMS) and dataset["source"] == "file"
    assert dataset["rows"] == len(IN_WINDOW) and len(dataset["sha256"]) == 64
    assert dataset["selection"] == {"start_date": "2024-08-01", "end_date": "2025-05-01", "source_rows": 11}
