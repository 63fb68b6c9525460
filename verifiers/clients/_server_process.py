"""A model server in a child process on a loopback port, started for a run and stopped after it.

The embedded llama.cpp model (``local_model``) and the scripted model (``scripted``) both run this way:
each server is a command given its port, logging to a temporary file, in its own process group (Ctrl-C
reaches us, not it) and, on Linux, told to exit when the process that started it dies, so a killed eval
never leaves an orphan server holding the port. ``start_all`` launches several at once and waits until
``GET /v1/models`` answers on each.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, Self


class ModelServerError(RuntimeError):
    """A model server the run starts itself cannot be served: the message says why (and names its log)."""


class ModelServer(Protocol):
    """A model server a run starts for itself and stops after it (``LocalModelServer``,
    ``ScriptedModelServer``)."""

    @property
    def running(self) -> bool: ...

    @property
    def base_urls(self) -> list[str]: ...

    def start(self) -> Self: ...

    def stop(self, *, keep_log: bool = False, grace: float = 10.0) -> None: ...


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent dies (``PR_SET_PDEATHSIG``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved in the parent: the child only calls it
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG

    return preexec


class ServerProcess:
    """One server process (``command(port)``) on a loopback port, with its log file. ``label`` names it in
    errors ("the local model server"), which are raised as ``error``."""

    def __init__(
        self,
        command: Callable[[int], list[str]],
        host: str,
        port: int | None,
        *,
        label: str,
        error: type[ModelServerError] = ModelServerError,
    ) -> None:
        self._command = command
        self.host = host
        self.port = port
        self.label = label
        self.error = error
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def launch(self, port: int) -> None:
        fd, log = tempfile.mkstemp(prefix="vf-model-server-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as log_file:
            self._proc = subprocess.Popen(
                self._command(port),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        self.port = port

    def _log_tail(self, lines: int = 8) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def ready(self) -> bool:
        """Whether ``GET /v1/models`` answers; raises ``self.error`` if the process has exited."""
        assert self._proc is not None
        code = self._proc.poll()
        if code is not None:
            last = self._log_tail(1) or "(no output)"
            raise self.error(
                f"{self.label} exited with status {code} while starting: {last} (full log: {self.log_path})"
            )
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.port}/v1/models", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, *, keep_log: bool = False, grace: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own process group: the server and any helper
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if not keep_log and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()
            self.log_path = None


def start_all(servers: Sequence[ServerProcess], *, timeout: float, fixed_port: int | None = None) -> None:
    """Launch every server at once and block until each answers (on ``fixed_port``, else a free port; a free
    port taken between probing and binding is replaced by another, up to three tries). On failure every
    server is stopped; the log a raised ``ModelServerError`` names is kept for the user."""
    try:
        pending = {i: 3 for i in range(len(servers))}
        for server in servers:
            server.launch(fixed_port or free_port(server.host))
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() >= deadline:
                first = servers[next(iter(pending))]
                raise first.error(f"{first.label} did not answer within {timeout:g}s; log: {first.log_path}")
            for i in list(pending):
                server = servers[i]
                try:
                    if server.ready():
                        del pending[i]
                except ModelServerError as exc:
                    pending[i] -= 1
                    if fixed_port is None and pending[i] > 0 and "address already in use" in str(exc).lower():
                        server.stop()
                        server.launch(free_port(server.host))
                        continue
                    raise
            time.sleep(0.1)
    except BaseException as exc:
        # A start that failed names the log: it now belongs to the user, and a later stop() keeps it.
        named = str(exc) if isinstance(exc, ModelServerError) else ""
        for server in servers:
            keep = server.log_path is not None and str(server.log_path) in named
            server.stop(keep_log=keep)
            if keep:
                server.log_path = None
        raise


__all__ = ["ModelServer", "ModelServerError", "ServerProcess", "free_port", "start_all"]
