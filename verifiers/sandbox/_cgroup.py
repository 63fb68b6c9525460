"""Per-sandbox cgroups (v1 ``memory`` and ``pids``) for the bwrap and local backends.

Each sandbox gets ``<controller root>/vf-sandbox/<id>/`` in both controllers: the memory limit covers
everything the sandbox holds in RAM (its processes, and the tmpfs and IPC pages they write, which the
kernel charges to the writer's cgroup), the pids limit every task it runs (threads included: it is the
``max_threads`` bound; ``max_procs`` counts processes and is checked by the agent). The agent's launcher joins
both before it execs (``attach_argv``), so every process of the sandbox is born inside them; each
command process then moves itself into the ``commands`` memory cgroup below (see ``COMMANDS``). The cgroups
are removed (their tasks killed first) by the backend's teardown, which the reaper also runs.

Where no cgroup can be created (no v1 hierarchy, not writable, not root) ``create`` returns None and the
backend falls back to per-process rlimits, warning loudly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("verifiers.sandbox")

PARENT = "vf-sandbox"
#: What the agent, its pre-forked spare and the launcher (bwrap) add to a sandbox's own use: the memory
#: of an idle interpreter (shared pages are charged once) and three tasks.
AGENT_MEMORY_MB = 32
AGENT_TASKS = 3


def cgroup_root() -> Path:
    return Path(os.environ.get("VF_CGROUP_ROOT") or "/sys/fs/cgroup")


#: The memory cgroup of the commands, inside the sandbox's: it is limited to ``memory_mb`` while the
#: sandbox's has the agent's share on top, so commands (and the tmpfs files they write) can never take
#: the memory the agent needs to report on them.
COMMANDS = "commands"


@dataclass(frozen=True)
class SandboxCgroup:
    memory: str
    pids: str

    @property
    def commands_procs(self) -> str:
        """The ``cgroup.procs`` a pre-forked command process writes itself into (before it drops root)."""
        return f"{self.memory}/{COMMANDS}/cgroup.procs"

    @property
    def procs_files(self) -> list[str]:
        return [f"{self.memory}/cgroup.procs", f"{self.pids}/cgroup.procs"]

    def to_meta(self) -> dict[str, str]:
        return {"memory": self.memory, "pids": self.pids}

    @classmethod
    def from_meta(cls, meta: object) -> SandboxCgroup | None:
        if (
            isinstance(meta, dict)
            and isinstance(meta.get("memory"), str)
            and isinstance(meta.get("pids"), str)
        ):
            return cls(meta["memory"], meta["pids"])
        return None

    def oom_eventfd(self) -> int | None:
        """A non-blocking eventfd that becomes readable whenever the kernel OOM-kills a process of the
        sandbox (cgroup v1 ``cgroup.event_control``), or None if the kernel refuses."""
        try:
            efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        except OSError:
            return None
        try:
            ctl = os.open(f"{self.memory}/{COMMANDS}/memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            try:
                Path(self.memory, COMMANDS, "cgroup.event_control").write_text(f"{efd} {ctl}")
            finally:
                # The registration holds its own reference to the control file.
                os.close(ctl)
        except OSError:
            os.close(efd)
            return None
        return efd

    def oom_kills(self) -> int:
        """How many processes the kernel killed for exceeding the memory limit so far."""
        n = 0
        for path in (Path(self.memory, COMMANDS), Path(self.memory)):
            try:
                text = (path / "memory.oom_control").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    n += int(value)
        return n


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def create(sandbox_id: str, memory_mb: int, max_tasks: int) -> SandboxCgroup | None:
    """Create the sandbox's memory and pids cgroups with their limits (``max_tasks``: threads of all its
    commands), or None if this host cannot."""
    root = cgroup_root()
    mem_base, pids_base = root / "memory", root / "pids"
    if not (os.access(mem_base / "cgroup.procs", os.W_OK) and os.access(pids_base / "cgroup.procs", os.W_OK)):
        return None
    made: list[Path] = []
    try:
        for base in (mem_base, pids_base):
            (base / PARENT).mkdir(exist_ok=True)
            (base / PARENT / sandbox_id).mkdir()
            made.append(base / PARENT / sandbox_id)
        mem, pids = made
        (mem / COMMANDS).mkdir()
        made.insert(1, mem / COMMANDS)
        for path, mb in ((mem, memory_mb + AGENT_MEMORY_MB), (mem / COMMANDS, memory_mb)):
            limit = str(mb * 1024 * 1024)
            _write(path / "memory.limit_in_bytes", limit)
            if (path / "memory.memsw.limit_in_bytes").exists():
                # memory+swap at the same value: the sandbox cannot spill past its limit into swap.
                _write(path / "memory.memsw.limit_in_bytes", limit)
        _write(pids / "pids.max", str(max_tasks + AGENT_TASKS))
    except OSError as exc:
        log.warning("sandbox %s: cannot set up its cgroups (%s)", sandbox_id, exc)
        for path in reversed(made):
            _remove_dir(path)
        return None
    return SandboxCgroup(str(mem), str(pids))


def attach_argv(cgroup: SandboxCgroup, argv: list[str]) -> list[str]:
    """``argv`` run by a tiny shell that first moves itself into the sandbox's cgroups (so nothing of the
    sandbox is ever born outside them) and makes itself, the launcher and the agent the last choice of
    the OOM killer (each command raises its own score again, so a command is the one killed)."""
    script = (
        # Lowering the score may be refused (some kernels); commands still raise theirs to the maximum.
        "{ echo -999 > /proc/self/oom_score_adj; } 2>/dev/null; "
        'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "vf-sandbox-cgroup", *cgroup.procs_files, "--", *argv]


def _tasks(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _remove_dir(path: Path) -> None:
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            # Tasks still in it (or just exiting): kill them and try again.
            for pid in _tasks(path):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
    log.warning("cannot remove cgroup %s: tasks left %s", path, _tasks(path))


def remove(cgroup: SandboxCgroup) -> None:
    """Kill every task of the sandbox's cgroups and remove them."""
    for p in (cgroup.memory, cgroup.pids):
        path = Path(p)
        # Only ever a directory of ours: <root>/<controller>/vf-sandbox/<id>.
        if path.parent.name != PARENT:
            continue
        for d in (path / COMMANDS, path):
            for pid in _tasks(d):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if d.exists():
                _remove_dir(d)
