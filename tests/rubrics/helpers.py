"""Shared helpers for the rubric tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from verifiers.types import State


def make_state(
    text: str, answer: str, *, question: str = "Solve it.", example_id: int = 0, idx: int = 0
) -> State:
    return State(
        example_id=example_id,
        rollout_index=idx,
        task="math",
        prompt=[{"role": "user", "content": question}],
        completion=[{"role": "assistant", "content": text}],
        answer=answer,
        info={},
        turns=[],
        usage={},
        timing={"generation": 0.0, "scoring": 0.0, "total": 0.0},
        error=None,
        metrics={},
        reward=None,
    )


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 300) -> None:
    """Until ``cond()`` holds; the timeout only guards against a hang (a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def child_pids(pid: int | None = None) -> list[int]:
    """Live direct children of ``pid`` (default: this process), from /proc."""
    pid = os.getpid() if pid is None else pid
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # fields after the ")" that closes the command name: state, ppid, ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out
