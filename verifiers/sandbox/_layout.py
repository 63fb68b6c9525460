"""The inside of a contained (runsc, bwrap) sandbox, which both backends build in their own syntax: the
host's system dirs, interpreter and a few ``/etc`` files read-only, a minimal ``/etc`` of its own, the
agent at a fixed path, in-memory workspace and scratch dirs, and the capabilities the agent keeps.
(``local`` uses directories of its state dir instead.)"""

from __future__ import annotations

import os
from pathlib import Path

from verifiers.sandbox._host import HostPython
from verifiers.sandbox._launch import agent_argv, agent_config, sandbox_env
from verifiers.sandbox._types import SandboxLimits

AGENT_PATH = "/opt/vf-sandbox/agent.py"
WORKSPACE = "/workspace"
SCRATCH = ("/tmp", "/dev/shm")
MQUEUE = "/dev/mqueue"
#: Where a bwrap sandbox sees the cgroup.procs of its commands' memory cgroup (bound from the host).
COMMANDS_CGROUP = "/run/vf-commands.procs"
#: What the agent keeps of root inside a contained sandbox: enough to drop each command to the run uid,
#: kill it, and manage the workspace files on its behalf.
AGENT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE")
#: Host files of /etc that sandboxes see (read-only): the loader's cache, alternatives' links, the time zone.
HOST_ETC = ("ld.so.cache", "alternatives", "localtime")


def contained_agent_argv(
    sandbox_id: str, limits: SandboxLimits, python: HostPython, uid: int, *, ipc: str,
    commands_cgroup: str | None = None, watch_memory: bool = False, cap_address_space: bool = False,
) -> list[str]:  # fmt: skip
    """The agent's command line in a contained sandbox: commands run as ``uid`` in their own pid namespace;
    ``ipc`` is how reset() empties the IPC namespace (see ``agent_config``)."""
    config = agent_config(
        sandbox_id, limits, workspace=WORKSPACE, scratch=list(SCRATCH),
        env=sandbox_env(python, WORKSPACE, SCRATCH[0]), uid=uid, pidns=True, ipc=ipc,
        commands_cgroup=commands_cgroup, watch_memory=watch_memory, cap_address_space=cap_address_space,
    )  # fmt: skip
    return agent_argv(python, AGENT_PATH, config)


def root_links() -> list[tuple[str, str | None]]:
    """Top-level library/binary dirs of the host: (path, symlink target or None for a real dir)."""
    out: list[tuple[str, str | None]] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = f"/{name}"
        if os.path.islink(p):
            out.append((p, os.readlink(p)))
        elif os.path.isdir(p):
            out.append((p, None))
    return out


def write_etc(etc: Path, uid: int) -> None:
    """A minimal /etc: who the sandbox user is, localhost, and nothing of the host's configuration."""
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text(
        f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{uid}:{uid}:sandbox:{WORKSPACE}:/bin/sh\n"
    )
    (etc / "group").write_text(f"root:x:0:\nsandbox:x:{uid}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    (etc / "hostname").write_text("sandbox\n")
    for name in HOST_ETC:
        # Mount points for the host files bound read-only over them.
        src = Path("/etc") / name
        if src.is_dir() and not src.is_symlink():
            (etc / name).mkdir(exist_ok=True)
        elif src.exists():
            (etc / name).touch()
