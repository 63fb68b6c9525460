"""Starting the in-sandbox agent (``_agent.py``): its command line and configuration, and the pipe pair the
host talks to it over. Shared by every backend."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verifiers.sandbox._host import HostPython
from verifiers.sandbox._state import StateDir
from verifiers.sandbox._types import SandboxLimits

AGENT_SOURCE = Path(__file__).with_name("_agent.py")
CREATE_TIMEOUT_S = 30.0


@dataclass
class Launched:
    """A started agent: the host process (bwrap, local agent, or the already-exited ``runsc run``) and
    our ends of the agent's stdin/stdout pipes."""

    proc: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    read_transport: asyncio.ReadTransport
    workdir: str
    #: How many processes were OOM-killed for the sandbox's memory limit so far (None: not observable).
    oom_kills: Callable[[], int] | None = None
    #: Whether memory and process limits bind the sandbox as a whole (not only each process).
    limits_per_sandbox: bool = False
    #: An eventfd readable after each OOM kill in the sandbox (owned by the Sandbox once created).
    oom_fd: int | None = None


def sandbox_env(python: HostPython, home: str, tmp: str) -> dict[str, str]:
    """The scrubbed environment every command starts from (the caller's ``env`` is added on top)."""
    return {
        "PATH": f"{python.bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "USER": "sandbox",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def agent_config(
    sandbox_id: str, limits: SandboxLimits, *, workspace: str, scratch: list[str], env: dict[str, str],
    uid: int | None, pidns: bool, nproc_extra: int = 0, ipc: str | None = None,
    commands_cgroup: str | None = None, watch_memory: bool = False, cap_address_space: bool = False,
) -> str:  # fmt: skip
    """The agent's configuration. ``ipc``: "unshare" (the agent may make a fresh IPC namespace, at start
    and on every reset), "sweep" (reset removes every SysV object and POSIX queue of the sandbox's own
    namespace) or None (the host's namespace: leave it alone). ``watch_memory``: the agent measures the
    sandbox while a command runs and kills the command past ``memory_mb`` (where no cgroup of the sandbox's
    own kernel does: gVisor). ``cap_address_space``: nothing bounds the sandbox's memory as a whole (no
    cgroup could be made), so each command's address space is capped at ``memory_mb`` instead."""
    return json.dumps(
        {
            "id": sandbox_id,
            "workspace": workspace,
            "scratch": scratch,
            "uid": uid,
            "gid": uid,
            "env": env,
            "limits": limits.agent_dict(),
            "pidns": pidns,
            "nproc_extra": nproc_extra,
            "ipc": ipc,
            "commands_cgroup": commands_cgroup,
            "watch_memory": watch_memory,
            "cap_address_space": cap_address_space,
        }
    )


def agent_argv(python: HostPython, agent_path: str, config: str) -> list[str]:
    # Isolated mode without site: the agent sees the standard library only, whatever the host installed.
    return [python.executable, "-I", "-S", "-B", agent_path, config]


async def spawn_agent(
    argv: list[str],
    sd: StateDir,
    workdir: str,
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Launched:
    """Start ``argv`` (which runs the agent) with its stdin/stdout on fresh pipes; stderr goes to
    ``startup.log`` in the state dir. ``pass_fds`` are inherited by the child (e.g. bwrap's seccomp
    program)."""
    # Our own pipes rather than asyncio's PIPE: with `runsc run --detach` the launcher exits while the
    # sandbox keeps the pipes, and asyncio would tie the launcher's wait() to the pipes closing.
    to_agent_r, to_agent_w = os.pipe()
    from_agent_r, from_agent_w = os.pipe()
    logf = open(sd.path / "startup.log", "wb")  # noqa: SIM115, ASYNC230 - a local file, handed to the child
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=to_agent_r,
            stdout=from_agent_w,
            stderr=logf,
            cwd=cwd,
            env=env if env is not None else {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        for fd in (to_agent_w, from_agent_r):
            os.close(fd)
        raise
    finally:
        logf.close()
        os.close(to_agent_r)
        os.close(from_agent_w)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_agent_r, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(to_agent_w, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    return Launched(proc, reader, writer, read_transport, workdir)
