"""MathRubric: reward and metrics, think-awareness, cheap rejection, hostile completions that score 0
quickly, and the timeout / crash outcomes that are recorded (never a hang, never a silent 0 for a crash)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

import verifiers as vf
from tests.rubrics.helpers import child_pids, make_state, wait_until
from verifiers.rubrics import MathRubric, MathVerifyPool

METRIC_KEYS = {"correct", "parsed", "answer_too_long", "verify_timeout", "verify_seconds"}


@pytest.fixture
async def rubric() -> AsyncIterator[MathRubric]:
    r = MathRubric(workers=2, timeout=20.0)
    await r.setup()
    yield r
    await r.teardown()


async def test_correct_wrong_and_metrics(rubric: MathRubric) -> None:
    states = [
        make_state("We get $\\boxed{\\frac{1}{2}}$.", "0.5"),
        make_state("So \\boxed{0.75} hmm, no: \\boxed{\\frac{2}{3}}", "\\frac{2}{3}"),  # last box counts
        make_state("\\boxed{\\frac{1}{3}}", "\\frac{2}{3}"),
        make_state("\\boxed{42}", "42"),
    ]
    await rubric.score_group(states)
    assert [s["reward"] for s in states] == [1.0, 1.0, 0.0, 1.0]
    for s in states:
        assert s["error"] is None
        assert set(s["metrics"]) == METRIC_KEYS
        assert s["metrics"]["parsed"] == 1.0 and s["metrics"]["verify_timeout"] == 0.0


async def test_think_awareness(rubric: MathRubric) -> None:
    closed = make_state("<think>maybe \\boxed{7}</think>The answer is \\boxed{8}.", "8")
    unclosed = make_state("<think>I think it is \\boxed{8} but let me check", "8")
    inside_only = make_state("<think>\\boxed{8}</think>so that is it.", "8")
    await rubric.score_group([closed, unclosed, inside_only])
    assert closed["reward"] == 1.0
    assert unclosed["reward"] == 0.0 and unclosed["metrics"]["parsed"] == 0.0
    assert inside_only["reward"] == 0.0 and inside_only["metrics"]["parsed"] == 0.0


async def test_overlong_answer_rejected_without_verification() -> None:
    r = MathRubric(max_answer_chars=20)
    s = make_state("\\boxed{" + "1+" * 30 + "1}", "31")
    await r.score_rollout(s)
    assert s["reward"] == 0.0 and s["metrics"]["answer_too_long"] == 1.0 and s["metrics"]["parsed"] == 1.0
    assert r._pool is None  # nothing was verified, so no workers were even started


async def test_empty_reference_is_a_scoring_error(rubric: MathRubric) -> None:
    s = make_state("\\boxed{1}", "  ")
    await rubric.score_rollout(s)
    assert s["reward"] is None and s["error"]["category"] == "scoring"


HOSTILE = {
    "no_box": "The answer is clearly 5.",
    "unclosed_think": "<think>" + "let me think " * 2000,
    "braces_100kb": "\\boxed{" + "{" * 100_000,
    "balanced_braces_100kb": "\\boxed{" + "{" * 50_000 + "}" * 50_000 + "}",
    "frac_nest": "\\boxed{" + "\\frac{" * 100 + "1" + "}{2}" * 100 + "}",
    "power_tower": "\\boxed{10^{10^{10^{10}}}}",
    "factorial": "\\boxed{(10^{100})!}",
    "paren_nest": "\\boxed{" + "(" * 400 + "1" + ")" * 400 + "}",
}


async def test_hostile_completions_score_zero_quickly() -> None:
    r = MathRubric(workers=2, timeout=1.0)
    await r.setup()
    try:
        states = [make_state(text, "1", idx=i) for i, text in enumerate(HOSTILE.values())]
        t0 = time.monotonic()
        await r.score_group(states)
        elapsed = time.monotonic() - t0
        for name, s in zip(HOSTILE, states, strict=True):
            assert s["error"] is None, (name, s["error"])
            assert s["reward"] == 0.0, name
            assert s["metrics"]["verify_seconds"] <= 1.0 + 1e-6, name
        by_name = dict(zip(HOSTILE, states, strict=True))
        assert by_name["no_box"]["metrics"]["parsed"] == 0.0
        assert by_name["unclosed_think"]["metrics"]["parsed"] == 0.0
        assert by_name["braces_100kb"]["metrics"]["parsed"] == 0.0
        assert by_name["balanced_braces_100kb"]["metrics"]["answer_too_long"] == 1.0
        assert by_name["power_tower"]["metrics"]["verify_timeout"] == 1.0
        # 4 runaway items, 2 workers, 1 s each, plus replacements: a loaded machine may take minutes to
        # respawn workers, but one bomb left unbounded would take forever.
        assert elapsed < 600, elapsed
    finally:
        await r.teardown()


async def test_timeout_as_scoring_error_when_asked() -> None:
    r = MathRubric(workers=1, timeout=0.5, on_timeout="error")
    try:
        s = make_state("\\boxed{10^{10^{10^{10}}}}", "1")
        await r.score_rollout(s)
        assert s["reward"] is None
        assert s["error"]["category"] == "scoring" and s["error"]["type"] == "VerificationTimeoutError"
    finally:
        await r.teardown()


async def test_worker_crash_is_a_scoring_error() -> None:
    import asyncio
    import os
    import signal

    r = MathRubric(workers=1, timeout=60.0)
    await r.setup()
    try:
        await r.pool.wait_ready_async(300)
        (pid,) = r.pool.worker_pids()
        s = make_state("\\boxed{10^{10^{10^{10}}}}", "1")
        task = asyncio.create_task(r.score_rollout(s))
        await asyncio.to_thread(wait_until, lambda: r.pool.stats.dispatched >= 1, "the worker to get it")
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(task, 30)  # far below the item's 60 s: the crash is seen, not waited out
        assert s["reward"] is None and s["error"]["category"] == "scoring"
    finally:
        await r.teardown()


async def test_lifecycle_setup_teardown_and_shared_pool() -> None:
    r = MathRubric(workers=1)
    assert r._pool is None
    await r.setup()
    assert r.pool.wait_ready(300) and len(r.pool.worker_pids()) == 1
    pids = r.pool.worker_pids()
    await r.teardown()
    assert not set(pids) & set(child_pids())
    # usable again after teardown (a fresh pool starts lazily)
    s = make_state("\\boxed{\\frac{4}{8}}", "\\frac12")
    await r.score_rollout(s)
    assert s["reward"] == 1.0
    await r.teardown()

    with MathVerifyPool(1) as shared:
        a, b = MathRubric(pool=shared), MathRubric(pool=shared)
        sa, sb = make_state("\\boxed{2\\sqrt{2}}", "\\sqrt{8}"), make_state("\\boxed{3}", "\\sqrt{9}")
        await a.score_rollout(sa)
        await b.score_rollout(sb)
        await a.teardown()  # not the owner: the shared pool keeps running
        assert not shared.closed and sa["reward"] == 1.0 and sb["reward"] == 1.0


async def test_env_parser_is_lent_and_exported_lazily() -> None:
    parser = vf.Parser(lambda t: t.split("ANSWER:")[-1].strip() if "ANSWER:" in t else None)
    r = vf.MathRubric()
    env = vf.SingleTurnEnv(dataset=[{"question": "q", "answer": "3"}], parser=parser, rubric=r)
    assert env.rubric.parser is parser
    s = make_state("work... ANSWER: 3", "3")
    await r.score_rollout(s)
    assert s["reward"] == 1.0  # plain integers are decided in-process: no worker needed
    assert r._pool is not None and not r.pool.started
    r.close()
