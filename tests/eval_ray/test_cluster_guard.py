"""A test Ray cluster never outlives the test process: killed with SIGKILL mid-run (no teardown at all), its
process leaves nothing of Ray behind — not the nodes, nor the agents Ray starts in sessions of their own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.eval_ray.conftest import FAST_HEALTH, descendants

ROOT = Path(__file__).resolve().parents[2]
#: A process that starts a head node, prints the pids of everything the node runs, and waits to be killed.
CHILD = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.eval_ray.conftest import RayCluster, descendants
cluster = RayCluster(Path(tempfile.mkdtemp(prefix="ray-guard-test-")))
cluster.start_head()
time.sleep(3)  # let the head start its agents, the orphans this is about
pids = [p for node in cluster.nodes for p in [node.pid, *descendants(node.pid)]]
print(json.dumps({"pids": pids, "cgroup": str(cluster.cgroup)}), flush=True)
time.sleep(3600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent's wait is missing


def test_a_killed_test_process_leaves_no_ray_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ROOT)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **FAST_HEALTH},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, "the child did not start a Ray head"
        started = json.loads(line)
        pids: list[int] = started["pids"]
        assert len(pids) > 3, pids  # ray start, GCS, raylet, agents...
        os.kill(child.pid, signal.SIGKILL)  # no teardown, no atexit: as an interrupted CI job dies
        child.wait()
        deadline = time.monotonic() + 120  # a guard against a hang, not a speed requirement
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.5)
        survivors = {p: Path(f"/proc/{p}/cmdline").read_bytes()[:200] for p in pids if alive(p)}
        assert not survivors, f"Ray processes outlived the test process: {survivors}"
        assert not Path(started["cgroup"]).exists(), "the cluster's cgroup was not removed"
        assert not any(alive(p) for p in descendants(os.getpid()) if p != child.pid)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
