"""code-env scoring throughput per sandbox backend vs. plain subprocesses (issue: tool envs / code-env).

Scores N solutions with ``code_env.score_solution`` (one bundle upload + one runner exec per problem), each
problem padded or cut to exactly ``--tests`` tests (the bundled sample's, cycled), at ``--concurrency``
problems in flight. In the same run it measures
1. every available sandbox backend (runsc, bwrap, local) through a warm ``SandboxPool`` of ``--concurrency``
   sandboxes (leases are reset in the background between problems, as in a real run);
2. the baseline: the same scorer and runner on plain host subprocesses in a temporary directory in
   /dev/shm (no sandbox, no pool, no reset; the interpreter without site-packages, as in the sandboxes);
and prints problems/s, tests/s, latency percentiles and the ratio to the baseline. Every solution is a
reference solution, so every problem must pass: any failure is reported and makes the exit status 1.

Target on a 2-core machine: >= 10 problems/s (10 tests each) at concurrency 8 on the secure backends.

The machine may be shared: targets run in interleaved rounds and the median round is reported.

Run: python benchmarks/code_env_scoring.py [--n 120] [--rounds 3] [--tests 10] [--concurrency 8]
     [--backends runsc,bwrap]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _host import HostDirectory
from _smoke import parse_args
from code_env import ScoreReport, ScoringLimits, sample_records, score_solution

from verifiers.sandbox import SandboxPool, available_backends, get_backend

Problem = tuple[str, dict[str, Any]]  # (solution code, tests)


def problems(n: int, tests_per_problem: int) -> list[Problem]:
    """``n`` reference solutions over the bundled sample, each with exactly ``tests_per_problem`` tests."""
    records = sample_records()
    out: list[Problem] = []
    for i in range(n):
        rec = records[i % len(records)]
        tests = rec["tests"]
        idx = [j % len(tests["inputs"]) for j in range(tests_per_problem)]
        padded = {
            "fn_name": tests["fn_name"],
            "inputs": [tests["inputs"][j] for j in idx],
            "outputs": [tests["outputs"][j] for j in idx],
        }
        out.append((rec["reference"], padded))
    return out


@dataclass
class Measurement:
    """One target's runs: one (seconds, latencies) entry per round."""

    name: str
    rounds: list[tuple[float, list[float]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def rates(self) -> list[float]:
        return [len(lat) / sec for sec, lat in self.rounds]

    def latencies(self) -> list[float]:
        return [x for _, lat in self.rounds for x in lat]


ScoreOne = Callable[[str, dict[str, Any]], Awaitable[ScoreReport]]


async def run_all(
    work: list[Problem], concurrency: int, score_one: ScoreOne, failures: list[str]
) -> tuple[float, list[float]]:
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int, code: str, tests: dict[str, Any]) -> None:
        async with sem:
            t0 = time.perf_counter()
            report = await score_one(code, tests)
            latencies.append(time.perf_counter() - t0)
            if not report.passed:
                failures.append(f"problem {i}: {[c.status for c in report.cases]} {report.cases[0].detail}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i, c, t) for i, (c, t) in enumerate(work)))
    return time.perf_counter() - t0, latencies


def pool_scorer(pool: SandboxPool, limits: ScoringLimits) -> ScoreOne:
    async def score_one(code: str, tests: dict[str, Any]) -> ScoreReport:
        async with pool.lease() as sb:
            return await score_solution(code, tests, sb, limits=limits)

    return score_one


def host_scorer(host: HostDirectory, limits: ScoringLimits) -> ScoreOne:
    async def score_one(code: str, tests: dict[str, Any]) -> ScoreReport:
        return await score_solution(code, tests, host, limits=limits)  # type: ignore[arg-type]

    return score_one


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=120, help="problems scored per target and round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every target once, in turn")
    ap.add_argument("--tests", type=int, default=10, help="tests per problem")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--backends", default=None, help="comma-separated; default: every available backend")
    args = parse_args(ap, None, n=4, rounds=1, tests=3, concurrency=2)
    backends = args.backends.split(",") if args.backends else available_backends()
    limits = ScoringLimits(timeout=10.0)
    work = problems(args.n, args.tests)
    print(
        f"code-env scoring: {args.n} problems x {args.tests} tests per round, {args.rounds} rounds, "
        f"concurrency {args.concurrency}, {os.cpu_count()} CPUs; backends: {', '.join(backends)} "
        "(+ plain subprocess baseline)",
        flush=True,
    )
    # In memory when possible, like the sandboxes' workspaces.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="code-env-bench-", dir=shm))
    pools = {
        name: SandboxPool(get_backend(name), size=args.concurrency, limits=limits.sandbox_limits(args.tests))
        for name in backends
    }
    try:
        await asyncio.gather(*(p.start() for p in pools.values()))
        targets: dict[str, ScoreOne] = {"subprocess": host_scorer(HostDirectory(root), limits)}
        targets.update({name: pool_scorer(pool, limits) for name, pool in pools.items()})
        results = {name: Measurement(name) for name in targets}
        for score_one in targets.values():  # warm-up: caches, pools recycled once
            await run_all(work[: 2 * args.concurrency], args.concurrency, score_one, [])
        # Interleaved rounds: a load spike from elsewhere on the machine hits every target alike.
        for r in range(args.rounds):
            names = list(targets)
            names = names[r % len(names) :] + names[: r % len(names)]
            for name in names:
                m = results[name]
                m.rounds.append(await run_all(work, args.concurrency, targets[name], m.failures))
    finally:
        await asyncio.gather(*(p.close() for p in pools.values()))
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(results["subprocess"].rates())
    print(
        f"\n{'target':<12}{'problems/s':>12}{'(min-max)':>14}{'tests/s':>9}{'p50 ms':>8}{'p95 ms':>8}"
        f"{'vs subprocess':>15}"
    )
    for m in results.values():
        rates = m.rates()
        rate = statistics.median(rates)
        lat = m.latencies()
        print(
            f"{m.name:<12}{rate:>12.1f}{f'({min(rates):.1f}-{max(rates):.1f})':>14}{rate * args.tests:>9.0f}"
            f"{pct(lat, 50) * 1000:>8.0f}{pct(lat, 95) * 1000:>8.0f}{rate / base:>14.2f}x"
        )
    status = 0
    for m in results.values():
        if m.failures:
            status = 1
            print(f"\n{m.name}: {len(m.failures)} reference solution(s) failed, e.g. {m.failures[0]}")
    target = 10.0
    for name in ("runsc", "bwrap"):
        if name in results:
            rate = statistics.median(results[name].rates())
            print(
                f"{name}: {rate:.1f} problems/s (median of rounds) {'meets' if rate >= target else 'MISSES'} "
                f"the {target:g}/s target"
            )
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
