"""JSON API under load: environment detail, search and resolve, on SQLite (1 worker) and PostgreSQL (one worker per core).

    python benchmarks/hub_api.py [--seconds 20] [--connections 64,256] [--backends sqlite,postgres]
        [--mix hit|miss|auth|authmiss|all] [--check]

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

Anonymous GETs of these endpoints are answered from an in-memory cache (``hub_server/api_cache.py``), so
``--mix`` (comma-separated, default ``all``) picks which traffic each endpoint gets:

* ``hit``: one anonymous URL repeated, i.e. cache hits after the first request;
* ``miss``: every request a URL the cache has never seen, so each one takes the full route (database
  read, validation, JSON). A wrk Lua script cycles through varied real URLs (search over a generated word
  list × page sizes; detail across the 10 projects; resolve across projects × PEP 440 specifiers) and
  appends a per-request ``_=<thread>.<n>`` query parameter that the routes ignore but the cache keys on;
* ``auth``: the ``hit`` URL with ``Authorization: Bearer <read token>``: the token is checked on every
  request (its principal from memory), then the answer comes from the signed-in callers' cache
  (``hub_server/principal_cache.py``) after the first;
* ``authmiss``: the ``miss`` URLs with that token: the full route for a signed-in caller.

On a hub without the caches (a ``--baseline`` checkout from before them) hit and miss cost the same.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import httpx
from _smoke import parse_args

sys.path.insert(0, str(Path(__file__).parent))
from hub_index import PROJECTS, VERSIONS, create_token, free_port, prepare_hub, tiny_dists, wait_http

PG_BIN = Path(os.environ.get("VF_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
ENDPOINTS = {
    "detail": "/api/v1/environments/bench/bench-env-03",
    "search": "/api/v1/environments?q=bench&per_page=20",
    "resolve": "/api/v1/resolve?spec=bench%2Fbench-env-03%40%3E%3D0.2",
}
P99_LIMIT_MS = 250.0
MIXES = ("hit", "miss", "auth", "authmiss")
#: Search texts for the miss mix: words that match every, some or none of the seeded environments.
SEARCH_WORDS = ["bench", "env", "bench-env", "benchmark", "package", "nothing-here", *PROJECTS]
SPECIFIERS = ["", "@>=0.2", "@<1", "@==0.3.0", "@~=1.0", "@!=1.1.0", "@>0.1,<1.1"]


def miss_paths() -> dict[str, list[str]]:
    """Per endpoint, varied real URLs (each ending in ``?`` or ``&``, ready for the cache-busting nonce)."""
    q = urllib.parse.quote
    return {
        "detail": [f"/api/v1/environments/bench/{name}?" for name in PROJECTS],
        "search": [
            f"/api/v1/environments?q={q(word)}&per_page={per_page}&"
            for word in SEARCH_WORDS
            for per_page in (5, 10, 20, 50)
        ],
        "resolve": [
            f"/api/v1/resolve?spec={q(f'bench/{name}{spec}', safe='')}&"
            for name in PROJECTS
            for spec in SPECIFIERS
        ],
    }


def miss_script(name: str, paths: list[str], directory: Path) -> Path:
    """A wrk Lua script: each request the next of ``paths`` plus a nonce unique across wrk's threads."""
    items = ",\n".join(f'  "{p}"' for p in paths)  # the paths are URL-quoted: no quote or backslash
    script = directory / f"miss-{name}.lua"
    script.write_text(
        f"local paths = {{\n{items}\n}}\n"
        "local threads = 0\n"
        "function setup(thread)\n"
        "  threads = threads + 1\n"
        '  thread:set("tid", threads)\n'
        "end\n"
        "local n = 0\n"
        "function request()\n"
        "  n = n + 1\n"
        '  return wrk.format(nil, paths[(n % #paths) + 1] .. "_=" .. tid .. "." .. n)\n'
        "end\n"
    )
    return script


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


