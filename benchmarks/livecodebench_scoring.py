"""LiveCodeBench scoring throughput per sandbox backend vs. plain subprocesses (issue 31).

Scores the reference ("golden") solution of every fixture problem of ``environments/livecodebench/tests``
(problems written for the tests in the dataset's exact schema, with their real test counts: 20 to 44 public
and private tests each), cycled to ``--n`` problems per round, through the environment's own path: the
problem's tests decoded from the row (base64 + zlib + pickle, the restricted unpickler), then
``LiveCodeBenchEnv.run_tests`` — a warm ``SandboxPool``, one bundle upload and one runner exec per problem
for all its tests, LiveCodeBench's header and comparison, 6 s per test. In the same run, the baseline: the
same decoded tests, scorer, header and comparison on plain host subprocesses in a temporary directory (no
sandbox, no pool, no reset). It prints problems/s, tests/s, latency percentiles, the sandbox round trips
per problem (counted, not assumed) and the ratio to the baseline. Every solution is a reference solution:
any problem that does not pass is reported and makes the exit status 1.

Goal: >= 0.5x the plain baseline on bwrap. The machine may be shared: targets run in interleaved rounds
and the median round is reported.

Run: python benchmarks/livecodebench_scoring.py [--n 44] [--rounds 3] [--concurrency 4]
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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import livecodebench
from _host import HostDirectory
from _smoke import parse_args
from code_env import ProblemTests, ScoreReport, score_solution
from livecodebench.grading import comparator

from verifiers.sandbox import available_backends

FIXTURES = Path(__file__).resolve().parents[1] / "environments" / "livecodebench" / "tests" / "fixtures"
sys.path.insert(0, str(FIXTURES))
from lcb_solutions import SOLUTIONS  # noqa: E402 - the fixtures' own module, found through the path above

PROBLEMS = FIXTURES / "problems.jsonl"
GOAL = 0.5  # x the plain baseline, on bwrap

Work = list[tuple[str, str, ProblemTests]]  # (question id, golden code, decoded tests)
ScoreOne = Callable[[str, ProblemTests], Awaitable[ScoreReport]]


class Counted:
    """A sandbox whose ``upload_files`` and ``exec`` calls are counted (everything else is passed on)."""

    def __init__(self, inner: Any, counts: dict[str, int]) -> None:
        self._inner, self._counts = inner, counts

    async def upload_files(self, files: Mapping[str, bytes], dest: str = ".") -> int:
        self._counts["uploads"] += 1
        return int(await self._inner.upload_files(files, dest))

    async def exec(self, command: list[str], **kwargs: Any) -> Any:
        self._counts["execs"] += 1
        return await self._inner.exec(command, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class Measurement:
    """One target's runs: one (seconds, latencies) entry per round, and its round trips."""

    name: str
    rounds: list[tuple[float, list[float]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"uploads": 0, "execs": 0, "problems": 0})

    def rates(self) -> list[float]:
        return [len(lat) / sec for sec, lat in self.rounds]

    def latencies(self) -> list[float]:
        return [x for _, lat in self.rounds for x in lat]


