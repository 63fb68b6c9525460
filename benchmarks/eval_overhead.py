"""Eval engine overhead vs. the raw transport ceiling (issue: core SDK, performance).

Starts a zero-latency OpenAI-compatible server on loopback, then in the same run:
1. the transport ceiling: a bare aiohttp session posting the same chat request at concurrency 64;
2. the whole process: ``python benchmarks/_eval_job.py`` evaluating a single-turn env of N rollouts at
   concurrency 64 (interpreter start, imports, env load, scoring, results.jsonl + metadata.json saved).

Prints whole-process and steady-state rollouts/s and their ratios to the ceiling.
Targets on a 2-core machine: >= 1,000/s whole-process, >= 1,500/s steady state (>= 35% of ceiling).

Run: python benchmarks/eval_overhead.py [--n 10000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from _smoke import parse_args

HERE = Path(__file__).resolve().parent


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "_zero_latency_server.py"), "0"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


async def transport_ceiling(url: str, n: int, concurrency: int) -> float:
    body = orjson.dumps({"model": "bench", "messages": [{"role": "user", "content": "What is 2 + 2?"}]})
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        sem = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with sem, session.post(url + "/chat/completions", data=body, headers=headers) as r:
                orjson.loads(await r.read())

        await asyncio.gather(*(one() for _ in range(500)))  # warm up connections
        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=64)
    args = parse_args(ap, None, n=200, concurrency=16)
    server, url = start_server()
    try:
        try:
            import uvloop

            runner = uvloop.run
        except ImportError:
            runner = asyncio.run
        ceiling = runner(transport_ceiling(url, args.n, args.concurrency))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            t0 = time.perf_counter()
            res = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "_eval_job.py"),
                    url,
                    str(args.n),
                    str(args.concurrency),
                    str(out),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            wall = time.perf_counter() - t0
            job = json.loads(res.stdout.strip().splitlines()[-1])
            lines = sum(1 for _ in (out / "results.jsonl").open())
        assert job["completed"] == args.n == lines, (job, lines)
        whole = args.n / wall
        steady = job["steady"]
        print(f"rollouts: {args.n} at concurrency {args.concurrency} (results.jsonl lines: {lines})")
        print(f"transport ceiling (raw aiohttp): {ceiling:8.0f} req/s")
        print(
            f"whole-process:                   {whole:8.0f} rollouts/s  ({whole / ceiling:5.1%} of ceiling; wall {wall:.2f}s)"
        )
        print(
            f"steady state:                    {steady:8.0f} rollouts/s  ({steady / ceiling:5.1%} of ceiling)"
        )
        print(
            f"targets: whole >= 1000/s -> {'OK' if whole >= 1000 else 'MISS'}; "
            f"steady >= 1500/s -> {'OK' if steady >= 1500 else 'MISS'}; "
            f"steady >= 35% of ceiling -> {'OK' if steady >= 0.35 * ceiling else 'MISS'}"
        )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
