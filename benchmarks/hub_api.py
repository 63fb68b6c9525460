"""JSON API under load: environment detail, search and resolve, on SQLite (1 worker) and PostgreSQL (4 workers).

    python benchmarks/hub_api.py [--seconds 20] [--connections 64,256] [--backends sqlite,postgres] [--check]

Publishes 10 projects × 5 versions to a fresh hub (``vf-hub serve``, no access log), then runs
``wrk -t2 -c<N> -d<seconds>s --latency`` against each endpoint at each concurrency and prints req/s,
p50/p99 and the number of non-2xx answers. PostgreSQL is a throwaway PostgreSQL 15 cluster in /tmp with its
default ``max_connections=100`` (``/usr/lib/postgresql/15/bin`` or ``VF_TEST_PG_BIN``; as the ``postgres``
user when run as root). Targets (``--check`` exits 1 on a miss): no non-2xx answer anywhere, and
p99 < 250 ms at c=64 on SQLite. The hub code comes from ``PYTHONPATH`` if set, so the same script measures
another checkout (e.g. a ``git worktree`` of the previous commit).

``--baseline DIR`` first measures the hub code in ``DIR`` (a checkout of an earlier commit, e.g.
``git archive <rev> | tar -x -C DIR``) the same way, then this one, and prints each figure's ratio
(req/s: this / baseline; p99: baseline / this; above 1 is better), so a speed claim is a ratio
measured under the same load.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from hub_index import PROJECTS, VERSIONS, free_port, prepare_hub, tiny_dists, wait_http

PG_BIN = Path(os.environ.get("VF_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
ENDPOINTS = {
    "detail": "/api/v1/environments/bench/bench-env-03",
    "search": "/api/v1/environments?q=bench&per_page=20",
    "resolve": "/api/v1/resolve?spec=bench%2Fbench-env-03%40%3E%3D0.2",
}
P99_LIMIT_MS = 250.0


@dataclass
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: str


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def run_wrk(url: str, seconds: int, connections: int) -> Result:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "30s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
    total = re.search(r"(\d+) requests in", out)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: (.*)", out)
    if rps is None or p50 is None or p99 is None or total is None:
        raise RuntimeError(f"cannot parse wrk output:\n{out}")
    return Result(
        float(rps.group(1)),
        _ms(p50.group(1), p50.group(2)),
        _ms(p99.group(1), p99.group(2)),
        int(total.group(1)),
        int(non_2xx.group(1)) if non_2xx else 0,
        sock.group(1).strip() if sock else "",
    )


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres(base: Path) -> Iterator[str]:
    """A throwaway PostgreSQL cluster with stock connection limits; yields its SQLAlchemy URL."""
    data, sock = base / "pg", base / "sock"
    sock.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    run = lambda cmd: subprocess.run(_as_postgres(cmd), capture_output=True, text=True, timeout=120)  # noqa: E731
    proc = run([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"])
    if proc.returncode != 0:
        raise RuntimeError(f"initdb failed: {proc.stderr[-500:]}")
    port = free_port()
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
    proc = run(
        [str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(base / "pg.log"), "-w", "start"]
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pg_ctl start failed: {proc.stderr[-500:]}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])


@contextmanager
def hub(work: Path, database_url: str | None, workers: int) -> Iterator[str]:
    """A seeded hub (10 projects × 5 versions under owner ``bench``); yields its base URL."""
    env, vf_hub, token = prepare_hub(work, database_url)
    port = free_port()
    serve = [*vf_hub, "serve", "--port", str(port), "--workers", str(workers), "--no-access-log"]
    log = (work / "hub.log").open("wb")  # tracebacks of failed requests go here, not over the table
    proc = subprocess.Popen([*serve, "--log-level", "warning"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, timeout=60)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
            for name in PROJECTS:
                for version in VERSIONS:
                    (wn, wb), (sn, sb) = tiny_dists(name, version)
                    r = c.post(
                        f"/api/v1/environments/bench/{name}/versions",
                        files={"wheel": (wn, wb), "sdist": (sn, sb)},
                    )
                    r.raise_for_status()
        for path in ENDPOINTS.values():  # every endpoint answers before the clock starts
            httpx.get(url + path, timeout=30).raise_for_status()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        errors = (work / "hub.log").read_text(errors="replace").count("Traceback")
        if errors:
            print(f"  (the hub logged {errors} tracebacks)", flush=True)


Row = tuple[str, str, int, Result]


def measure(args: argparse.Namespace, levels: list[int], pythonpath: str | None) -> list[Row]:
    """Every (backend, concurrency, endpoint) of ``args`` against the hub code on ``pythonpath``."""
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath  # prepare_hub and vf-hub serve inherit it
    try:
        rows: list[Row] = []
        for backend in args.backends.split(","):
            with tempfile.TemporaryDirectory(prefix="vf-hub-api-bench-") as tmp:
                work = Path(tmp)
                with nullcontext() if backend == "sqlite" else postgres(work) as db_url:
                    workers = 1 if backend == "sqlite" else args.pg_workers
                    label = f"{backend} ×{workers}"
                    with hub(work, db_url, workers) as url:
                        for connections in levels:
                            for name, path in ENDPOINTS.items():
                                result = run_wrk(url + path, args.seconds, connections)
                                rows.append((label, name, connections, result))
                                print(
                                    f"{label:<12} {name:<8} c={connections:<4} {result.rps:>8.0f} req/s  "
                                    f"p50 {result.p50_ms:>7.1f} ms  p99 {result.p99_ms:>8.1f} ms  "
                                    f"non-2xx {result.non_2xx}  {result.socket_errors}",
                                    flush=True,
                                )
                                time.sleep(1)
        return rows
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=20, help="wrk duration per run")
    parser.add_argument("--connections", default="64,256", help="comma-separated concurrency levels")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--pg-workers", type=int, default=4)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare against")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed", file=sys.stderr)
        return 2
    levels = [int(c) for c in args.connections.split(",")]
    load_before = os.getloadavg()[0]
    baseline: dict[tuple[str, str, int], Result] = {}
    if args.baseline is not None:
        print(f"baseline: {args.baseline}", flush=True)
        baseline = {(lb, n, c): r for lb, n, c, r in measure(args, levels, str(args.baseline.resolve()))}
        print("this checkout:", flush=True)
    rows = measure(args, levels, None)

    print(f"\nwrk -t2 -d{args.seconds}s --latency, load average before: {load_before:.1f}\n")
    ratio_head = " req/s ratio | p99 ratio |" if baseline else ""
    print(f"| backend | endpoint | c | req/s | p50 ms | p99 ms | non-2xx / requests |{ratio_head}")
    print("| --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if baseline else ""))
    ok = True
    for label, name, connections, r in rows:
        ratios = ""
        base = baseline.get((label, name, connections))
        if base is not None:
            ratios = f" {r.rps / base.rps:.2f}x | {base.p99_ms / r.p99_ms:.2f}x |"
        print(
            f"| {label} | {name} | {connections} | {r.rps:,.0f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | "
            f"{r.non_2xx} / {r.requests} |{ratios}"
        )
        ok &= r.non_2xx == 0 and not r.socket_errors
        if label.startswith("sqlite") and connections == 64:
            ok &= r.p99_ms < P99_LIMIT_MS
    print(f"\ntargets (no non-2xx, SQLite p99 < {P99_LIMIT_MS:.0f} ms at c=64): {'OK' if ok else 'MISSED'}")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