async def run_all(work: Work, concurrency: int, score_one: ScoreOne, m: Measurement | None) -> None:
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(qid: str, code: str, tests: ProblemTests) -> None:
        async with sem:
            t0 = time.perf_counter()
            report = await score_one(code, tests)
            latencies.append(time.perf_counter() - t0)
            if m is not None and not report.passed:
                failed = next(c for c in report.cases if not c.passed)
                m.failures.append(f"{qid}: {failed.status} {str(failed.detail)[-200:]}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(*item) for item in work))
    if m is not None:
        m.rounds.append((time.perf_counter() - t0, latencies))
        m.counts["problems"] += len(work)


def env_scorer(env: livecodebench.LiveCodeBenchEnv, counts: dict[str, int]) -> ScoreOne:
    """The environment's own scoring (its pool, retries, limits, header, comparison), round trips counted."""

    async def score_one(code: str, tests: ProblemTests) -> ScoreReport:
        report, _ = await env.scorer.run(
            lambda sandbox: score_solution(
                code,
                tests,
                Counted(sandbox, counts),  # type: ignore[arg-type]
                limits=env.limits,
                compare=comparator(tests.fn_name),
                header=env.header,
                stop_on_failure=env.early_exit,
            )
        )
        return report

    return score_one


def host_scorer(host: HostDirectory, env: livecodebench.LiveCodeBenchEnv, counts: dict[str, int]) -> ScoreOne:
    """The same scoring call on plain host subprocesses."""

    async def score_one(code: str, tests: ProblemTests) -> ScoreReport:
        return await score_solution(
            code,
            tests,
            Counted(host, counts),  # type: ignore[arg-type]
            limits=env.limits,
            compare=comparator(tests.fn_name),
            header=env.header,
            stop_on_failure=env.early_exit,
        )

    return score_one


def load(backend: str | None, concurrency: int) -> livecodebench.LiveCodeBenchEnv:
    return livecodebench.load_environment(
        str(PROBLEMS), start_date=None, end_date=None, backend=backend, pool_size=concurrency
    )


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--n", type=int, default=44, help="problems scored per target and round (fixtures cycled)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every target once, in turn")
    ap.add_argument("--concurrency", type=int, default=4, help="problems in flight (and sandboxes per pool)")
    ap.add_argument("--backends", default=None, help="comma-separated; default: runsc and bwrap if available")
    args = parse_args(ap, None, n=3, rounds=1, concurrency=2)
    available = available_backends()
    backends = (
        args.backends.split(",") if args.backends else [b for b in ("runsc", "bwrap") if b in available]
    )
    envs = {name: load(name, args.concurrency) for name in backends}
    reference = load(None, 1)  # decodes the tests for every target; its pool is never started
    qids = [reference.problems.problem(i).question_id for i in reference.problems.indices]
    decoded = {qid: await reference.tests_of(qid) for qid in qids}
    work: Work = [(qid, SOLUTIONS[qid]["golden"], decoded[qid]) for qid in qids]
    work = [work[i % len(work)] for i in range(args.n)]
    tests_per_round = sum(len(t.inputs) for _, _, t in work)
    counts = [len(t.inputs) for t in decoded.values()]
    print(
        f"livecodebench scoring: {args.n} problems per round ({len(qids)} fixture problems cycled, "
        f"{min(counts)}-{max(counts)} tests each, {tests_per_round} tests), {args.rounds} rounds, concurrency "
        f"{args.concurrency}, {os.cpu_count()} CPUs; backends: {', '.join(backends) or 'none'} "
        "(+ plain subprocess baseline)",
        flush=True,
    )
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # in memory, like the sandboxes' workspaces
    root = Path(tempfile.mkdtemp(prefix="lcb-bench-", dir=shm))
    results = {name: Measurement(name) for name in ["subprocess", *backends]}
    try:
        await asyncio.gather(*(env.setup() for env in envs.values()))
        targets: dict[str, ScoreOne] = {
            "subprocess": host_scorer(HostDirectory(root), reference, results["subprocess"].counts)
        }
        targets.update({name: env_scorer(env, results[name].counts) for name, env in envs.items()})
        for name, score_one in targets.items():  # warm-up: caches, pools recycled once
            await run_all(work[: 2 * args.concurrency], args.concurrency, score_one, None)
            results[name].counts.update(uploads=0, execs=0)
        # Interleaved rounds: a load spike from elsewhere on the machine hits every target alike.
        for r in range(args.rounds):
            names = list(targets)
            names = names[r % len(names) :] + names[: r % len(names)]
            for name in names:
                await run_all(work, args.concurrency, targets[name], results[name])
    finally:
        await asyncio.gather(*(env.teardown() for env in envs.values()))
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(results["subprocess"].rates())
    print(
        f"\n{'target':<12}{'problems/s':>12}{'(min-max)':>14}{'tests/s':>9}{'p50 ms':>8}{'p95 ms':>8}"
        f"{'uploads/pb':>11}{'execs/pb':>9}{'vs subprocess':>15}"
    )
    for m in results.values():
        rates = m.rates()
        rate = statistics.median(rates)
        lat = m.latencies()
        problems = max(m.counts["problems"], 1)
        print(
            f"{m.name:<12}{rate:>12.2f}{f'({min(rates):.2f}-{max(rates):.2f})':>14}"
            f"{rate * tests_per_round / args.n:>9.0f}{pct(lat, 50) * 1000:>8.0f}{pct(lat, 95) * 1000:>8.0f}"
            f"{m.counts['uploads'] / problems:>11.2f}{m.counts['execs'] / problems:>9.2f}{rate / base:>14.2f}x"
        )
    status = 0
    for m in results.values():
        if m.failures:
            status = 1
            print(f"\n{m.name}: {len(m.failures)} reference solution(s) failed, e.g. {m.failures[0]}")
    if "bwrap" in results:
        ratio = statistics.median(results["bwrap"].rates()) / base
        verdict = "meets" if ratio >= GOAL else "MISSES"
        print(f"bwrap: {ratio:.2f}x the plain baseline (median of rounds) {verdict} the {GOAL:g}x goal")
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
