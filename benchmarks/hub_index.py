"""Simple-index throughput: the hub vs pypiserver (waitress, cached-dir backend), same 50 distributions.

    python benchmarks/hub_index.py [--duration 10] [--connections 32] [--check]

Generates 10 projects × 5 versions of tiny but real wheels + sdists, publishes them to a fresh hub
(`vf-hub serve`, one uvicorn worker, no access log) and drops the same files into a pypiserver
directory, then runs ``wrk -t2 -c32`` against ``/simple/`` and ``/simple/<project>/`` on both servers in
the same run and prints req/s, p99 latency and the ratios. ``--check`` exits 1 when a target is missed
(≥ 1.5× on /simple/, ≥ 3× on /simple/<project>/, p99 < 50 ms).

Needs ``wrk`` and ``pip install 'pypiserver[cache]' waitress`` (both in the dev extra).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
from _smoke import parse_args

from verifiers.clients.local_model import free_port

PROJECTS = [f"bench-env-{i:02d}" for i in range(10)]
VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "1.0.0", "1.1.0"]
TARGETS = {"/simple/": 1.5, "/simple/<project>/": 3.0}
P99_LIMIT_MS = 50.0


def tiny_dists(name: str, version: str) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """A real wheel and sdist for an environment package with one module exposing load_environment."""
    module = name.replace("-", "_")
    stem = f"{module}-{version}"
    source = b"def load_environment(**kwargs):\n    raise NotImplementedError\n"
    metadata = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: benchmark package\n"
        "Requires-Python: >=3.11\n\n"
    ).encode()
    # The hub builds nothing, but an sdist must be buildable by hatchling alone (hub_server/build_rules.py).
    pyproject = (
        f'[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\nrequires-python = ">=3.11"\n'
    ).encode()
    files = {
        f"{module}/__init__.py": source,
        f"{stem}.dist-info/METADATA": metadata,
        f"{stem}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
        for p, d in files.items()
    ]
    files[f"{stem}.dist-info/RECORD"] = ("\n".join([*record, f"{stem}.dist-info/RECORD,,"]) + "\n").encode()
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    sdist = io.BytesIO()
    with gzip.GzipFile(fileobj=sdist, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        members = (
            (f"{stem}/PKG-INFO", metadata),
            (f"{stem}/pyproject.toml", pyproject),
            (f"{stem}/{module}/__init__.py", source),
        )
        for path, data in members:
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return (f"{stem}-py3-none-any.whl", wheel.getvalue()), (f"{stem}.tar.gz", sdist.getvalue())


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


@dataclass
class Result:
    rps: float
    p99_ms: float


VF_HUB = [sys.executable, "-m", "hub_server.cli"]


def prepare_hub(work: Path, database_url: str | None = None) -> tuple[dict[str, str], list[str], str]:
    """A migrated hub data dir under ``work`` with user ``bench``: its environment, the ``vf-hub``
    command and a publish token (shared by the hub benchmarks)."""
    env = {**os.environ, "VF_HUB_DATA_DIR": str(work / "hub"), "VF_HUB_MAX_ARCHIVE_MEMBERS": "100"}
    env["VF_HUB_SMOKE_CHECKS"] = "false"  # a sandboxed check per publish would load the machine under test
    env.pop("VF_HUB_DATABASE_URL", None)
    if database_url:
        env["VF_HUB_DATABASE_URL"] = database_url
    subprocess.run([*VF_HUB, "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run([*VF_HUB, "user", "create", "bench"], env=env, check=True, capture_output=True)
    return env, list(VF_HUB), create_token(env, "publish")


def create_token(env: dict[str, str], scope: str) -> str:
    """A new token of user ``bench`` with ``scope``, made by ``vf-hub token create`` on the hub of ``env``."""
    return subprocess.run(
        [*VF_HUB, "token", "create", "bench", "--scope", scope],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


PIP_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
)


def run_wrk(url: str, duration: int, connections: int, accept: str | None = None) -> Result:
    headers = ["-H", f"Accept: {accept}"] if accept else []
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", *headers, url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if rps is None or p99 is None:
        raise RuntimeError(f"cannot parse wrk output:\n{out}")
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} error responses during the run")
    return Result(float(rps.group(1)), _ms(p99.group(1), p99.group(2)))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--hub-workers", type=int, default=1, help="uvicorn worker processes for the hub")
    args = parse_args(parser, None, duration=1, connections=4)
    load_before = os.getloadavg()[0]  # other work on the machine skews the figures, p99 most
    if shutil.which("wrk") is None:
        print("wrk is not installed", file=sys.stderr)
        return 2
    pypi_server = shutil.which("pypi-server") or str(Path(sys.executable).parent / "pypi-server")
    if not Path(pypi_server).exists() or importlib.util.find_spec("waitress") is None:
        print(
            "pypiserver + waitress are not installed: pip install 'pypiserver[cache]' waitress",
            file=sys.stderr,
        )
        return 2

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="vf-hub-bench-") as tmp:
        work = Path(tmp)
        packages = work / "packages"
        packages.mkdir()
        dists = {(n, v): tiny_dists(n, v) for n in PROJECTS for v in VERSIONS}
        for wheel, sdist in dists.values():
            for filename, data in (wheel, sdist):
                (packages / filename).write_bytes(data)
        try:
            # --- the hub ---
            env, vf_hub, token = prepare_hub(work)
            hub_port = free_port()
            procs.append(
                subprocess.Popen(
                    [
                        *vf_hub,
                        "serve",
                        "--port",
                        str(hub_port),
                        "--workers",
                        str(args.hub_workers),
                        "--no-access-log",
                        "--log-level",
                        "warning",
                    ],
                    env=env,
                )
            )
            hub_url = f"http://127.0.0.1:{hub_port}"
            wait_http(f"{hub_url}/healthz", procs[-1])
            with httpx.Client(
                base_url=hub_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as c:
                for (name, _), ((wn, wb), (sn, sb)) in dists.items():
                    r = c.post(
                        f"/api/v1/environments/bench/{name}/versions",
                        files={"wheel": (wn, wb), "sdist": (sn, sb)},
                    )
                    r.raise_for_status()
            # --- pypiserver, its fastest setup: waitress (what `--server auto` picks when it is installed;
            # this pypiserver has no explicit `waitress` choice), cached directory listing and hashes ---
            pypi_port = free_port()
            procs.append(
                subprocess.Popen(
                    [
                        pypi_server,
                        "run",
                        "-p",
                        str(pypi_port),
                        "-i",
                        "127.0.0.1",
                        "--server",
                        "auto",
                        "--backend",
                        "cached-dir",
                        "-a",
                        ".",
                        "-P",
                        ".",
                        "--log-stream",
                        "none",
                        str(packages),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            pypi_url = f"http://127.0.0.1:{pypi_port}"
            wait_http(f"{pypi_url}/simple/", procs[-1])

            project = PROJECTS[3]
            paths = {"/simple/": "/simple/", "/simple/<project>/": f"/simple/{project}/"}
            for base in (hub_url, pypi_url):  # same content on both, and warm caches
                for path in paths.values():
                    page = httpx.get(base + path).text
                    assert ("bench-env-00" in page) if path == "/simple/" else (page.count("<a ") == 10), (
                        base,
                        path,
                    )

            results: dict[tuple[str, str], Result] = {}
            for label, path in paths.items():
                for server, base in (("hub", hub_url), ("pypiserver", pypi_url)):
                    results[(server, label)] = run_wrk(base + path, args.duration, args.connections)
            # What pip actually asks for (PEP 691 JSON); pypiserver only serves HTML, so hub only.
            pip_json = run_wrk(
                hub_url + paths["/simple/<project>/"], args.duration, args.connections, PIP_ACCEPT
            )
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()

    ok = True
    print(
        f"\nwrk -t2 -c{args.connections} -d{args.duration}s, 10 projects × 5 versions (wheel + sdist), "
        f"hub workers: {args.hub_workers}, load average before: {load_before:.1f}\n"
    )
    print(f"{'path':<22}{'server':<12}{'req/s':>10}{'p99 ms':>10}")
    for label in paths:
        for server in ("hub", "pypiserver"):
            res = results[(server, label)]
            print(f"{label:<22}{server:<12}{res.rps:>10.0f}{res.p99_ms:>10.2f}")
    print(
        f"{'/simple/<project>/':<22}{'hub (JSON)':<12}{pip_json.rps:>10.0f}{pip_json.p99_ms:>10.2f}  (pip's Accept)"
    )
    print()
    for label, target in TARGETS.items():
        hub, ref = results[("hub", label)], results[("pypiserver", label)]
        ratio = hub.rps / ref.rps
        met = ratio >= target and hub.p99_ms < P99_LIMIT_MS
        ok &= met
        print(
            f"{label:<22} hub/pypiserver = {ratio:.2f}x (target ≥ {target}x), hub p99 {hub.p99_ms:.2f} ms "
            f"(target < {P99_LIMIT_MS:.0f} ms): {'OK' if met else 'MISSED'}"
        )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
