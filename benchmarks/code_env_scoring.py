"""code-env scoring throughput per sandbox backend vs. plain subprocesses (issue: tool envs / code-env).

Scores N solutions with ``code_env.score_solution`` (one bundle upload + one runner exec per problem), each
problem padded or cut to exactly ``--tests`` tests (the bundled sample's, cycled), at ``--concurrency``
problems in flight. In the same run it measures
1. every available sandbox backend (runsc, bwrap, local) through a warm ``SandboxPool`` of ``--concurrency``
   sandboxes (leases are reset in the background between problems, as in a real run);
2. the baseline: the same scorer and runner on plain host subprocesses in a temporary directory (no
   sandbox, no pool, no reset; the interpreter without site-packages, as inside the sandboxes);
and prints problems/s, tests/s, latency percentiles and the ratio to the baseline. Every solution is a
reference solution, so every problem must pass: any failure is reported and makes the exit status 1.

Target on a 2-core machine: >= 10 problems/s (10 tests each) at concurrency 8 on the secure backends.

Run: python benchmarks/code_env_scoring.py [--n 200] [--tests 10] [--concurrency 8] [--backends runsc,bwrap]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
class ExecOutcome:
    stdout: str
    timed_out: bool


class HostDirectory:
    """The baseline: ``score_solution``'s two calls done with plain host subprocesses, no isolation."""

    python = os.path.realpath(sys.executable)  # the interpreter itself, as the sandboxes run it

    def __init__(self, root: Path) -> None:
        self.root = root

    async def upload_bundle(self, tar_bytes: bytes, dest: str = ".") -> int:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            tar.extractall(self.root / dest, filter="data")
            return len(tar.getmembers())

    async def exec(self, command: list[str], *, timeout: float) -> ExecOutcome:  # noqa: ASYNC109 - Sandbox.exec's
        # -S: no site-packages, like the sandboxes (which hide them); their .pth hooks cost ~40 ms a start
        argv = [self.python, "-S", *command[1:]] if command[0] == "python3" else list(command)
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=self.root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return ExecOutcome("", True)
        return ExecOutcome(out.decode(errors="replace"), False)


@dataclass
class Measurement:
    name: str
    seconds: float
    latencies: list[float]
    failures: list[str]

    def rate(self) -> float:
        return len(self.latencies) / self.seconds


async def run_all(
    work: list[Problem], concurrency: int, limits: ScoringLimits, score_one: Any
) -> tuple[float, list[float], list[str]]:
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    failures: list[str] = []

    async def one(i: int, code: str, tests: dict[str, Any]) -> None:
        async with sem:
            t0 = time.perf_counter()
            report: ScoreReport = await score_one(code, tests)
            latencies.append(time.perf_counter() - t0)
            if not report.passed:
                failures.append(f"problem {i}: {[c.status for c in report.cases]} {report.cases[0].detail}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i, c, t) for i, (c, t) in enumerate(work)))
    return time.perf_counter() - t0, latencies, failures


async def measure_backend(
    name: str, work: list[Problem], concurrency: int, limits: ScoringLimits
) -> Measurement:
    pool = SandboxPool(
        get_backend(name), size=concurrency, limits=limits.sandbox_limits(len(work[0][1]["inputs"]))
    )
    async with pool:

        async def score_one(code: str, tests: dict[str, Any]) -> ScoreReport:
            async with pool.lease() as sb:
                return await score_solution(code, tests, sb, limits=limits)

        await run_all(work[: 2 * concurrency], concurrency, limits, score_one)  # warm-up
        seconds, latencies, failures = await run_all(work, concurrency, limits, score_one)
    return Measurement(name, seconds, latencies, failures)


async def measure_subprocess(work: list[Problem], concurrency: int, limits: ScoringLimits) -> Measurement:
    root = Path(tempfile.mkdtemp(prefix="code-env-bench-"))
    host = HostDirectory(root)
    try:

        async def score_one(code: str, tests: dict[str, Any]) -> ScoreReport:
            return await score_solution(code, tests, host, limits=limits)  # type: ignore[arg-type]

        await run_all(work[: 2 * concurrency], concurrency, limits, score_one)
        seconds, latencies, failures = await run_all(work, concurrency, limits, score_one)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Measurement("subprocess", seconds, latencies, failures)


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="problems scored per backend (after a warm-up)")
    ap.add_argument("--tests", type=int, default=10, help="tests per problem")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--backends", default=None, help="comma-separated; default: every available backend")
    args = ap.parse_args()
    backends = args.backends.split(",") if args.backends else available_backends()
    limits = ScoringLimits(timeout=10.0)
    work = problems(args.n, args.tests)
    print(
        f"code-env scoring: {args.n} problems x {args.tests} tests, concurrency {args.concurrency}, "
        f"{os.cpu_count()} CPUs, backends: {', '.join(backends)} (+ plain subprocess baseline)",
        flush=True,
    )
    results = [await measure_subprocess(work, args.concurrency, limits)]
    for name in backends:
        results.append(await measure_backend(name, work, args.concurrency, limits))
    base = results[0].rate()
    print(
        f"\n{'backend':<12}{'problems/s':>12}{'tests/s':>10}{'p50 ms':>9}{'p95 ms':>9}{'vs subprocess':>15}"
    )
    for m in results:
        rate = m.rate()
        print(
            f"{m.name:<12}{rate:>12.1f}{rate * args.tests:>10.0f}{pct(m.latencies, 50) * 1000:>9.0f}"
            f"{pct(m.latencies, 95) * 1000:>9.0f}{rate / base:>14.2f}x"
        )
    status = 0
    for m in results:
        if m.failures:
            status = 1
            print(f"\n{m.name}: {len(m.failures)} reference solution(s) failed, e.g. {m.failures[0]}")
    secure = [m for m in results if m.name in ("runsc", "bwrap")]
    target = 10.0
    for m in secure:
        verdict = "meets" if m.rate() >= target else "MISSES"
        print(f"{m.name}: {m.rate():.1f} problems/s {verdict} the {target:g}/s target")
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
