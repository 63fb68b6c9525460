"""The bubblewrap backend: one long-lived ``bwrap`` per sandbox, commands under a uid of their own."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from pathlib import Path

from verifiers.errors import SandboxError
from verifiers.sandbox import _cgroup as cgroup, _layout as layout, _seccomp as seccomp
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._host import find_tool, host_python, root_can_run
from verifiers.sandbox._launch import AGENT_SOURCE, Launched, spawn_agent
from verifiers.sandbox._procs import kill_matching, kill_uid
from verifiers.sandbox._state import StateDir
from verifiers.sandbox._types import SandboxLimits

log = logging.getLogger("verifiers.sandbox")

#: Where the run uid of a bubblewrap sandbox is drawn from (unused on ordinary systems; one per sandbox, so
#: that RLIMIT_NPROC counts only that sandbox's processes).
BWRAP_UID_BASE = 1_600_000_000
BWRAP_UID_SPAN = 100_000_000


class BwrapBackend(SandboxBackend):
    """bubblewrap: one long-lived ``bwrap`` per sandbox with fresh pid, net, ipc, uts (and cgroup)
    namespaces, the host's ``/usr``/``/lib*`` and Python read-only, in-memory ``/workspace`` and ``/tmp``,
    killed with its parent. Commands run under a uid of their own (one per sandbox, no capabilities),
    behind a seccomp deny-list (``_seccomp``), in memory and pids cgroups of the sandbox's own
    (``_cgroup``; per-process rlimits only where none can be made).

    Needs root (to give commands their own uid; a user namespace would map them all to the caller).
    """

    name = "bwrap"

    @classmethod
    def is_available(cls) -> bool:
        return root_can_run(find_tool("bwrap"))

    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        exe = find_tool("bwrap")
        if exe is None:
            raise SandboxError("bwrap (bubblewrap) is not installed")
        py = host_python()
        uid = BWRAP_UID_BASE + secrets.randbelow(BWRAP_UID_SPAN)
        etc = sd.path / "etc"
        await asyncio.to_thread(layout.write_etc, etc, uid)
        mb = 1024 * 1024
        argv = [
            exe,
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--as-pid-1", "--new-session", "--hostname", "sandbox",
            "--cap-drop", "ALL",
        ]  # fmt: skip
        for cap in layout.AGENT_CAPS:
            argv += ["--cap-add", cap]
        argv += ["--ro-bind", "/usr", "/usr"]
        for path, target in layout.root_links():
            argv += ["--symlink", target, path] if target is not None else ["--ro-bind", path, path]
        if not py.prefix.startswith("/usr/"):
            # bwrap would copy the host's modes onto the parents it creates (/root is 0700): make them
            # traversable for the sandbox user first.
            parents = Path(py.prefix).parents
            for parent in reversed([str(p) for p in parents if str(p) != "/"]):
                argv += ["--perms", "0755", "--dir", parent]
            argv += ["--ro-bind", py.prefix, py.prefix]
        mask = self._site_mask(sd)
        if mask is not None:
            hidden, empty = mask
            argv += ["--ro-bind", str(empty), hidden]
        argv += ["--ro-bind", str(etc), "/etc"]
        for name in layout.HOST_ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        argv += ["--ro-bind", str(AGENT_SOURCE.resolve()), layout.AGENT_PATH, "--proc", "/proc",
                 "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]  # fmt: skip
        for scratch in layout.SCRATCH:
            # World-writable with the sticky bit, like a real /tmp; --size is the quota.
            argv += ["--perms", "1777", "--size", str(limits.tmp_mb * mb), "--tmpfs", scratch]
        # The IPC namespace's POSIX message queues, visible so that reset() can remove them.
        argv += ["--mqueue", layout.MQUEUE]
        argv += [
            "--size", str(limits.workspace_mb * mb), "--tmpfs", layout.WORKSPACE,
            "--remount-ro", "/",
            "--chdir", layout.WORKSPACE,
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "VF_SANDBOX_ID", sd.id,
        ]  # fmt: skip
        seccomp_fd: int | None = None
        if seccomp.supported():
            # bwrap reads the whole program from this pipe (it fits the pipe buffer) before it execs.
            seccomp_fd, w = os.pipe()
            try:
                os.write(w, seccomp.compiled())
            finally:
                os.close(w)
            argv += ["--seccomp", str(seccomp_fd)]
        else:
            log.warning(
                "sandbox %s: no seccomp filter for %s: bwrap runs without one", sd.id, os.uname().machine
            )
        sd.meta["uid"] = uid
        cg = self._make_cgroup(sd, limits)
        if cg is not None:
            # Before the root goes read-only: bwrap creates the mount point.
            at = argv.index("--remount-ro")
            argv[at:at] = ["--bind", cg.commands_procs, layout.COMMANDS_CGROUP]
        argv += ["--", *layout.contained_agent_argv(
            sd.id, limits, py, uid, ipc="sweep", commands_cgroup=layout.COMMANDS_CGROUP if cg else None,
            cap_address_space=cg is None,
        )]  # fmt: skip
        if cg is not None:
            argv = cgroup.attach_argv(cg, argv)
        try:
            launched = await spawn_agent(
                argv, sd, layout.WORKSPACE, pass_fds=() if seccomp_fd is None else (seccomp_fd,)
            )
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        self._record_host_pid(sd, launched.proc.pid)
        if cg is not None:
            launched.oom_kills = cg.oom_kills
            launched.limits_per_sandbox = True
            launched.oom_fd = cg.oom_eventfd()
        return launched

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        # The agent is the init of the sandbox's pid namespace: when it dies the kernel kills everything
        # else in it. bwrap and the agent both carry the sandbox id on their command line. (bwrap's
        # --die-with-parent is not enough on its own: the agent's credential changes reset the
        # parent-death signal; the agent also exits by itself when our end of its pipe closes.)
        cls._kill_host_pid(sd)
        kill_matching(sd.id)
        uid = sd.meta.get("uid")
        if isinstance(uid, int) and uid >= BWRAP_UID_BASE:
            kill_uid(uid)
        cls._remove_cgroup(sd)