def run_wrk(
    url: str,
    seconds: int,
    connections: int,
    script: Path | None = None,
    headers: tuple[str, ...] = (),
) -> Result:
    extra = [*(["-s", str(script)] if script else []), *(a for h in headers for a in ("-H", h))]
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "30s", "--latency", *extra, url],
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

    def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(_as_postgres(cmd), capture_output=True, text=True, timeout=120)

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
def hub(work: Path, database_url: str | None, workers: int) -> Iterator[tuple[str, str]]:
    """A seeded hub (10 projects × 5 versions under owner ``bench``); yields its base URL and a read token."""
    env, vf_hub, token = prepare_hub(work, database_url)
    read_token = create_token(env, "read")
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
        # Every URL of every mix answers 200 before the clock starts (miss URLs without their nonce).
        auth = {"Authorization": f"Bearer {read_token}"}
        for path in ENDPOINTS.values():
            httpx.get(url + path, timeout=30).raise_for_status()
            httpx.get(url + path, headers=auth, timeout=30).raise_for_status()
        for paths in miss_paths().values():
            for path in paths:
                httpx.get(url + path.rstrip("?&"), timeout=30).raise_for_status()
        yield url, read_token
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


Row = tuple[str, str, str, int, Result]  # backend label, mix, endpoint, connections, result


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
                    scripts = {n: miss_script(n, p, work) for n, p in miss_paths().items()}
                    with hub(work, db_url, workers) as (url, read_token):
                        for connections, mix, (name, path) in itertools.product(
                            levels, args.mixes, ENDPOINTS.items()
                        ):
                            auth = (f"Authorization: Bearer {read_token}",) if mix.startswith("auth") else ()
                            if mix.endswith("miss"):
                                script = scripts[name]
                                result = run_wrk(url, args.seconds, connections, script=script, headers=auth)
                            else:
                                result = run_wrk(url + path, args.seconds, connections, headers=auth)
                            rows.append((label, mix, name, connections, result))
                            print(
                                f"{label:<12} {mix:<8} {name:<8} c={connections:<4} {result.rps:>8.0f} req/s  "
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
    parser.add_argument(
        "--pg-workers",
        type=int,
        default=os.cpu_count() or 1,
        help="hub workers on PostgreSQL (default: one per core; more only contend with wrk and PostgreSQL)",
    )
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare against")
    parser.add_argument(
        "--mix", default="all", help="comma-separated hit, miss, auth, authmiss (see above), or all"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parse_args(parser, None, seconds=1, connections="8", mix="hit,miss", pg_workers=1)
    args.mixes = list(MIXES) if args.mix == "all" else args.mix.split(",")
    if unknown := set(args.mixes) - set(MIXES):
        parser.error(f"unknown --mix {','.join(sorted(unknown))}; choose from {','.join(MIXES)} or all")
    if shutil.which("wrk") is None:
        print("wrk is not installed", file=sys.stderr)
        return 2
    levels = [int(c) for c in args.connections.split(",")]
    load_before = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}", flush=True)
    baseline: dict[tuple[str, str, str, int], Result] = {}
    if args.baseline is not None:
        print(f"baseline: {args.baseline}", flush=True)
        measured = measure(args, levels, str(args.baseline.resolve()))
        baseline = {(lb, m, n, c): r for lb, m, n, c, r in measured}
        print("this checkout:", flush=True)
    rows = measure(args, levels, None)

    load = " ".join(f"{x:.2f}" for x in load_before)
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())  # others' work mid-run shows here
    print(
        f"\nwrk -t2 -d{args.seconds}s --latency, load average (1/5/15 min) before: {load}, after: {after}\n"
    )
    ratio_head = " req/s ratio | p99 ratio |" if baseline else ""
    print(f"| backend | mix | endpoint | c | req/s | p50 ms | p99 ms | non-2xx / requests |{ratio_head}")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if baseline else ""))
    ok = True
    missed: set[str] = set()
    for label, mix, name, connections, r in rows:
        ratios = ""
        base = baseline.get((label, mix, name, connections))
        if base is not None:
            ratios = f" {r.rps / base.rps:.2f}x | {base.p99_ms / r.p99_ms:.2f}x |"
        print(
            f"| {label} | {mix} | {name} | {connections} | {r.rps:,.0f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | "
            f"{r.non_2xx} / {r.requests} |{ratios}"
        )
        good = r.non_2xx == 0 and not r.socket_errors
        if label.startswith("sqlite") and connections == 64:
            good &= r.p99_ms < P99_LIMIT_MS
        if not good:
            missed.add(mix)
        ok &= good
    for mix in args.mixes:
        state = "MISSED" if mix in missed else "OK"
        print(
            f"\ntargets for mix {mix} (no non-2xx, SQLite p99 < {P99_LIMIT_MS:.0f} ms at c=64): {state}",
            end="",
        )
    print()
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
