"""A real local Ray cluster for the distributed-evaluation tests: a head node and worker nodes, each its
own ``ray start --block`` process group on this machine (one CPU each, no dashboard), killed by process
group in teardown — never ``ray stop``, which would stop every Ray instance on the machine.

Without Ray installed the tests skip; with ``VF_REQUIRE_RAY=1`` (CI) that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.tiers import component_missing

RAY = Path(sys.executable).with_name("ray")
#: Nodes that stop answering are declared dead within about two seconds (Ray's default is ~30 s).
FAST_HEALTH = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Loopback-only test clusters: without this, a token Ray wrote to ~/.ray/auth_token earlier (its
    # local ray.init() does) switches the head to token auth and the drivers' connections fail.
    "RAY_AUTH_MODE": "disabled",
}
NODE_FLAGS = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats", "--block"]


def _ray_missing() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'verifiers-sdk[ray]')"
    return None if RAY.exists() else f"{RAY} not found"


@pytest.fixture(scope="session", autouse=True)
def _require_ray() -> None:
    missing = _ray_missing()
    if missing is not None:
        component_missing("VF_REQUIRE_RAY", missing)


@dataclass
class RayCluster:
    root: Path
    address: str = ""
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _start(self, *args: str, name: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - kept open for the process's life
        proc = subprocess.Popen(
            [str(RAY), "start", *args, *NODE_FLAGS],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **FAST_HEALTH},
            start_new_session=True,  # its own process group: killed as one
        )
        self.nodes.append(proc)
        return proc

    def start_head(self) -> None:
        self._start("--head", "--port=0", "--include-dashboard=false", name="head")
        log = self.root / "head.log"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            m = re.search(r"ray start --address='([^']+)'", log.read_text(errors="replace"))
            if m:
                self.address = m.group(1)
                return
            if self.nodes[0].poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"the Ray head did not start:\n{log.read_text(errors='replace')[-3000:]}")

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        proc = self._start(f"--address={self.address}", f'--resources={{"{name}": 1}}', name=name)
        self.wait_for_nodes(sum(1 for p in self.nodes if p.poll() is None))
        return proc

    def alive_nodes(self) -> int:
        out = subprocess.run(
            [sys.executable, "-c", _COUNT_NODES, self.address],
            capture_output=True,
            text=True,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
            timeout=60,
        )
        return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else 0

    def wait_for_nodes(self, n: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive_nodes() >= n:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster did not reach {n} nodes")

    @staticmethod
    def kill(proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL a node as a machine dies: its process group and every descendant (Ray's worker
        processes, actors included, run in sessions of their own under the raylet)."""
        doomed = descendants(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(30)

    def stop(self) -> None:
        for proc in reversed(self.nodes):
            self.kill(proc)
        forget_cluster(self.address)


def forget_cluster(address: str) -> None:
    """Remove ``ray start``'s note of the head it started (``/tmp/ray/ray_current_cluster``), which a
    later ``ray.init()`` without an address would try to join after the cluster is gone."""
    note = Path("/tmp/ray/ray_current_cluster")
    try:
        if address and note.read_text().strip() == address:
            note.unlink()
    except OSError:
        pass


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


_COUNT_NODES = (
    "import sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
    "print(sum(1 for n in ray.nodes() if n['Alive']))"
)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """A head and one worker node, for the whole session."""
    cluster = RayCluster(tmp_path_factory.mktemp("ray"))
    with pytest.MonkeyPatch.context() as mp:
        for k, v in FAST_HEALTH.items():  # the drivers: this process and the vf-eval it starts
            mp.setenv(k, v)
        try:
            cluster.start_head()
            cluster.add_worker("worker1")
            yield cluster
        finally:
            cluster.stop()
            shutil.rmtree(cluster.root, ignore_errors=True)
