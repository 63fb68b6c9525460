"""Scale: 4,096 rollouts in flight on one machine, and the Ray backend's overhead (issue 17).

Starts a server that answers every request after a fixed latency (``_zero_latency_server.py --latency``, 1 s by default,
nothing computed), then, in the same run and each as its own whole process:

1. raw: a bare aiohttp session posting the same chat request N times from C workers (the ceiling);
2. engine: ``run_eval`` of a single-turn environment of N rows at ``max_concurrent=C`` (rollout,
   scoring, results.jsonl + metadata.json), with its peak RSS per rollout in flight;
3. ray: the same eval on a two-node local Ray cluster (a head and a worker, separate ``ray start``
   processes on this machine), driver and actors included.

Prints rollouts/s of each, whole-process and in-run (from the first request to the last record), the
ratios, and RSS. Targets: engine >= 75% of raw at c=4096; <= 100 KB RSS per in-flight rollout; ray >= 70%
of the single-process engine. On a shared machine run it with ``--repeat 2`` or more: the spread between
repeats is the noise.

Run: python benchmarks/scale.py [--n 16384] [--concurrency 4096] [--latency 1.0] [--repeat 1] [--no-ray]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _smoke import parse_args

HERE = Path(__file__).resolve().parent
ENV_ID = "scale-bench"
QUESTION = "What is 2 + 2?"


# --- the environment (also loaded by id in each Ray actor: loader "scale:load_bench_env") -----------
def load_bench_env(env_id: str = ENV_ID, n: int = 16384) -> Any:
    import verifiers as vf

    rows = [{"question": f"{QUESTION} ({i})", "answer": "4"} for i in range(n)]
    parser = vf.Parser(vf.extract_boxed_answer)

    def correct(completion: Any, answer: str, parser: Any) -> float:
        return 1.0 if parser.parse_answer(completion) == answer else 0.0

    env = vf.SingleTurnEnv(dataset=rows, parser=parser, rubric=vf.Rubric([correct]), env_id=env_id)
    env.set_identity(env_id, "0.0.0", "", {"n": n})
    return env


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _runner() -> Any:
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run


# --- jobs (each a whole process) ---------------------------------------------------------------------
def job_raw(url: str, n: int, conc: int) -> dict[str, Any]:
    import aiohttp
    import orjson

    async def main() -> dict[str, Any]:
        body = orjson.dumps({"model": "bench", "messages": [{"role": "user", "content": QUESTION}]})
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            left = n

            async def worker() -> None:  # C workers, each posting until N are sent: no waiting queue
                nonlocal left
                while left > 0:
                    left -= 1
                    async with session.post(url + "/chat/completions", data=body, headers=headers) as r:
                        orjson.loads(await r.read())

            t0, c0 = time.perf_counter(), _cpu_s()
            await asyncio.gather(*(worker() for _ in range(conc)))
            return {"in_run": n / (time.perf_counter() - t0), "cpu_us": 1e6 * (_cpu_s() - c0) / n}

    out: dict[str, Any] = _runner()(main())
    return out


def job_engine(url: str, n: int, conc: int, out: str, ray: str | None) -> dict[str, Any]:
    from verifiers.clients import Client
    from verifiers.eval.distributed import RayOptions
    from verifiers.eval.run import run_eval

    env = load_bench_env(ENV_ID, n)
    base_rss = _rss_kb()
    times: list[float] = []
    cpu: list[float] = []

    def on_group(states: Any) -> None:
        times.append(time.perf_counter())

    async def main() -> Any:
        async with Client(url, max_retries=2) as client:
            t0 = time.perf_counter()
            cpu.append(_cpu_s())
            run = await run_eval(
                env,
                client,
                "bench",
                num_examples=n,
                max_concurrent=conc,
                output_dir=Path(out),
                on_group=on_group,
                ray=RayOptions(address=ray, loader="scale:load_bench_env") if ray else None,
            )
            return run, t0

    run, t0 = _runner()(main())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    meta = run.metadata
    return {
        # from the run's start (after the env loaded; with Ray, actors starting included) to the last record
        "in_run": meta.counts.completed / (times[-1] - t0),
        # this process's CPU time per rollout (with Ray: the driver's only)
        "cpu_us": 1e6 * (_cpu_s() - cpu[0]) / meta.counts.completed,
        "completed": meta.counts.completed,
        "errored": meta.counts.errored,
        "avg_reward": meta.avg_reward,
        "rss_base_kb": base_rss,
        "rss_peak_kb": peak,
        "ray": meta.extra.get("ray"),
    }


# --- the local Ray cluster ---------------------------------------------------------------------------
class Cluster:
    """A head and one worker node, each its own process group; killed by group (never ``ray stop``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def _start(self, name: str, *args: str) -> None:
        ray = Path(sys.executable).with_name("ray")
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(HERE)}
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - open for the node's life
        self.procs.append(
            subprocess.Popen(
                [str(ray), "start", *args, "--num-cpus=1", "--object-store-memory=200000000", "--block"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        )

    def start(self) -> None:
        self._start("head", "--head", "--port=0", "--include-dashboard=false", "--disable-usage-stats")
        deadline = time.monotonic() + 120
        while not self.address:
            m = re.search(
                r"ray start --address='([^']+)'", (self.root / "head.log").read_text("utf-8", "replace")
            )
            if m:
                self.address = m.group(1)
            elif time.monotonic() > deadline:
                raise RuntimeError("the Ray head did not start")
            time.sleep(0.2)
        self._start("worker", f"--address={self.address}", "--disable-usage-stats")
        time.sleep(5)  # the worker node registers

    def stop(self) -> None:
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(30)
        note = Path("/tmp/ray/ray_current_cluster")  # a later ray.init() would try to join the dead head
        if self.address and note.exists() and note.read_text().strip() == self.address:
            note.unlink()


# --- the driver ----------------------------------------------------------------------------------------
def _job(*args: str) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, str(Path(__file__)), "--job", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"job {args[0]} failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--concurrency", type=int, default=4096)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--job", nargs=argparse.REMAINDER)
    args = parse_args(ap, None, n=64, concurrency=16, latency=0.05)
    if args.job:
        kind, url, n, conc, *rest = args.job
        if kind == "raw":
            out = job_raw(url, int(n), int(conc))
        else:
            out = job_engine(url, int(n), int(conc), rest[0], rest[1] if len(rest) > 1 else None)
        print(json.dumps(out))
        return

    n, c = args.n, args.concurrency
    # A loopback-only cluster (and its drivers, the jobs below): no token auth, whatever ~/.ray holds.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    server = subprocess.Popen(
        [sys.executable, str(HERE / "_zero_latency_server.py"), "--latency", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}/v1"
    cluster: Cluster | None = None
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.no_ray:
                cluster = Cluster(Path(tmp))
                cluster.start()
            for rep in range(args.repeat):
                raw, raw_wall = _job("raw", url, str(n), str(c))
                eng, eng_wall = _job("engine", url, str(n), str(c), f"{tmp}/engine-{rep}")
                assert eng["completed"] == n and not eng["errored"], eng
                row: dict[str, Any] = {
                    "raw": raw["in_run"],
                    "raw_whole": n / raw_wall,
                    "engine": eng["in_run"],
                    "engine_whole": n / eng_wall,
                    "rss_per_inflight_kb": (eng["rss_peak_kb"] - eng["rss_base_kb"]) / c,
                    "raw_cpu_us": raw["cpu_us"],
                    "engine_cpu_us": eng["cpu_us"],
                }
                if cluster is not None:
                    ray, ray_wall = _job("engine", url, str(n), str(c), f"{tmp}/ray-{rep}", cluster.address)
                    assert ray["completed"] == n and not ray["errored"], ray
                    row.update(ray=ray["in_run"], ray_whole=n / ray_wall, ray_nodes=ray["ray"]["nodes"])
                rows.append(row)
                print(json.dumps({"repeat": rep, **{k: round(v, 1) for k, v in row.items()}}), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
        server.terminate()
        server.wait()

    ideal = c / args.latency
    print(
        f"\n{n} single-turn rollouts at concurrency {c}, server latency {args.latency:g}s (ideal {ideal:.0f}/s)"
    )
    for i, r in enumerate(rows):
        line = (
            f"#{i}: raw {r['raw']:7.0f}/s | engine {r['engine']:7.0f}/s = {r['engine'] / r['raw']:5.1%} of raw "
            f"(whole process {r['engine_whole']:.0f}/s vs raw {r['raw_whole']:.0f}/s = "
            f"{r['engine_whole'] / r['raw_whole']:5.1%}) | CPU per rollout {r['engine_cpu_us']:.0f} us vs raw "
            f"{r['raw_cpu_us']:.0f} us per request | RSS {r['rss_per_inflight_kb']:.1f} KB/in-flight"
        )
        if "ray" in r:
            line += (
                f" | ray ({r['ray_nodes']} nodes) {r['ray']:7.0f}/s = {r['ray'] / r['engine']:5.1%} of single-process"
                f" (whole {r['ray_whole'] / r['engine_whole']:5.1%})"
            )
        print(line)
    best = rows[-1]
    print(
        "targets: engine >= 75% of raw -> "
        f"{'OK' if best['engine'] >= 0.75 * best['raw'] else 'MISS'}; RSS <= 100 KB/in-flight -> "
        f"{'OK' if best['rss_per_inflight_kb'] <= 100 else 'MISS'}"
        + (
            f"; ray >= 70% of single-process -> {'OK' if best['ray'] >= 0.7 * best['engine'] else 'MISS'}"
            if "ray" in best
            else ""
        )
    )


if __name__ == "__main__":
    main()
