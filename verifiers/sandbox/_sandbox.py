"""The host side of one sandbox: a typed async client of the in-sandbox agent (see ``_agent.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import struct
import tarfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from verifiers.errors import SandboxError
from verifiers.sandbox._types import DirEntry, ExecResult, FileMatches, SandboxLimits, SearchResult

log = logging.getLogger("verifiers.sandbox")

HEADER = struct.Struct(">II")
# Extra time the agent gets past a command's own timeout (kill, drain, reply) before we call it dead.
REPLY_GRACE_S = 15.0
# Budget of requests that are not commands (files, bundles, reset).
OP_TIMEOUT_S = 60.0
MAX_READ_BYTES = 256 * 1024 * 1024

#: Errors the agent reports that are the caller's doing; anything else is an infra error.
_CALLER_ERRORS: dict[str, type[Exception]] = {
    "FileNotFoundError": FileNotFoundError,
    "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError,
    "PermissionError": PermissionError,
    "FileExistsError": FileExistsError,
    "ValueError": ValueError,
    "ReadError": ValueError,  # tarfile: not a tar archive
    "CompressionError": ValueError,
    "FilterError": PermissionError,  # tarfile: unsafe member
    "AbsolutePathError": PermissionError,
    "OutsideDestinationError": PermissionError,
    "AbsoluteLinkError": PermissionError,
    "LinkOutsideDestinationError": PermissionError,
    "SpecialFileError": PermissionError,
}


def check_rel_path(path: str) -> str:
    """Paths given to a sandbox are relative to its workspace: no absolute paths, no '..' escapes."""
    p = os.fspath(path)
    if not isinstance(p, str) or not p or "\0" in p:
        raise ValueError(f"invalid sandbox path {path!r}")
    if p.startswith("/") or ".." in p.split("/"):
        raise ValueError(f"sandbox paths are relative to the workspace, without '..': {path!r}")
    return p


async def _send(writer: asyncio.StreamWriter, hdr: Mapping[str, Any], blob: bytes = b"") -> None:
    data = json.dumps(hdr).encode()
    writer.write(HEADER.pack(len(data), len(blob)) + data + blob)
    await writer.drain()


async def _recv(reader: asyncio.StreamReader) -> tuple[dict[str, Any], bytes]:
    n, m = HEADER.unpack(await reader.readexactly(HEADER.size))
    hdr = json.loads(await reader.readexactly(n))
    blob = await reader.readexactly(m) if m else b""
    return hdr, blob


class Sandbox:
    """A running, isolated workspace in which commands run one at a time.

    Obtained from :meth:`SandboxBackend.create` or a :class:`SandboxPool` lease; never constructed by hand.
    Every path argument is relative to the workspace. Operations on a sandbox that died raise
    :class:`verifiers.errors.SandboxError`; a command that times out or floods its output is a normal
    :class:`ExecResult`. Processes do not outlive the ``exec`` that started them.
    """

    def __init__(
        self,
        *,
        sandbox_id: str,
        backend: str,
        contained: bool,
        limits: SandboxLimits,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        read_transport: asyncio.ReadTransport,
        teardown: Callable[[], Awaitable[None]],
        kill: Callable[[], None],
        workdir: str,
        oom_kills: Callable[[], int] | None = None,
        limits_per_sandbox: bool = False,
        oom_fd: int | None = None,
    ) -> None:
        self.id = sandbox_id
        self.backend = backend
        self.contained = contained
        self.limits = limits
        #: Absolute path of the workspace as commands see it.
        self.workdir = workdir
        #: Whether ``memory_mb`` and ``max_procs`` bound the sandbox as a whole (its own cgroup, or
        #: gVisor's); False where the backend could only fall back to per-process rlimits.
        self.limits_per_sandbox = limits_per_sandbox
        self._oom_kills = oom_kills
        self._oom_seen = 0
        self._oom_fd = oom_fd
        self._exec_in_flight = False
        self._oom_stopped = False
        if oom_fd is not None:
            asyncio.get_running_loop().add_reader(oom_fd, self._on_oom)
        self._reader = reader
        self._writer = writer
        self._read_transport = read_transport
        self._teardown = teardown
        self._kill = kill
        self._lock = asyncio.Lock()
        self._dead: str | None = None
        self._destroyed = False
        self._destroy_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        state = "destroyed" if self._destroyed else ("dead" if self._dead else "alive")
        return f"<Sandbox {self.id} {self.backend} {state}>"

    @property
    def alive(self) -> bool:
        return self._dead is None and not self._destroyed

    # --- requests ----------------------------------------------------------------------------------
    def _mark_dead(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
            log.warning("sandbox %s (%s) died: %s", self.id, self.backend, reason)
            # Make sure nothing of it keeps running; the record stays until destroy() or the reaper.
            with contextlib.suppress(Exception):
                self._kill()

    def _check(self) -> None:
        if self._destroyed:
            raise SandboxError(f"sandbox {self.id} was destroyed")
        if self._dead is not None:
            raise SandboxError(f"sandbox {self.id} ({self.backend}) is dead: {self._dead}")

    async def _request(
        self, hdr: dict[str, Any], blob: bytes = b"", *, reply_s: float
    ) -> tuple[dict[str, Any], bytes]:
        self._check()
        await self._lock.acquire()
        handed_off = False
        sent = False
        try:
            self._check()
            try:
                await _send(self._writer, hdr, blob)
                sent = True
                self._exec_in_flight = hdr["op"] == "exec"
                try:
                    reply, out = await asyncio.wait_for(_recv(self._reader), reply_s)
                finally:
                    self._exec_in_flight = False
            except asyncio.CancelledError:
                if sent and hdr["op"] == "exec" and self._dead is None:
                    # The agent will still answer: finish the exchange in the background so the next
                    # request stays in step, and keep the lock until then.
                    handed_off = True
                    self._spawn(self._finish_cancelled())
                else:
                    self._mark_dead("request cancelled mid-message")
                raise
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError, ValueError) as exc:
                what = (
                    "stopped answering" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
                )
                self._mark_dead(f"agent {what} during {hdr['op']}")
                raise SandboxError(
                    f"sandbox {self.id} ({self.backend}) died during {hdr['op']}: {what}"
                ) from exc
        finally:
            if not handed_off:
                self._lock.release()
        if not reply.get("ok"):
            kind = str(reply.get("kind"))
            message = str(reply.get("error"))
            exc_type = _CALLER_ERRORS.get(kind)
            if exc_type is not None:
                if issubclass(exc_type, OSError) and reply.get("errno") is not None:
                    raise exc_type(int(reply["errno"]), message)
                raise exc_type(message)
            raise SandboxError(f"sandbox {self.id} ({self.backend}) failed {hdr['op']}: {kind}: {message}")
        return reply, out

    def _on_oom(self) -> None:
        """The kernel OOM-killed a process of the sandbox (its cgroup's eventfd fired): the command has
        lost part of itself, so stop all of it now (a cancel), instead of letting the rest wait or hang."""
        with contextlib.suppress(OSError):
            os.eventfd_read(self._oom_fd)  # type: ignore[arg-type]
        if self._exec_in_flight and not self._oom_stopped and self._dead is None:
            self._oom_stopped = True
            data = json.dumps({"op": "cancel"}).encode()
            with contextlib.suppress(Exception):
                self._writer.write(HEADER.pack(len(data), 0) + data)

    def _close_oom_fd(self) -> None:
        if self._oom_fd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._oom_fd)
            with contextlib.suppress(OSError):
                os.close(self._oom_fd)
            self._oom_fd = None

    async def _finish_cancelled(self) -> None:
        try:
            await _send(self._writer, {"op": "cancel"})
            await asyncio.wait_for(_recv(self._reader), REPLY_GRACE_S)
        except Exception as exc:
            self._mark_dead(f"agent did not answer after a cancel: {exc!r}")
        finally:
            self._lock.release()

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- public API --------------------------------------------------------------------------------
    async def exec(
        self,
        command: Sequence[str] | str,
        *,
        stdin: bytes | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's budget, enforced in the sandbox
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr_to_stdout: bool = False,
    ) -> ExecResult:
        """Run ``command`` (an argv list, or a string for ``/bin/sh -c``) in the workspace.

        ``timeout`` defaults to the sandbox's ``limits.timeout_s``; when it runs out the whole process tree
        is killed and the result has ``timed_out=True``. ``cwd`` is relative to the workspace. ``env`` is
        added to a scrubbed environment (``PATH`` with a real ``python3``, ``HOME`` = the workspace).
        ``stderr_to_stdout`` gives the command one pipe for both streams (like ``2>&1``): ``stdout`` then
        holds them interleaved as written, and ``stderr`` is empty.
        """
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("empty command")
        if cwd is not None:
            check_rel_path(cwd)
        budget = float(timeout if timeout is not None else self.limits.timeout_s)
        if budget <= 0:
            raise ValueError("timeout must be positive")
        data = stdin.encode() if isinstance(stdin, str) else stdin
        hdr = {
            "op": "exec",
            "argv": argv,
            "env": dict(env or {}),
            "cwd": cwd or ".",
            "timeout": budget,
            "max_output": self.limits.max_output_bytes,
            "has_stdin": data is not None,
            "stderr_to_stdout": stderr_to_stdout,
        }
        reply, blob = await self._request(hdr, data or b"", reply_s=budget + REPLY_GRACE_S)
        n_out = int(reply["stdout_len"])
        out_t, err_t = bool(reply["stdout_truncated"]), bool(reply["stderr_truncated"])
        stderr = blob[n_out:].decode(errors="replace")
        # The agent itself stops a command that takes the sandbox over its limit where the kernel does not
        # (gVisor, runsc's watch_memory).
        oom, cancelled = bool(reply.get("oom_killed")), bool(reply.get("cancelled"))
        if self._oom_stopped:
            # We stopped it for an OOM kill: that is not the caller's cancel.
            self._oom_stopped, cancelled, oom = False, False, True
        if reply["exit_code"] != 0 and self._oom_kills is not None:
            # Only a failed command can have met the OOM killer; one file read, off the success path.
            n = self._oom_kills()
            if n > self._oom_seen:
                self._oom_seen, oom = n, True
        procs = bool(reply.get("procs_killed")) and not oom
        if oom or procs:
            sep = "" if not stderr or stderr.endswith("\n") else "\n"
            why = (
                f"used more than its memory limit ({self.limits.memory_mb} MB for all its processes and files)"
                if oom
                else f"ran more than {self.limits.max_procs} processes at once (limits.max_procs; threads "
                "count against max_threads only)"
            )
            stderr += f"{sep}vf-sandbox: killed: the sandbox {why}\n"
        return ExecResult(
            exit_code=reply["exit_code"],
            stdout=blob[:n_out].decode(errors="replace"),
            stderr=stderr,
            timed_out=bool(reply["timed_out"]),
            truncated=out_t or err_t,
            duration_s=float(reply["duration_s"]),
            signal=reply.get("signal"),
            stdout_truncated=out_t,
            stderr_truncated=err_t,
            cancelled=cancelled,
            backend=self.backend,
            contained=self.contained,
            oom_killed=oom,
            procs_killed=procs,
        )

    async def write_file(self, path: str, data: str | bytes, *, mode: int = 0o644) -> None:
        """Create or replace a file (parent directories are created)."""
        blob = data.encode() if isinstance(data, str) else bytes(data)
        await self._request(
            {"op": "write", "path": check_rel_path(path), "mode": mode}, blob, reply_s=OP_TIMEOUT_S
        )

    async def read_file(self, path: str, *, max_bytes: int = MAX_READ_BYTES) -> bytes:
        """The content of a regular file of the workspace."""
        hdr = {"op": "read", "path": check_rel_path(path), "max_bytes": max_bytes}
        _, blob = await self._request(hdr, reply_s=OP_TIMEOUT_S)
        return blob

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        return (await self.read_file(path)).decode(encoding, errors="replace")

    async def list_dir(
        self, path: str = ".", *, max_depth: int = 1, include_hidden: bool = False, max_entries: int = 10_000
    ) -> list[DirEntry]:
        """The entries under directory ``path``, ``max_depth`` levels down, in pre-order sorted by name
        (names starting with ``.`` are skipped unless ``include_hidden``; symlinks are listed, not
        followed). Served by the agent: no process is started. At most ``max_entries`` are returned."""
        if max_depth < 1 or max_entries < 1:
            raise ValueError("max_depth and max_entries must be at least 1")
        hdr = {
            "op": "list",
            "path": check_rel_path(path),
            "max_depth": max_depth,
            "include_hidden": include_hidden,
            "max_entries": max_entries,
        }
        reply, _ = await self._request(hdr, reply_s=OP_TIMEOUT_S)
        return [DirEntry(path=str(p), kind=k) for p, k in reply["entries"]]

    async def search(
        self,
        pattern: str,
        path: str = ".",
        *,
        suffixes: Sequence[str] = (),
        include_hidden: bool = False,
        max_files: int = 1000,
        max_lines: int = 100,
    ) -> SearchResult:
        """The lines that contain ``pattern`` (a plain substring, like ``grep -F``) in file ``path``, or in
        every regular file under directory ``path`` whose name ends with one of ``suffixes`` (all files if
        empty), hidden names skipped unless ``include_hidden``; binary files (a NUL byte near the start)
        are skipped as grep does. Per file: the match count and the first ``max_lines`` lines; at most
        ``max_files`` files (``files_matched`` counts them all). Served by the agent: no process is
        started."""
        if not pattern:
            raise ValueError("empty search pattern")
        if max_files < 0 or max_lines < 0:
            raise ValueError("max_files and max_lines cannot be negative")
        hdr = {
            "op": "search",
            "pattern": pattern,
            "path": check_rel_path(path),
            "suffixes": list(suffixes),
            "include_hidden": include_hidden,
            "max_files": max_files,
            "max_lines": max_lines,
        }
        reply, _ = await self._request(hdr, reply_s=OP_TIMEOUT_S)
        files = tuple(
            FileMatches(
                path=str(f["path"]),
                count=int(f["count"]),
                lines=tuple((int(n), str(t)) for n, t in f["lines"]),
            )
            for f in reply["files"]
        )
        return SearchResult(
            files=files, files_matched=int(reply["files_matched"]), truncated=bool(reply["truncated"])
        )

    async def upload_bundle(self, tar_bytes: bytes, dest: str = ".") -> int:
        """Extract a tar archive (optionally compressed) under ``dest``; returns the number of members.

        Members with absolute names, ``..``, links that leave ``dest`` or device files are refused.
        """
        reply, _ = await self._request(
            {"op": "bundle", "dest": check_rel_path(dest)}, bytes(tar_bytes), reply_s=OP_TIMEOUT_S
        )
        return int(reply.get("members", 0))

    async def upload_files(self, files: Mapping[str, bytes], dest: str = ".") -> int:
        """Write several files (relative name -> bytes, mode 0644) under ``dest`` in one round trip: one
        uncompressed tar (what these small uploads want: compressing only costs time)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
        return await self.upload_bundle(buf.getvalue(), dest)

    async def reset(self) -> None:
        """Kill every process and empty the workspace and ``/tmp``: the sandbox is as good as new."""
        await self._request({"op": "reset"}, reply_s=OP_TIMEOUT_S)

    async def ping(self) -> None:
        await self._request({"op": "ping"}, reply_s=OP_TIMEOUT_S)

    async def destroy(self) -> None:
        """Stop the sandbox and remove everything it had on the host. Idempotent; never raises for a
        sandbox that already died."""
        if self._destroy_task is None:
            self._destroy_task = asyncio.ensure_future(self._do_destroy())
        await asyncio.shield(self._destroy_task)

    async def _do_destroy(self) -> None:
        self._destroyed = True
        if self._dead is None and not self._lock.locked():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await _send(self._writer, {"op": "exit"})
                    await _recv(self._reader)
        with contextlib.suppress(Exception):
            self._writer.close()
        self._close_oom_fd()
        for task in list(self._background):
            task.cancel()
        try:
            await self._teardown()
        finally:
            self._read_transport.close()

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.destroy()
