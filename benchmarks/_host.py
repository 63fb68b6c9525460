"""The plain-subprocess baseline the sandboxed scoring benchmarks compare against: a directory on the host
that speaks the two calls ``code_env.score_solution`` makes of a sandbox (``upload_files``, ``exec``) with
no isolation, no pool and no reset."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ExecOutcome:
    stdout: str
    timed_out: bool


class HostDirectory:
    """The baseline: ``score_solution``'s two calls done with plain host subprocesses, no isolation."""

    python = os.path.realpath(sys.executable)  # the interpreter itself, as the sandboxes run it

    def __init__(self, root: Path) -> None:
        self.root = root

    async def upload_files(self, files: Mapping[str, bytes], dest: str = ".") -> int:
        root = self.root / dest
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        return len(files)

    async def exec(self, command: list[str], *, timeout: float) -> ExecOutcome:  # noqa: ASYNC109 - Sandbox.exec's
        # -I -S: no site-packages or PYTHON* variables, like the sandboxes; .pth hooks cost ~40 ms a start
        argv = [self.python, "-I", "-S", *command[1:]] if command[0] == "python3" else list(command)
        # A session of its own, like every sandbox: with the kernel's autogroup scheduling each session
        # gets an equal CPU share on a busy machine, so the comparison stays fair.
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.root,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return ExecOutcome("", True)
        return ExecOutcome(out.decode(errors="replace"), False)
