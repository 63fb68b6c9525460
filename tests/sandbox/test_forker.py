"""The sandbox agent's forker, driven directly: the agent runs as the init of a fresh pid namespace
(``unshare --pid``), as it does in runsc and bwrap, and the test speaks its protocol over the pipes.

The forker must survive the clean-up after each command (which kills everything else), and the agent
must keep running commands when the forker dies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verifiers.sandbox import SandboxLimits
from verifiers.sandbox._agent import HEADER

from .conftest import require_backend

AGENT = Path(__file__).parents[2] / "verifiers" / "sandbox" / "_agent.py"
COMMAND_UID = 61_234


class AgentProcess:
    def __init__(self, workspace: Path) -> None:
        cfg = {
            "id": "forker-test",
            "workspace": str(workspace),
            "scratch": [],
            "uid": COMMAND_UID,
            "gid": COMMAND_UID,
            "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            "limits": SandboxLimits().agent_dict(),
            "pidns": True,
        }
        argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-I", "-S", str(AGENT)]
        self.proc = subprocess.Popen([*argv, json.dumps(cfg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        hello, _ = self.recv()
        assert hello["op"] == "hello" and hello["pid"] == 1, hello

    def recv(self) -> tuple[dict[str, Any], bytes]:
        assert self.proc.stdout is not None
        n, m = HEADER.unpack(self.proc.stdout.read(HEADER.size))
        return json.loads(self.proc.stdout.read(n)), self.proc.stdout.read(m) if m else b""

    def exec(self, command: str) -> tuple[dict[str, Any], str]:
        assert self.proc.stdin is not None
        hdr = json.dumps({"op": "exec", "argv": ["sh", "-c", command], "timeout": 10, "max_output": 65536})
        self.proc.stdin.write(HEADER.pack(len(hdr), 0) + hdr.encode())
        self.proc.stdin.flush()
        reply, out = self.recv()
        assert reply["ok"], reply
        return reply, out.decode()

    def host_pid(self) -> int:
        """The agent's pid on the host (the child of ``unshare --fork``)."""
        return children(self.proc.pid)[0]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def children(pid: int) -> list[int]:
    """``pid``'s children that are alive (not zombies its reaper has yet to collect)."""
    alive = []
    for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            state = Path(f"/proc/{c}/stat").read_text().rpartition(")")[2].split()[0]
        except (FileNotFoundError, IndexError):
            continue
        if state != "Z":
            alive.append(int(c))
    return alive


def real_uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


def forker_pid(agent: AgentProcess) -> int:
    """The forker: the agent's root child (commands run as COMMAND_UID)."""
    deadline = time.monotonic() + 120  # only a guard against a hang
    while True:
        roots = [p for p in children(agent.host_pid()) if real_uid(p) == 0]
        if roots or time.monotonic() > deadline:
            assert len(roots) == 1, roots
            return roots[0]
        time.sleep(0.01)


def command_processes(agent: AgentProcess) -> list[int]:
    """Host pids of every process of the agent's namespace that runs as the command uid, but the spare
    that waits for the next command (a child of the forker)."""
    spares = set(children(forker_pid(agent)))
    found, stack = [], [agent.host_pid()]
    while stack:
        pid = stack.pop()
        for child in children(pid):
            stack.append(child)
            if real_uid(child) == COMMAND_UID and child not in spares:
                found.append(child)
    return found


@pytest.fixture
def agent() -> Iterator[AgentProcess]:
    require_backend("bwrap")  # root and namespaces: what the forker is for
    # Not under pytest's tmp_path, whose parents the command uid may not enter.
    workspace = Path(tempfile.mkdtemp(prefix="vf-forker-test-"))
    workspace.chmod(0o755)
    proc = AgentProcess(workspace)
    try:
        yield proc
    finally:
        proc.close()
        shutil.rmtree(workspace, ignore_errors=True)


def test_the_forker_survives_each_clean_up(agent: AgentProcess) -> None:
    forker = forker_pid(agent)
    reply, out = agent.exec("sleep 300 & echo started")
    assert reply["exit_code"] == 0 and out == "started\n"
    assert command_processes(agent) == [], "the command's background process outlived it"
    # The same forker made the spare of every command since.
    for i in range(5):
        assert agent.exec(f"echo {i}")[1] == f"{i}\n"
    assert forker_pid(agent) == forker


def test_commands_still_run_when_the_forker_dies(agent: AgentProcess) -> None:
    assert agent.exec("echo before")[1] == "before\n"
    first = forker_pid(agent)
    os.kill(first, signal.SIGKILL)
    for i in range(3):
        reply, out = agent.exec(f"echo {i}")
        assert reply["exit_code"] == 0 and out == f"{i}\n", reply
    assert command_processes(agent) == []
    assert forker_pid(agent) != first  # a new one was started


def test_a_spare_killed_while_waiting_is_replaced(agent: AgentProcess) -> None:
    # Each round kills the waiting spare and asks for a command at once: the kill may land before the
    # agent hears of it, or while the command is already in the dead spare's pipe buffer (CI saw that).
    for i in range(20):
        agent.exec("true")
        forker = forker_pid(agent)
        deadline = time.monotonic() + 120  # only a guard against a hang
        while len(spares := children(forker)) != 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(spares) == 1, spares
        os.kill(spares[0], signal.SIGKILL)
        reply, out = agent.exec(f"echo fine {i}")
        assert reply["exit_code"] == 0 and out == f"fine {i}\n", reply
