"""On-disk records of live sandboxes, so that a later process can clean up after a dead one.

Each sandbox owns ``<state root>/<id>/`` (default root ``/tmp/vf-sandboxes``, or ``$VF_SANDBOX_DIR``) holding
``owner`` (``<pid> <start time>`` of the process that created it: the start time guards against pid
reuse), ``meta.json`` (backend and the host pids or container names to kill) and whatever the backend
needs (an OCI bundle, runsc's state, a local workspace). :func:`reap_orphans` tears down every sandbox
whose owner is gone.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.errors import SandboxError
from verifiers.sandbox._procs import pid_is, proc_start_time

log = logging.getLogger("verifiers.sandbox")

ID_PREFIX = "vfsb-"


def state_root() -> Path:
    return Path(os.environ.get("VF_SANDBOX_DIR") or "/tmp/vf-sandboxes")


def ensure_state_root() -> Path:
    """Create the state root, refusing one that another user could tamper with (the reaper kills pids)."""
    root = state_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = root.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise SandboxError(
            f"sandbox state dir {root} must be a directory owned by uid {os.geteuid()} and not writable by others"
        )
    return root


@dataclass
class StateDir:
    """The record of one sandbox."""

    id: str
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, sandbox_id: str, backend: str) -> StateDir:
        path = ensure_state_root() / sandbox_id
        path.mkdir(mode=0o700)
        me = os.getpid()
        (path / "owner").write_text(f"{me} {proc_start_time(me)}\n")
        sd = cls(sandbox_id, path, {"id": sandbox_id, "backend": backend, "created": time.time()})
        sd.save()
        return sd

    @classmethod
    def load(cls, path: Path) -> StateDir:
        try:
            meta = json.loads((path / "meta.json").read_text())
        except (OSError, ValueError):
            meta = {}
        return cls(path.name, path, meta)

    def save(self) -> None:
        tmp = self.path / "meta.json.tmp"
        tmp.write_text(json.dumps(self.meta))
        tmp.replace(self.path / "meta.json")

    def owner_alive(self) -> bool:
        try:
            pid_s, start_s = (self.path / "owner").read_text().split()
            return pid_is(int(pid_s), int(start_s))
        except (OSError, ValueError):
            # No readable owner yet: a sandbox being created right now. Leave it unless it is old.
            try:
                return time.time() - self.path.stat().st_mtime < 60
            except OSError:
                return False

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def iter_states() -> Iterator[StateDir]:
    root = state_root()
    if not root.is_dir():
        return
    for child in sorted(root.iterdir()):
        if child.name.startswith(ID_PREFIX) and child.is_dir():
            yield StateDir.load(child)


def reap_orphans(
    teardowns: Mapping[str, Callable[[StateDir], None]], *, only_these: bool = False
) -> list[str]:
    """Tear down every sandbox whose owner process is gone; returns the ids removed.

    ``teardowns`` maps a backend name to the function that hard-kills what its records describe; a record
    of another backend is only removed, or with ``only_these`` left alone (for its own backend to reap).
    Safe to call at any time from any process: sandboxes of live owners are left alone.
    """
    reaped = []
    for sd in iter_states():
        backend = str(sd.meta.get("backend"))
        if (only_these and backend not in teardowns) or sd.owner_alive():
            continue
        teardown = teardowns.get(backend)
        try:
            if teardown is not None:
                teardown(sd)
        except Exception as exc:  # keep going: one broken record must not block the others
            log.warning("sandbox reaper: teardown of %s failed: %s", sd.id, exc)
        sd.remove()
        reaped.append(sd.id)
    if reaped:
        log.info("sandbox reaper removed %d orphaned sandbox(es): %s", len(reaped), ", ".join(reaped))
    return reaped
