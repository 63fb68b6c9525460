"""Kills a test Ray cluster when the test process that started it is gone, however it went.

``python tests/eval_ray/_cluster_guard.py CGROUP`` runs in a session of its own and blocks on its stdin, a
pipe whose only writer is the test process. Every ``ray start`` of the cluster joins the cgroup ``CGROUP``
(v1 ``pids``) before it execs, so every process Ray forks — raylet, GCS, ``DashboardAgent``,
``RuntimeEnvAgent``, workers, each in a session of its own — is born in it and stays there even once
orphaned. When the pipe closes (a normal teardown, or the test process killed with SIGKILL) the guard
kills everything in the cgroup until it is empty and removes it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def kill_all(cgroup: Path) -> None:
    procs = cgroup / "cgroup.procs"
    for _ in range(600):  # a fork racing the kill is caught on the next pass
        try:
            pids = [int(p) for p in procs.read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    for _ in range(100):  # rmdir fails while the killed tasks are still exiting
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def main() -> None:
    cgroup = Path(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the test run must not skip the clean-up
    sys.stdin.buffer.read()  # returns at EOF: the test process closed the pipe, or died
    kill_all(cgroup)


if __name__ == "__main__":
    main()
