"""Sandbox latency benchmark: cold create, warm exec, destroy, pool lease/release, per backend.

Run:  .venv/bin/python benchmarks/sandbox.py [--backends runsc,bwrap,local] [--execs 50] [--json out.json]

The baseline is a plain ``subprocess.run`` of the same real interpreter on the host, measured in the same
run, so ratios are comparable across machines. Scoring throughput (code-env's scorer through a pool) is
``benchmarks/code_env_scoring.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _smoke import parse_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verifiers.sandbox import (
    SandboxBackend,
    SandboxLimits,
    SandboxPool,
    available_backends,
    get_backend,
)
from verifiers.sandbox._host import host_python

TRIVIAL = ["python3", "-c", "pass"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50_ms": pct(xs, 0.5) * 1e3,
        "p95_ms": pct(xs, 0.95) * 1e3,
        "mean_ms": statistics.fmean(xs) * 1e3,
    }


async def timed(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


async def bench_lifecycle(backend: SandboxBackend, n_cycles: int, n_leases: int) -> dict[str, Any]:
    """Cold create, direct destroy, and pool lease/release of one backend."""
    limits = SandboxLimits()
    await backend.start()  # the one-time reaper pass is not part of a create
    creates, destroys = [], []
    for _ in range(n_cycles):
        t0 = time.perf_counter()
        sb = await backend.create(limits)
        creates.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await sb.destroy()
        destroys.append(time.perf_counter() - t0)
    # Pool: a full lease (acquire, one exec, release); release schedules reset/destroy in the background.
    async with SandboxPool(backend, size=2, limits=limits) as pool:
        releases, leases = [], []
        for _ in range(n_leases):
            t0 = time.perf_counter()
            async with pool.lease() as psb:
                await psb.exec(TRIVIAL)
                t1 = time.perf_counter()
            releases.append(time.perf_counter() - t1)
            leases.append(time.perf_counter() - t0)
    return {
        "create": summary(creates),
        "destroy": summary(destroys),
        "pool_lease_exec_release": summary(leases),
        "pool_release": summary(releases),
    }


async def bench_warm_exec(
    backends: list[SandboxBackend], n: int, idle_s: float = 0.1
) -> dict[str, dict[str, dict[str, float]]]:
    """Warm exec latency, interleaved with the host baseline: round i runs one baseline subprocess and one
    exec in each backend, so load from elsewhere on the machine hits every series alike.

    Two sandbox series for `python3 -c pass`: "python" runs right after the previous command (back to back,
    so the agent's re-fork of its spare process is still on the critical path), "python idle" after the
    sandbox sat idle for ``idle_s`` — the usual case in a rollout, where model turns separate tool calls."""
    exe = host_python().executable
    sandboxes = {b.name: await b.create(SandboxLimits()) for b in backends}
    series: dict[str, dict[str, list[float]]] = {"host": {"python": [], "python -I -S": [], "true": []}}
    series.update({name: {"python": [], "python idle": [], "true": []} for name in sandboxes})
    try:
        for sb in sandboxes.values():
            await sb.exec(TRIVIAL)  # warm-up
        for _ in range(n):
            for label, argv in (
                ("python", [exe, "-c", "pass"]),
                ("python -I -S", [exe, "-I", "-S", "-c", "pass"]),
                ("true", ["true"]),
            ):
                t0 = time.perf_counter()
                await asyncio.to_thread(subprocess.run, argv, check=True)
                series["host"][label].append(time.perf_counter() - t0)
            for name, sb in sandboxes.items():
                for label, argv in (("python", TRIVIAL), ("true", ["true"])):
                    t0 = time.perf_counter()
                    await sb.exec(argv)
                    series[name][label].append(time.perf_counter() - t0)
                await asyncio.sleep(idle_s)
                t0 = time.perf_counter()
                await sb.exec(TRIVIAL)
                series[name]["python idle"].append(time.perf_counter() - t0)
    finally:
        for sb in sandboxes.values():
            await sb.destroy()
    return {name: {label: summary(xs) for label, xs in d.items()} for name, d in series.items()}


def fmt(s: dict[str, float]) -> str:
    return f"p50 {s['p50_ms']:8.1f} ms   p95 {s['p95_ms']:8.1f} ms"


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default=",".join(available_backends()))
    ap.add_argument("--execs", type=int, default=50, help="interleaved warm-exec rounds")
    ap.add_argument("--cycles", type=int, default=5, help="create/destroy cycles")
    ap.add_argument("--idle-ms", type=float, default=100.0, help="idle time before the 'idle' warm exec")
    ap.add_argument("--json", type=Path)
    args = parse_args(ap, None, execs=3, cycles=1)

    backends = [get_backend(n) for n in args.backends.split(",") if n]
    warm = await bench_warm_exec(backends, args.execs, args.idle_ms / 1000)
    report: dict[str, Any] = {"python": host_python().executable, "warm_exec": warm, "backends": {}}
    host = warm["host"]
    print(f"interpreter: {report['python']}   (warm execs: {args.execs} interleaved rounds)")
    print(f"baseline host subprocess.run  python -c pass        {fmt(host['python'])}")
    print(f"baseline host subprocess.run  python -I -S -c pass  {fmt(host['python -I -S'])}")
    print(f"baseline host subprocess.run  true                  {fmt(host['true'])}")
    for backend in backends:
        name = backend.name
        r = await bench_lifecycle(backend, args.cycles, max(5, args.execs // 5))
        report["backends"][name] = r
        w = warm[name]
        print(f"\n[{name}]")
        print(f"  cold create               {fmt(r['create'])}")
        print(
            f"  warm exec python3 -c pass {fmt(w['python'])}   x{w['python']['p50_ms'] / host['python']['p50_ms']:.2f} "
            f"vs host `python -c pass`, x{w['python']['p50_ms'] / host['python -I -S']['p50_ms']:.2f} vs `-I -S`"
        )
        print(
            f"  warm exec python3, idle   {fmt(w['python idle'])}   x{w['python idle']['p50_ms'] / host['python']['p50_ms']:.2f} "
            f"vs host `python -c pass`  (after {args.idle_ms:g} ms idle, as between model turns)"
        )
        print(
            f"  warm exec true            {fmt(w['true'])}   x{w['true']['p50_ms'] / host['true']['p50_ms']:.2f} vs host `true`"
        )
        print(f"  destroy (direct)          {fmt(r['destroy'])}")
        print(f"  pool lease+exec+release   {fmt(r['pool_lease_exec_release'])}")
        print(
            f"  pool release (caller)     {fmt(r['pool_release'])}   <- reset/destroy run in the background"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
