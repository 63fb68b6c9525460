"""Adaptive concurrency (issue 17): ``max_concurrent="auto"`` / ``(floor, ceiling)`` is AIMD over the
endpoint's push-back — checked on its own and against the scripted server with a concurrency limit
(429 + Retry-After beyond it), where the cap must settle below the limit with no failed rollout."""

from __future__ import annotations

import asyncio
import bisect
import json
import subprocess
import time

import pytest

import verifiers as vf
from tests.cli._helpers import script
from tests.scripted_server import Reply, ScriptedServer
from verifiers.cli._display import ProgressDisplay
from verifiers.cli.eval import _normalize_argv
from verifiers.eval.concurrency import (
    AUTO_CEILING,
    AUTO_FLOOR,
    AdaptiveLimit,
    FixedLimit,
    make_limit,
    parse_max_concurrent,
)
from verifiers.eval.config import ConfigError, EvalConfig


@pytest.mark.parametrize(
    ("value", "floor", "ceiling", "adaptive"),
    [
        (7, 7, 7, False),
        ("12", 12, 12, False),
        ("auto", AUTO_FLOOR, AUTO_CEILING, True),
        ("4:256", 4, 256, True),
        ((2, 9), 2, 9, True),
        ([3, 3], 3, 3, True),
    ],
)
def test_max_concurrent_forms(value: object, floor: int, ceiling: int, adaptive: bool) -> None:
    spec = parse_max_concurrent(value)
    assert (spec.floor, spec.ceiling, spec.adaptive) == (floor, ceiling, adaptive)


@pytest.mark.parametrize("bad", [0, -1, "fast", "8:4", "0:4", "a:b", True, 1.5, (1, 2, 3)])
def test_bad_max_concurrent_is_refused_naming_the_forms(bad: object) -> None:
    with pytest.raises(ValueError, match="max_concurrent"):
        parse_max_concurrent(bad)
    with pytest.raises(ConfigError, match="max_concurrent"):
        EvalConfig.resolve("x", ("flag", {"max_concurrent": bad}))


def test_config_keeps_the_form_given() -> None:
    def resolved(v: object) -> object:
        return EvalConfig.resolve("x", ("flag", {"max_concurrent": v})).max_concurrent

    assert resolved("auto") == "auto"
    assert resolved("4:64") == (4, 64)
    assert resolved("16") == 16
    assert isinstance(make_limit(resolved("16")), FixedLimit)  # type: ignore[arg-type]


async def test_aimd_grows_halves_once_per_round_trip_and_stays_in_bounds() -> None:
    lim = AdaptiveLimit(2, 20)
    assert lim.limit == 2 and lim.slow_start

    async def rollout() -> None:
        await lim.acquire()
        await asyncio.sleep(0)
        lim.release()

    await asyncio.gather(*(rollout() for _ in range(60)))
    assert lim.limit == 20  # slow start: +1 per finished rollout while the cap binds, up to the ceiling
    sent_before = time.monotonic()
    lim.throttled(time.monotonic())
    assert lim.limit == 10 and not lim.slow_start
    lim.throttled(sent_before)  # sent under the old cap: not a second cut
    assert lim.limit == 10 and lim.decreases == 1
    for _ in range(5):
        lim.throttled(time.monotonic())
    assert lim.limit == 2  # never below the floor
    held = [asyncio.create_task(lim.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    assert lim.in_flight == 2 and sum(t.done() for t in held) == 2  # the third waits for a slot
    lim.release()
    await asyncio.sleep(0)
    assert all(t.done() for t in held)
    for _ in range(2):
        lim.release()
    # congestion avoidance: about +1 per cap's worth of finished rollouts (slow start would give +20)
    await asyncio.gather(*(rollout() for _ in range(20)))
    assert 3 <= lim.limit <= 7
    assert lim.summary()["decreases"] == 6 and lim.summary()["min"] == 2


async def test_auto_settles_below_a_rate_limit_without_failed_rollouts() -> None:
    limit = 6
    n = 240
    env = vf.SingleTurnEnv(
        dataset=[{"question": f"q{i}", "answer": "ok"} for i in range(n)],
        rubric=vf.Rubric([lambda completion, answer: float(completion[-1]["content"] == answer)]),
        env_id="t",
    )
    progress = vf.RunProgress()
    served_at: list[float] = []  # when each served (not refused) request arrived

    def serve(body: dict[str, object]) -> Reply:
        served_at.append(time.monotonic())
        # 0.1 s: the server, not a loaded machine's client, is what limits the pace (at 0.03 s a starved
        # client could not keep its cap busy, so no push-back came while the cap drifted up).
        return Reply(content="ok", delay=0.1)

    with ScriptedServer(handler=serve, concurrency_limit=limit) as srv:
        run = await env.a_evaluate(srv.url, "m", max_concurrent=(1, 64), max_retries=8, progress=progress)
        rejected = list(srv.rejected_at)
        served_peak = srv.max_in_flight
    assert run.metadata.counts.completed == n and run.metadata.counts.errored == {}
    assert run.metadata.avg_reward == 1.0
    assert served_peak <= limit
    cap = progress.limit
    assert isinstance(cap, AdaptiveLimit) and cap.decreases >= 1 and rejected
    conc = run.metadata.extra["concurrency"]
    assert conc["mode"] == "auto" and conc["decreases"] == cap.decreases and conc["ceiling"] == 64
    # Settled: over the second half of the run's requests the cap they were sent under averages below the
    # limit (AIMD probes one above it now and then), and push-back is rare. Counted per request, not per
    # second: a loaded machine that stalls while the cap is high does not weigh that cap more.
    hist = cap.history
    changed_at = [t for t, _ in hist]
    later = served_at[len(served_at) // 2 :]
    mean_cap = sum(hist[bisect.bisect_right(changed_at, t) - 1][1] for t in later) / len(later)
    assert mean_cap < limit, hist
    late = sum(1 for t in rejected if t >= later[0])
    assert late <= 0.1 * n / 2, (late, hist)


def test_the_progress_display_shows_an_adaptive_cap() -> None:
    from rich.console import Console

    progress = vf.RunProgress(limit=AdaptiveLimit(4, 32))
    line = ProgressDisplay(Console(), progress, "t").plain_line()
    assert "cap 4 (auto 4..32)" in line
    fixed = ProgressDisplay(Console(), vf.RunProgress(limit=FixedLimit(8)), "t").plain_line()
    assert "cap" not in fixed


def test_vf_eval_takes_adaptive_concurrency_and_an_optional_ray_address() -> None:
    assert _normalize_argv(["tiny-qa", "--ray"]) == ["tiny-qa", "--ray=local"]
    assert _normalize_argv(["--ray", "tiny-qa"]) == ["--ray=local", "tiny-qa"]  # ENV_ID is no address
    assert _normalize_argv(["--ray", "auto", "x"]) == ["--ray=auto", "x"]
    assert _normalize_argv(["--ray", "ray://h:10001"]) == ["--ray=ray://h:10001"]
    vf_eval = script("vf-eval")
    out = subprocess.run(
        [
            vf_eval,
            "tiny-qa",
            "-b",
            "http://127.0.0.1:9/v1",
            "-c",
            "4:64",
            "--ray",
            "h:6379",
            "--dry-run",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    config = json.loads(out.stdout)["config"]
    assert config["max_concurrent"] == [4, 64] and config["ray"] == "h:6379"
    bad = subprocess.run(
        [vf_eval, "tiny-qa", "-c", "lots", "--dry-run"], capture_output=True, text=True, timeout=300
    )
    assert bad.returncode == 2 and "-c/--max-concurrent" in bad.stderr
