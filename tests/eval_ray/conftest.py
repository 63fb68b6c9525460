"""A real local Ray cluster for the distributed-evaluation tests: a head node and worker nodes, each its
own ``ray start --block`` process group on this machine (one CPU each, no dashboard), killed by process
group in teardown — never ``ray stop``, which would stop every Ray instance on the machine. Every node is
born in the cluster's own cgroup, which a guard process (``_cluster_guard.py``) empties once the test process
is gone, so nothing of a cluster outlives an interrupted or killed test run.

Without Ray installed the tests skip; with ``VF_REQUIRE_RAY=1`` (CI) that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.tiers import component_missing

RAY = Path(sys.executable).with_name("ray")
GUARD = Path(__file__).with_name("_cluster_guard.py")
#: Where each cluster's cgroup is made (v1 ``pids``: it only groups, it sets no limit).
CGROUP_PARENT = Path(os.environ.get("VF_CGROUP_ROOT") or "/sys/fs/cgroup") / "pids" / "vf-test-ray"
#: A killed node is declared dead within about five seconds (its health checks are refused at once; Ray's
#: default takes ~30 s), while a live node on a loaded machine has ten seconds to answer each check.
FAST_HEALTH = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "10000",
    "RAY_health_check_failure_threshold": "5",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Loopback-only test clusters: without this, a token Ray wrote to ~/.ray/auth_token earlier (its
    # local ray.init() does) switches the head to token auth and the drivers' connections fail.
    "RAY_AUTH_MODE": "disabled",
}
NODE_FLAGS = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats", "--block"]
#: ``ray start`` gives up when its raylet has not registered with the GCS within a fixed 30 s (not
#: configurable), which a loaded machine can exceed: starting a node is retried this many times.
NODE_ATTEMPTS = 4
#: How long one node start may take before it counts as hung (a guard, not a speed requirement).
NODE_DEADLINE_S = 300


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
    cgroup: Path | None = None
    guard: subprocess.Popen[bytes] | None = None

    def _guarded(self) -> Path:
        """The cluster's cgroup, with its guard started on first use."""
        if self.cgroup is None:
            cgroup = CGROUP_PARENT / uuid.uuid4().hex[:12]
            try:
                cgroup.mkdir(parents=True)
            except OSError as exc:
                raise RuntimeError(
                    f"cannot create {cgroup} ({exc}): the Ray tests put each cluster in a cgroup of its own "
                    "(cgroup v1 pids, as root) so that none outlives the test run"
                ) from exc
            self.cgroup = cgroup
            self.guard = subprocess.Popen(
                [sys.executable, str(GUARD), str(cgroup)], stdin=subprocess.PIPE, start_new_session=True
            )
        return self.cgroup

    def _start(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        procs = str(self._guarded() / "cgroup.procs")

        def join_cgroup() -> None:  # in the child, before exec: every process of the node is born inside
            with open(procs, "w") as f:
                f.write("0")

        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(RAY), "start", *args, *NODE_FLAGS],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **FAST_HEALTH},
                start_new_session=True,  # its own process group: killed as one
                preexec_fn=join_cgroup,
            )
        self.nodes.append(proc)
        return proc

    def _start_node(
        self, name: str, args: list[str], up: Callable[[subprocess.Popen[bytes], str], bool]
    ) -> subprocess.Popen[bytes]:
        """Start a node, retried when ``ray start`` gives up (or hangs) before ``up(proc, log text)``."""
        failures = []
        for attempt in range(1, NODE_ATTEMPTS + 1):
            log = self.root / f"{name}-{attempt}.log"
            proc = self._start(*args, log=log)
            deadline = time.monotonic() + NODE_DEADLINE_S
            while time.monotonic() < deadline and proc.poll() is None:
                if up(proc, log.read_text(errors="replace")):
                    return proc
                time.sleep(0.2)
            self.kill(proc)
            failures.append(f"--- attempt {attempt} ({log}):\n{log.read_text(errors='replace')[-2000:]}")
        raise RuntimeError(f"the Ray node {name} did not start:\n" + "\n".join(failures))

    def start_head(self) -> None:
        def up(proc: subprocess.Popen[bytes], log: str) -> bool:
            m = re.search(r"ray start --address='([^']+)'", log)  # printed once the head is up
            if m:
                self.address = m.group(1)
            return m is not None

        self._start_node("head", ["--head", "--port=0", "--include-dashboard=false"], up)

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        """A worker node offering the custom resource ``name``, once the cluster counts it alive."""

        def up(proc: subprocess.Popen[bytes], log: str) -> bool:
            # "Ray runtime started." comes once the raylet registered; then the cluster must see it.
            return "Ray runtime started." in log and name in self.alive_resources()

        return self._start_node(name, [f"--address={self.address}", f'--resources={{"{name}": 1}}'], up)

    def alive_resources(self) -> set[str]:
        """The resource names the cluster's live nodes offer (a query slow to answer counts as none yet)."""
        try:
            out = subprocess.run(
                [sys.executable, "-c", _ALIVE_RESOURCES, self.address],
                capture_output=True,
                text=True,
                env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
                timeout=120,
            )
        except subprocess.TimeoutExpired:
            return set()
        # Ray may print its own log lines to stdout too: the answer is the line with the marker.
        answers = [line for line in out.stdout.splitlines() if line.startswith(_ALIVE_MARKER)]
        return (
            set(json.loads(answers[-1][len(_ALIVE_MARKER) :])) if out.returncode == 0 and answers else set()
        )

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
        if self.guard is not None and self.guard.stdin is not None:
            self.guard.stdin.close()  # the guard kills whatever is left in the cgroup and removes it
            self.guard.wait(120)
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


_ALIVE_MARKER = "alive-resources: "
_ALIVE_RESOURCES = (
    "import json, sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
    f"print({_ALIVE_MARKER!r} + json.dumps(sorted({{r for n in ray.nodes() if n['Alive'] for r in n['Resources']}})))"
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
