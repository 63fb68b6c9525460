"""The backend base: what every backend shares around its own launch — the sandbox's record, the agent's
hello, the teardown paths, and the list of live sandboxes torn down at exit if the program forgot them.

All backends start the same in-sandbox agent (``_agent.py``, see ``_launch``) and talk to it over a pipe
pair; they differ only in how the agent is confined (``_launch`` of each backend module) and in how its
processes are killed (``teardown``). The choice among them is ``_registry``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from verifiers._exit_hooks import register_exit_hook
from verifiers.errors import SandboxError
from verifiers.sandbox import _cgroup as cgroup
from verifiers.sandbox._cgroup import SandboxCgroup
from verifiers.sandbox._host import host_python
from verifiers.sandbox._launch import CREATE_TIMEOUT_S, Launched
from verifiers.sandbox._procs import kill_if, proc_start_time
from verifiers.sandbox._sandbox import Sandbox, _recv
from verifiers.sandbox._state import ID_PREFIX, StateDir, reap_orphans
from verifiers.sandbox._types import SandboxLimits

log = logging.getLogger("verifiers.sandbox")

_live: dict[str, tuple[StateDir, SandboxBackend]] = {}
_live_lock = threading.Lock()
_reaped_once: set[str] = set()


def _cleanup_at_exit() -> None:
    """Tear down sandboxes the program forgot to destroy (bwrap and local die with us; runsc does not)."""
    with _live_lock:
        items = list(_live.values())
        _live.clear()
    for sd, backend in items:
        try:
            backend.teardown(sd)
        except Exception as exc:  # keep going; the reaper of a later process gets another chance
            log.warning("sandbox %s: teardown at exit failed: %s", sd.id, exc)
        sd.remove()


class SandboxBackend(ABC):
    """Creates sandboxes of one kind. Subclasses set ``name`` and ``contained`` and implement the launch."""

    name: ClassVar[str]
    #: Whether the backend is a security boundary (False only for ``local``).
    contained: ClassVar[bool] = True

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool:
        """Whether this machine can run the backend (binary present and usable by this user)."""

    @abstractmethod
    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        """Start the agent and return its pipes."""

    @classmethod
    @abstractmethod
    def teardown(cls, sd: StateDir) -> None:
        """Synchronously kill everything a sandbox record describes (used by destroy and by the reaper)."""

    def __init__(self, *, site_packages: bool = False) -> None:
        #: Whether sandboxes see the packages installed in the host interpreter's own site-packages. Off
        #: by default: sandboxed code gets the standard library only, the same on every machine, and no
        #: start-up hooks (.pth files) of the host.
        self.site_packages = site_packages

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def _site_mask(self, sd: StateDir) -> tuple[str, Path] | None:
        """The host site-packages to hide inside the sandbox and the (created) empty dir to mount over it,
        or None when nothing is hidden."""
        py = host_python()
        if self.site_packages or py.prefix.startswith("/usr/") or py.site_packages is None:
            return None
        empty = sd.path / "empty"
        empty.mkdir(exist_ok=True)
        return py.site_packages, empty

    async def start(self) -> None:
        """Once per process and backend: clean up this backend's sandboxes left behind by dead processes
        (those of the other backends wait for their own backend, or ``verifiers.sandbox.reap_orphans``)."""
        if self.name not in _reaped_once:
            _reaped_once.add(self.name)
            await asyncio.to_thread(reap_orphans, {self.name: type(self).teardown}, only_these=True)

    async def create(self, limits: SandboxLimits | None = None) -> Sandbox:
        """Start a new sandbox; raises :class:`SandboxError` if it cannot be started."""
        limits = limits or SandboxLimits()
        await self.start()
        register_exit_hook("verifiers.sandbox", _cleanup_at_exit)
        sid = ID_PREFIX + secrets.token_hex(6)
        sd = await asyncio.to_thread(StateDir.create, sid, self.name)
        with _live_lock:
            _live[sid] = (sd, self)
        launched: Launched | None = None
        try:
            launched = await self._launch(sd, limits)
            try:
                hello, _ = await asyncio.wait_for(_recv(launched.reader), CREATE_TIMEOUT_S)
            except (TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                raise SandboxError(f"{self.name} sandbox did not start: {self._startup_log(sd)}") from exc
            if not hello.get("ok"):
                raise SandboxError(f"{self.name} sandbox agent failed: {hello}")
        except BaseException:
            if launched is not None:
                launched.writer.close()
                launched.read_transport.close()
            await self._discard(sd)
            raise
        if not self.contained:
            log.warning(
                "sandbox %s uses the 'local' backend: commands run as plain subprocesses on the host, with "
                "rlimits but WITHOUT filesystem, network or process isolation. It is not a security boundary.",
                sid,
            )
        backend = self

        proc = launched.proc

        async def teardown() -> None:
            await backend._discard(sd)
            if proc.returncode is None:
                # bwrap and the local agent are our children: reap them (they are dead by now).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 5.0)

        def kill() -> None:
            backend.kill_now(sd)

        return Sandbox(
            sandbox_id=sid,
            backend=self.name,
            contained=self.contained,
            limits=limits,
            reader=launched.reader,
            writer=launched.writer,
            read_transport=launched.read_transport,
            teardown=teardown,
            kill=kill,
            workdir=launched.workdir,
            oom_kills=launched.oom_kills,
            limits_per_sandbox=launched.limits_per_sandbox,
            oom_fd=launched.oom_fd,
        )

    def kill_now(self, sd: StateDir) -> None:
        """Kill a sandbox's processes at once, without blocking on external tools (destroy follows)."""
        self.teardown(sd)

    async def _discard(self, sd: StateDir) -> None:
        try:
            await asyncio.to_thread(self.teardown, sd)
        finally:
            await asyncio.to_thread(sd.remove)
            with _live_lock:
                _live.pop(sd.id, None)

    def _make_cgroup(self, sd: StateDir, limits: SandboxLimits) -> SandboxCgroup | None:
        """The sandbox's own memory and pids cgroups (recorded for teardown), or None, loudly, where the
        host has none to give: then only per-process rlimits hold."""
        cg = cgroup.create(sd.id, limits.memory_mb, limits.max_threads)
        if cg is None:
            log.warning(
                "sandbox %s (%s): no cgroup could be created under %s (needs root and cgroup v1 memory and "
                "pids controllers): memory_mb is enforced PER PROCESS only, as address space (RLIMIT_AS), so "
                "the sandbox as a whole can use up to max_procs x memory_mb, and thread-heavy programs may "
                "hit it",
                sd.id, self.name, cgroup.cgroup_root(),
            )  # fmt: skip
            return None
        sd.meta["cgroup"] = cg.to_meta()
        sd.save()
        return cg

    @staticmethod
    def _remove_cgroup(sd: StateDir) -> None:
        cg = SandboxCgroup.from_meta(sd.meta.get("cgroup"))
        if cg is not None:
            cgroup.remove(cg)

    @staticmethod
    def _startup_log(sd: StateDir) -> str:
        try:
            text = (sd.path / "startup.log").read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text[-2000:] or "(no output)"

    # The host process of bwrap and local sandboxes, recorded with its start time so that a teardown (or a
    # later process's reaper) never kills a recycled pid.
    @staticmethod
    def _record_host_pid(sd: StateDir, pid: int) -> None:
        sd.meta["host_pid"] = pid
        sd.meta["host_pid_start"] = proc_start_time(pid)
        sd.save()

    @staticmethod
    def _kill_host_pid(sd: StateDir) -> None:
        kill_if(sd.meta.get("host_pid"), sd.meta.get("host_pid_start"), sd.id)
