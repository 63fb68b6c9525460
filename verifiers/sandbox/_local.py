"""The ``local`` backend: plain subprocesses on the host. Not a security boundary; never chosen by default."""

from __future__ import annotations

import contextlib
import os
import sys
import time

from verifiers.sandbox import _cgroup as cgroup
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._host import host_python
from verifiers.sandbox._launch import (
    AGENT_SOURCE,
    Launched,
    agent_argv,
    agent_config,
    sandbox_env,
    spawn_agent,
)
from verifiers.sandbox._procs import kill_if, proc_start_time, processes_of_uid, processes_with_env
from verifiers.sandbox._state import StateDir
from verifiers.sandbox._types import SandboxLimits


def _user_task_count(uid: int) -> int:
    n = 0
    for pid in processes_of_uid(uid):
        with contextlib.suppress(OSError):
            n += len(os.listdir(f"/proc/{pid}/task"))
    return n


class LocalBackend(SandboxBackend):
    """Plain subprocesses on the host, with rlimits, a scrubbed environment, a private workspace directory
    and process-tree kills. NOT a security boundary: no filesystem, network or process isolation (and, for
    root, no process-count limit). Only used when asked for by name; every sandbox logs a warning and every
    result says ``contained=False``.
    """

    name = "local"
    contained = False

    @classmethod
    def is_available(cls) -> bool:
        return sys.platform == "linux"

    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        py = host_python()
        work = sd.path / "work"
        tmp = sd.path / "tmp"
        for d in (work, tmp):
            d.mkdir(mode=0o700)
        uid = os.geteuid()
        # RLIMIT_NPROC counts every process of the user, so leave room for those already running.
        extra = 0 if uid == 0 else _user_task_count(uid)
        env = sandbox_env(py, str(work), str(tmp))
        cg = self._make_cgroup(sd, limits)
        agent_cfg = agent_config(
            sd.id, limits, workspace=str(work), scratch=[str(tmp)],
            env=env, uid=None, pidns=False, nproc_extra=extra,
            # As root the agent can give the sandbox an IPC namespace of its own (fresh on every reset).
            ipc="unshare" if uid == 0 else None, commands_cgroup=cg.commands_procs if cg else None,
            cap_address_space=cg is None,
        )  # fmt: skip
        argv = agent_argv(py, str(AGENT_SOURCE.resolve()), agent_cfg)
        if cg is not None:
            argv = cgroup.attach_argv(cg, argv)
        launched = await spawn_agent(argv, sd, str(work), cwd=str(work), env={**env, "VF_SANDBOX_ID": sd.id})
        self._record_host_pid(sd, launched.proc.pid)
        if cg is not None:
            launched.oom_kills = cg.oom_kills
            launched.limits_per_sandbox = True
            launched.oom_fd = cg.oom_eventfd()
        return launched

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        # The agent kills its process tree when its pipe closes; this is for an agent that was SIGKILLed
        # itself: its orphans still carry VF_SANDBOX_ID=<id> in their environment.
        cls._kill_host_pid(sd)
        for _ in range(20):
            pids = [p for p in processes_with_env(f"VF_SANDBOX_ID={sd.id}") if p != os.getpid()]
            if not pids:
                break
            for pid in pids:
                kill_if(pid, proc_start_time(pid))
            time.sleep(0.01)
        # The cgroup also holds whatever dropped VF_SANDBOX_ID from its environment.
        cls._remove_cgroup(sd)
