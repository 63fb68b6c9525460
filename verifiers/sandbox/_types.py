"""Public value types of the sandbox layer: the limits config and the result of one command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SandboxLimits(BaseModel):
    """Resource limits that every backend enforces on every command it runs.

    ``memory_mb`` bounds the memory the whole sandbox really uses (resident pages of its processes, its
    tmpfs files and IPC objects, through a cgroup of its own), not address space: reserved but untouched
    memory (thread stacks, malloc arenas, large mappings) is free. ``Sandbox.limits_per_sandbox`` is False
    where no per-sandbox limit could be set; then each process's address space is capped at ``memory_mb``
    instead. ``max_procs`` caps the processes the sandbox runs at once (a process with many threads counts
    once); ``max_threads`` caps its threads (every thread of every process, the kernel's tasks): the hard
    bound that contains a fork or thread bomb. ``cpu_s``, ``max_file_mb``, ``max_open_files`` are
    per-process rlimits (CPU seconds, largest file written, open files); ``timeout_s`` is the default
    wall-clock budget of one ``exec`` (the whole process tree is killed when it runs out);
    ``max_output_bytes`` caps what is kept of stdout and of stderr (each); ``workspace_mb`` and ``tmp_mb``
    size the in-memory filesystems of the workspace and of ``/tmp`` (where the backend has them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(default=10.0, gt=0)
    memory_mb: int = Field(default=512, ge=16)
    cpu_s: int = Field(default=10, ge=1)
    max_procs: int = Field(default=64, ge=1)
    max_threads: int = Field(default=1024, ge=1)
    max_file_mb: int = Field(default=64, ge=1)
    max_open_files: int = Field(default=256, ge=16)
    max_output_bytes: int = Field(default=1_000_000, ge=0)
    workspace_mb: int = Field(default=256, ge=1)
    tmp_mb: int = Field(default=64, ge=1)

    @model_validator(mode="after")
    def _threads_cover_procs(self) -> SandboxLimits:
        if self.max_threads < self.max_procs:
            raise ValueError(
                f"max_threads ({self.max_threads}) must be at least max_procs ({self.max_procs}): "
                "every process is at least one thread"
            )
        return self

    def agent_dict(self) -> dict[str, int]:
        """The limits the in-sandbox agent applies to each command."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_s": self.cpu_s,
            "max_procs": self.max_procs,
            "max_threads": self.max_threads,
            "max_file_mb": self.max_file_mb,
            "max_open_files": self.max_open_files,
        }


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one command did. A timeout or a truncated output is a result, not an exception."""

    #: The exit status; negative (``-signal``) when the command was killed by a signal; ``None`` only if
    #: the command could not be reaped at all.
    exit_code: int | None
    stdout: str
    stderr: str
    #: The command ran out of wall-clock time and its process tree was killed.
    timed_out: bool
    #: stdout or stderr was longer than ``max_output_bytes`` and was cut.
    truncated: bool
    duration_s: float
    #: The signal that ended the command, if any (e.g. 9 after a timeout, 24 for SIGXCPU).
    signal: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    #: The exec was cancelled by the caller before it finished.
    cancelled: bool = False
    #: The backend that ran it (``runsc``, ``bwrap``, ``local``).
    backend: str = ""
    #: False when the backend is not a security boundary (``local``).
    contained: bool = True
    #: A process of the command was killed because the sandbox used more than ``limits.memory_mb`` in
    #: total (processes, files in its tmpfs, IPC); ``stderr`` ends with a line saying so.
    oom_killed: bool = False
    #: The command was killed because the sandbox ran more than ``limits.max_procs`` processes at once;
    #: ``stderr`` ends with a line saying so.
    procs_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One entry of ``Sandbox.list_dir``: its path relative to the workspace and what it is."""

    path: str
    kind: Literal["file", "dir", "link", "other"]


@dataclass(frozen=True, slots=True)
class FileMatches:
    """The lines of one file that contain a ``Sandbox.search`` pattern."""

    #: Relative to the workspace.
    path: str
    #: How many lines match (all of them, even past ``max_lines``).
    count: int
    #: ``(line number from 1, line)`` of the first ``max_lines`` matching lines.
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``Sandbox.search`` found: the matching files in path order."""

    files: tuple[FileMatches, ...]
    #: Files with a match, including those past ``max_files``.
    files_matched: int
    #: More files matched than ``files`` holds.
    truncated: bool
