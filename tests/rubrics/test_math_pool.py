"""MathVerifyPool: exact math-verify verdicts, the in-process fast path, caching, routing, and the hard
timeout that kills and replaces a runaway worker."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rubrics.helpers import child_pids, wait_until
from verifiers.errors import ScoringError
from verifiers.rubrics import MathVerifyPool, quick_verdict

BOMB = "10^{10^{10^{10}}}"


@pytest.fixture(scope="module")
def pool() -> Iterator[MathVerifyPool]:
    with MathVerifyPool(2, timeout=20.0) as p:
        assert p.wait_ready(300)
        yield p


def plain_verdict(gold: str, pred: str) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse("\\boxed{" + gold + "}"), parse("\\boxed{" + pred + "}")))


def test_quick_verdict_agrees_with_math_verify() -> None:
    rng = random.Random(7)
    pairs: list[tuple[str, str]] = [
        ("0", "-0"),
        ("5", "05"),
        ("5", "5.0"),
        ("0.5", "0.50"),
        ("-3", "3"),
        ("999999999999", "999999999998"),
        ("123456789012", "123456789012.0"),
        ("1.25", "001.250"),
        ("-0.0", "0"),
        ("0", "0.000000"),
        ("999999999999.5", "999999999999.50"),
    ]
    for _ in range(150):
        a = rng.randint(-(10**12) + 1, 10**12 - 1)
        pairs.append((str(a), str(a + rng.choice([-1, 1, 0, 10, 1000]))))
        x = round(rng.uniform(-1000, 1000), rng.randint(0, 6))
        pairs.append((str(x), f"{x:.{rng.randint(6, 9)}f}"))
    decided = 0
    for gold, pred in pairs:
        quick = quick_verdict(gold, pred)
        if quick is None:
            continue
        decided += 1
        assert quick == plain_verdict(gold, pred), (gold, pred)
    assert decided >= 250
    # Unequal decimals and anything non-plain are left to math-verify.
    assert quick_verdict("0.1234567", "0.1234568") is None
    assert quick_verdict("\\frac{1}{2}", "0.5") is None
    assert quick_verdict("1000000000000000", "1000000000000001") is None  # beyond 12 digits


def test_verdicts_match_plain_math_verify(pool: MathVerifyPool) -> None:
    pairs = [
        ("\\frac{1}{2}", "0.5"),
        ("\\frac{1}{2}", "\\frac{2}{4}"),
        ("\\frac{1}{2}", "\\frac{1}{3}"),
        ("2\\sqrt{3}", "\\sqrt{12}"),
        ("\\frac{\\pi}{3}", "\\pi/3"),
        ("(1, 3]", "(1,3]"),
        ("(1, 3]", "[1, 3]"),
        ("\\{1, 2\\}", "\\{2, 1\\}"),
        ("(2, -1)", "(-1, 2)"),
        ("y = 2x + 1", "y=1+2x"),
        ("x = 3", "3"),
        ("\\text{yes}", "\\text{no}"),
        # identical strings: the worker skips the sympy comparison only when verify() must say True
        ("(1, 3]", "(1, 3]"),
        ("\\text{}", "\\text{}"),
        ("{}", "{}"),
        ("\\frac{0}{0}", "\\frac{0}{0}"),
    ]
    outcomes = pool.verify_many(pairs)
    assert [o.correct for o in outcomes] == [plain_verdict(g, p) for g, p in pairs]
    assert all(o.status == "ok" for o in outcomes)
    assert [o.correct for o in outcomes][:5] == [True, True, False, True, True]


def test_fast_path_cache_and_deduplication(pool: MathVerifyPool) -> None:
    before = pool.stats.submitted, pool.stats.fast, pool.stats.cached, pool.stats.deduplicated
    quick = pool.verify_many([("42", "42"), ("42", "43"), ("0.5", "0.500")])
    assert [(o.correct, o.source) for o in quick] == [(True, "fast"), (False, "fast"), (True, "fast")]
    assert pool.stats.fast - before[1] == 3
    gold, pred = "\\frac{7}{9}", "\\frac{14}{18}"
    futs = [pool.submit(gold, pred) for _ in range(5)]  # in flight together: one verification
    results = [f.result(30) for f in futs]
    assert all(r.correct for r in results)
    again = pool.verify_many([(gold, pred)])[0]
    assert again.correct and again.source == "cache"
    assert pool.stats.deduplicated - before[3] >= 1
    assert pool.stats.cached - before[2] >= 1


def test_gold_is_parsed_once_per_worker(pool: MathVerifyPool) -> None:
    gold = "\\frac{3\\sqrt{2}}{4}"
    preds = [f"\\frac{{{3 * k}\\sqrt{{2}}}}{{{4 * k}}}" for k in range(1, 31)]
    before = pool.stats.gold_parses
    outcomes = pool.verify_many([(gold, p) for p in preds])
    assert all(o.correct for o in outcomes)
    # routed to the worker that already parsed it (at most one parse per worker)
    assert pool.stats.gold_parses - before <= pool.workers


def test_hard_timeout_kills_and_replaces_the_worker() -> None:
    with MathVerifyPool(1, timeout=30.0) as pool:
        assert pool.wait_ready(300)
        (pid,) = pool.worker_pids()
        # The bomb (tiny timeout) and three normal items queued behind it on the only worker: those are
        # re-run by the replacement (generous timeouts, so a loaded machine cannot fail them).
        bomb_fut = pool.submit("1", BOMB, item_timeout=0.5)
        futs = [pool.submit("2\\pi", p) for p in ("2 \\pi", "\\pi + \\pi", "3\\pi")]
        bomb = bomb_fut.result(30)
        # Cut at its own 0.5 s budget (the pool's is 30 s), whatever the machine's speed.
        assert bomb.status == "timeout" and bomb.killed and not bomb.correct and bomb.seconds == 0.5
        assert [f.result(60).correct for f in futs] == [True, True, False]
        assert pool.stats.kills == 1
        assert pool.wait_ready(300)
        assert pool.worker_pids() and pool.worker_pids()[0] != pid
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the runaway worker is gone, not orphaned
        # the timeout is remembered: a repeated bomb costs nothing (answered from the cache, not run)
        kills = pool.stats.kills
        again = pool.verify_many([("1", BOMB)])[0]
        assert again.timed_out and again.source == "cache" and pool.stats.kills == kills


def test_math_verify_own_timeout_is_reported() -> None:
    # Generous hard timeout: math-verify's own 5 s comparison limit fires first and the worker survives.
    with MathVerifyPool(1, timeout=30.0) as pool:
        out = pool.verify_many([("1", "(10^{100})!")])[0]
        assert out.status == "timeout" and not out.killed and not out.correct
        assert pool.stats.kills == 0


def test_a_dead_worker_is_a_crash_not_a_hang() -> None:
    with MathVerifyPool(1, timeout=60.0) as pool:
        assert pool.wait_ready(300)
        (pid,) = pool.worker_pids()
        fut = pool.submit("1", BOMB)
        wait_until(lambda: pool.stats.dispatched == 1, "the worker to get the item")
        os.kill(pid, signal.SIGKILL)
        out = fut.result(30)  # far below the item's 60 s: the crash is seen, not waited out
        assert out.status == "crashed" and not out.correct
        assert pool.verify_many([("\\frac{1}{4}", "0.25")])[0].correct  # replaced and serving


def test_close_fails_pending_work_and_reaps_workers() -> None:
    pool = MathVerifyPool(1, timeout=3600.0)
    assert pool.wait_ready(300)
    pids = pool.worker_pids()
    busy = pool.submit("1", BOMB)
    waiting = pool.submit("\\frac{1}{3}", "\\frac{2}{6}")
    wait_until(lambda: pool.stats.dispatched >= 1, "the worker to get the bomb")
    t0 = time.monotonic()
    pool.close()
    assert time.monotonic() - t0 < 120  # the bomb may run an hour: closing did not wait for it
    for fut in (busy, waiting):
        with pytest.raises(ScoringError):
            fut.result(5)
    assert pool.worker_pids() == []
    for pid in pids:
        assert pid not in child_pids()
    with pytest.raises(ScoringError):
        pool.start()


def test_nothing_starts_at_import_or_construction() -> None:
    code = (
        "import sys, verifiers as vf\n"
        "from tests.rubrics.helpers import child_pids\n"
        "r = vf.MathRubric(); h = vf.HybridMathRubric(); p = vf.MathVerifyPool(2)\n"
        "assert not any(m.startswith(('math_verify', 'sympy')) for m in sys.modules), 'heavy import'\n"
        "assert child_pids() == [], child_pids()\n"
        "assert not p.started\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "clean"


def test_workers_die_with_the_parent() -> None:
    code = (
        "import time, verifiers as vf\n"
        "p = vf.MathVerifyPool(1); p.wait_ready(300)\n"
        "print(p.worker_pids()[0], flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        worker = int(proc.stdout.readline())
        os.kill(worker, 0)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 300  # only a guard against a hang
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        # reaped by init once it exits; a zombie still answers kill(0)
        try:
            state = Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.1)
    pytest.fail("the worker outlived its parent")
