"""Finding and killing host processes through ``/proc``, guarded against pid reuse.

A pid alone is not an identity: every kill checks the process's start time (and, where one is given, a
marker on its command line) so that a recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def proc_start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if it does not exist."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    # Field 22 of stat is starttime; we split after field 2 (comm), so it is at index 19.
    return int(fields[19])


def proc_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pid_is(pid: int | None, start: int | None) -> bool:
    """Whether ``pid`` is still the very process that had start time ``start``."""
    return pid is not None and start is not None and proc_start_time(pid) == start


def kill_if(pid: int | None, start: int | None, marker: str | None = None) -> None:
    """SIGKILL ``pid`` only if it is still the recorded process (and its command line has ``marker``)."""
    if not pid_is(pid, start) or pid is None:
        return
    if marker is not None and marker not in proc_cmdline(pid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def kill_matching(marker: str) -> None:
    """SIGKILL every process (but this one) whose command line contains ``marker``."""
    for pid_s in os.listdir("/proc"):
        if pid_s.isdigit() and int(pid_s) != os.getpid() and marker in proc_cmdline(int(pid_s)):
            kill_if(int(pid_s), proc_start_time(int(pid_s)), marker)


def kill_uid(uid: int) -> None:
    """SIGKILL every host process running as ``uid`` (a bwrap sandbox's private uid) until none is left."""
    for _ in range(50):
        pids = processes_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def processes_with_env(marker: str) -> list[int]:
    """Pids whose environment holds ``marker`` (e.g. ``VF_SANDBOX_ID=<id>``), for local sandboxes."""
    needle = marker.encode() + b"\0"
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if needle in env or env.endswith(needle[:-1]):
            out.append(int(name))
    return out


def processes_of_uid(uid: int) -> list[int]:
    """Pids of the processes running as ``uid`` (a bwrap sandbox's private uid, a local sandbox's user)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    out.append(int(name))
    return out
