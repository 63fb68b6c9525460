"""The executor that runs *inside* a sandbox, as its first process.

This file is executed as a standalone script by the sandbox's own interpreter (``python -I -S``), so it
imports only the standard library and nothing from ``verifiers``. One agent lives as long as its sandbox:
starting a command is then a ``fork``/``exec`` inside the sandbox instead of a new ``runsc exec`` or a new
``bwrap`` (that is what makes warm execs cheap).

Protocol (host <-> agent, over the agent's stdin/stdout): every message is
``struct(">II", len(header_json), len(blob)) + header_json + blob``. The host sends one request and waits
for its reply; the only message it may send while a request is pending is ``{"op": "cancel"}`` (during
``exec``), which has no reply of its own. End of file on stdin means the host is gone: the agent kills
every process of the sandbox and exits.

Privileges: where the agent runs as root inside the sandbox (gVisor, bubblewrap), commands run under an
unprivileged uid with rlimits, so they can neither raise their limits, nor write outside the workspace,
nor read the agent's protocol pipes through ``/proc``. File operations are done with that uid as the
effective uid, so they see exactly what commands see.

Limits: the kernel bounds a command's threads (``max_threads``: the sandbox's pids cgroup and
``RLIMIT_NPROC``, both of which count every thread) and, through the sandbox's memory cgroup, its
resident memory. Two things no kernel limit expresses are watched by the agent while a command runs:
its processes (``max_procs``, threads not counted) and, under gVisor, the sandbox's memory.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Iterator
from typing import Any

HEADER = struct.Struct(">II")
MAX_HEADER = 16 * 1024 * 1024
# After a kill, how long we keep draining pipes before giving up on stragglers (e.g. stuck in D state).
KILL_GRACE_S = 2.0
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWIPC = 0x08000000
SYS_KEYCTL_X86_64 = 250
KEYCTL_JOIN_SESSION_KEYRING = 1
MQUEUE_DIR = "/dev/mqueue"
#: /proc/sysvipc file, and the x86_64 number of its *ctl call (IPC_RMID is 0 for all three).
SYSV_KINDS = (("shm", 31), ("msg", 71), ("sem", 66))
#: How often a running command is checked against the limits the agent enforces itself: its process count
#: (a listing of /proc, or one cgroup file) and, with ``watch_memory`` (gVisor, which has no memory limit
#: of its own), the sandbox's memory (one pread of /proc/meminfo, ~30 us under gVisor). A check that costs
#: more (a /proc walk on the local backend's host) is spaced out to stay under WATCH_MAX_SHARE of the time.
WATCH_POLL_S = 0.01
WATCH_MAX_SHARE = 0.05
#: How much a command may still use when an earlier command's files left the sandbox over its limit.
MEMORY_SLACK = 32 << 20
SPARE_PIPES = ("cmd_w", "err_r", "out_r", "err_out_r", "in_w")
#: What a spare writes on its error pipe once it has read its command.
ACK = b"+"


class ProtocolEOF(Exception):
    """The host closed the control pipe."""


class Spare:
    """A process forked ahead of time for the next command: already in its own session, under the
    sandbox user and its rlimits, waiting on a pipe for what to exec.

    Forking is the expensive part of starting a command: 10-17 ms under gVisor, during which the
    forking process answers nothing. In a pid namespace of our own (runsc, bwrap) spares come from a
    forker process (``Agent.serve_forks``), asked right after each command, so the agent keeps
    answering meanwhile (a file read right after a command does not wait for a fork) while the fork
    overlaps the host's turn. Elsewhere (the local backend, where forks are cheap) the agent forks
    them itself after each reply. docs/sandbox.md has the designs measured and rejected."""

    def __init__(self, pid: int, fds: dict[str, int]) -> None:
        self.pid = pid
        self.cmd_w = fds["cmd_w"]
        self.err_r = fds["err_r"]
        self.out_r = fds["out_r"]
        self.err_out_r = fds["err_out_r"]
        self.in_w = fds["in_w"]

    def close(self) -> None:
        for fd in (self.cmd_w, self.err_r, self.out_r, self.err_out_r, self.in_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _exited_children() -> Iterator[tuple[int, int]]:
    """``(pid, wait status)`` of each child that has exited, without waiting for the others."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _close_fds_except(keep: list[int]) -> None:
    """Close every descriptor above stderr that is not in ``keep``."""
    bounds = sorted(fd for fd in keep if fd > 2)
    for low, high in zip([2, *bounds], [*bounds, 1 << 20], strict=True):
        os.closerange(low + 1, high)


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise ProtocolEOF
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Agent:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.sandbox_id: str = cfg["id"]
        self.workspace: str = os.path.realpath(cfg["workspace"])
        self.scratch: list[str] = list(cfg.get("scratch", []))
        self.uid: int | None = cfg.get("uid")
        self.gid: int | None = cfg.get("gid")
        self.base_env: dict[str, str] = dict(cfg.get("env", {}))
        self.limits: dict[str, int] = dict(cfg["limits"])
        # kill(-1, ...) is only safe when we are the init of our own pid namespace.
        self.pidns = bool(cfg.get("pidns")) and os.getpid() == 1
        self.nproc_extra = int(cfg.get("nproc_extra", 0))
        self.ipc: str | None = cfg.get("ipc")
        #: The cgroup.procs of the commands' memory cgroup, if the sandbox has one.
        self.commands_cgroup: str | None = cfg.get("commands_cgroup")
        #: Where nothing bounds the sandbox's memory as a whole (no cgroup), each command's address space
        #: is capped at memory_mb instead (RLIMIT_AS), the only bound left.
        self.cap_address_space = bool(cfg.get("cap_address_space"))
        #: /proc/meminfo, where the agent itself must enforce memory_mb on the whole sandbox (gVisor's
        #: meminfo counts every process and every tmpfs page of its kernel, i.e. of this sandbox).
        self.meminfo: int | None = None
        self.memory_limit = 0
        self.memory_floor = 0
        if cfg.get("watch_memory"):
            with contextlib.suppress(OSError):
                self.meminfo = os.open("/proc/meminfo", os.O_RDONLY | os.O_CLOEXEC)
        # The command being run and, once reaped, its wait status.
        self.watched: int | None = None
        self.watched_status: int | None = None
        self.spare: Spare | None = None
        self.forker_pid: int | None = None
        self.forker_sock: socket.socket | None = None
        self.spare_pending = False

        # The protocol uses private copies of fds 0/1; the originals point at /dev/null and stderr so that
        # nothing printed by accident can corrupt the stream.
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        os.close(devnull)

        self.sig_r, self.sig_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.sig_w)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, self._on_terminate)

        self.libc: Any = None
        try:
            import ctypes

            self.libc = ctypes.CDLL(None, use_errno=True)
        except Exception:
            self.libc = None
        if not self.pidns and self.libc is not None:
            # Orphaned grandchildren are re-parented to us, so "every descendant" stays findable.
            self.libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        if self.libc is not None and os.uname().machine == "x86_64":
            # A fresh, empty session keyring: commands do not inherit (possess) the launching process's
            # keys. (The only keyctl that bwrap's seccomp filter lets through; gVisor has no host keys.)
            self.libc.syscall(SYS_KEYCTL_X86_64, KEYCTL_JOIN_SESSION_KEYRING, None)
        if self.ipc == "unshare":
            self.new_ipc_namespace()
        if os.geteuid() == 0 and self.uid is not None:
            os.setgroups([])
            os.chown(self.workspace, self.uid, self.gid if self.gid is not None else self.uid)
        os.chmod(self.workspace, 0o755)

    # --- lifecycle ---------------------------------------------------------------------------------
    def _on_terminate(self, *_: Any) -> None:
        self.kill_all()
        os._exit(0)

    def serve(self) -> None:
        self.prefork()
        self.collect_spare()  # so that the memory measured below includes it
        if self.meminfo is not None:
            # What the agent and its spare use now is theirs; commands get memory_mb on top of it.
            try:
                self.memory_limit = self.memory_used() + self.limits["memory_mb"] * 1024 * 1024
            except (OSError, ValueError, IndexError):
                os.close(self.meminfo)
                self.meminfo = None  # not gVisor's meminfo: the host cgroup alone bounds the sandbox
        self.send({"ok": True, "op": "hello", "pid": os.getpid(), "pidns": self.pidns})
        while True:
            try:
                hdr, blob = self.recv()
            except ProtocolEOF:
                break
            op = hdr.get("op")
            if op == "cancel":
                # Raced with the end of its exec: nothing to cancel, and the host expects no reply.
                continue
            if op == "exit":
                self.kill_all()
                self.send({"ok": True})
                break
            try:
                reply, out = self.dispatch(op, hdr, blob)
            except ProtocolEOF:
                break
            except OSError as exc:
                reply, out = (
                    {"ok": False, "kind": type(exc).__name__, "errno": exc.errno, "error": str(exc)},
                    b"",
                )
            except Exception as exc:
                reply, out = {"ok": False, "kind": type(exc).__name__, "error": str(exc)}, b""
            self.send(reply, out)
            self.prefork()
        self.kill_all()

    def recv(self) -> tuple[dict[str, Any], bytes]:
        n, m = HEADER.unpack(_read_exact(self.rfd, HEADER.size))
        if n > MAX_HEADER:
            raise ProtocolEOF
        hdr = json.loads(_read_exact(self.rfd, n))
        blob = _read_exact(self.rfd, m) if m else b""
        return hdr, blob

    def send(self, hdr: dict[str, Any], blob: bytes = b"") -> None:
        data = json.dumps(hdr).encode()
        _write_all(self.wfd, HEADER.pack(len(data), len(blob)) + data + blob)

    def dispatch(self, op: str | None, hdr: dict[str, Any], blob: bytes) -> tuple[dict[str, Any], bytes]:
        if op == "exec":
            return self.op_exec(hdr, blob)
        if op == "write":
            self.op_write(hdr["path"], blob, int(hdr.get("mode", 0o644)))
            return {"ok": True}, b""
        if op == "read":
            data = self.op_read(hdr["path"], int(hdr.get("max_bytes", 1 << 30)))
            return {"ok": True}, data
        if op == "bundle":
            n = self.op_bundle(hdr.get("dest", "."), blob)
            return {"ok": True, "members": n}, b""
        if op == "reset":
            self.op_reset()
            return {"ok": True}, b""
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}, b""
        if op == "list":
            entries, truncated = self.op_list(
                hdr.get("path") or ".", int(hdr.get("max_depth", 1)), bool(hdr.get("include_hidden")),
                int(hdr.get("max_entries", 10_000)),
            )  # fmt: skip
            return {"ok": True, "entries": entries, "truncated": truncated}, b""
        if op == "search":
            return {"ok": True, **self.op_search(hdr)}, b""
        raise ValueError(f"unknown op {op!r}")

    # --- processes ---------------------------------------------------------------------------------
    def memory_used(self) -> int:
        """Bytes in use in the sandbox's kernel (MemTotal - MemFree of /proc/meminfo)."""
        assert self.meminfo is not None
        lines = os.pread(self.meminfo, 4096, 0).split(b"\n", 2)
        return (int(lines[0].split()[1]) - int(lines[1].split()[1])) * 1024

    def memory_over(self) -> bool:
        """Whether the sandbox is over its memory limit (see ``memory_floor``)."""
        used = self.memory_used()
        if self.memory_floor and used + MEMORY_SLACK < self.memory_floor:
            self.memory_floor = used + MEMORY_SLACK  # files were removed: the allowance shrinks back
        return used > max(self.memory_limit, self.memory_floor)

    def after_memory_kill(self) -> None:
        """The command is dead; what is left (files in tmpfs) may still be over the limit (we poll, so a
        writer can overshoot): later commands then get MEMORY_SLACK above it, until files go or reset()."""
        used = self.memory_used()
        if used + MEMORY_SLACK > self.memory_limit:
            self.memory_floor = used + MEMORY_SLACK

    def count_processes(self) -> int:
        """How many processes the running command has (each counted once, whatever its threads)."""
        if self.pidns:
            # The sandbox's own pid namespace: /proc lists its processes (thread-group leaders, zombies
            # included), of which all but the agent and its forker are the command's (no spare exists
            # while a command runs).
            mine = (1, self.forker_pid)
            return sum(1 for n in os.listdir("/proc") if n.isdigit() and int(n) not in mine)
        if self.commands_cgroup:
            # Every command process joins this memory cgroup; its cgroup.procs lists thread-group ids.
            with open(self.commands_cgroup) as f:
                return len(set(f.read().split()))
        return len(self.descendants())

    def reap(self) -> None:
        """Collect every exited child (we may be a namespace init or a subreaper: orphans land here)."""
        for pid, status in _exited_children():
            self.exited(pid, status)
            if pid == self.forker_pid:
                self.stop_forker()

    def exited(self, pid: int, status: int) -> None:
        """A child of ours, or of the forker, ended with wait ``status``."""
        if pid == self.watched:
            self.watched_status = status

    def descendants(self) -> list[int]:
        """Every live descendant of this agent (walks /proc; used where we are not a namespace init)."""
        me = os.getpid()
        parent: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            # The command name may contain spaces and parentheses: split after the last ')'.
            fields = data[data.rfind(b")") + 2 :].split()
            parent[int(name)] = int(fields[1])
        children: dict[int, list[int]] = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        out: list[int] = []
        stack = list(children.get(me, []))
        while stack:
            pid = stack.pop()
            out.append(pid)
            stack.extend(children.get(pid, []))
        return out

    def kill_commands(self) -> None:
        """After a command: SIGKILL whatever it left behind, and reap it. With a forker, that is every
        process but the agent and the forker (no spare exists yet); otherwise ``kill_all``."""
        if self.forker_pid is None:
            self.kill_all()
            return
        give_up = time.monotonic() + KILL_GRACE_S
        while True:
            pids = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, self.forker_pid)]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self.reap()
            self.forker_messages(wait=False)  # the forker's children: exit statuses (it reaps them)
            if not pids or self.forker_pid is None or time.monotonic() > give_up:
                break
            time.sleep(0.0005)
        if self.forker_pid is None:  # it died meanwhile: what it forked is ours now
            self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every process of the sandbox except the agent itself, and reap them."""
        if self.spare is not None:
            self.spare.close()
            self.spare = None
        self.stop_forker()
        give_up = time.monotonic() + KILL_GRACE_S
        while True:
            if self.pidns:
                try:
                    os.kill(-1, signal.SIGKILL)
                    alive = True
                except ProcessLookupError:
                    alive = False
            else:
                pids = self.descendants()
                alive = bool(pids)
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            self.reap()
            if not alive or time.monotonic() > give_up:
                return
            time.sleep(0.0005)

    def take_spare(self) -> Spare:
        """The waiting spare, or a new one. One that died while it waited shows as a missing ACK
        (``op_exec``), which covers every way it can die, so its exit is not tracked here."""
        self.collect_spare()
        spare = self.spare or self.fork_spare()
        self.spare = None
        return spare

    def prefork(self) -> None:
        """Have a spare ready, or on its way from the forker, for the next command."""
        if self.spare is not None or self.spare_pending:
            return
        if not self.pidns:
            # The forker needs a namespace of our own: after a command, every process of it but the
            # agent and the forker is that command's (no spare exists until the clean-up is done).
            self.spare = self.fork_spare()
            return
        try:
            if self.forker_sock is None:
                self.start_forker()
            assert self.forker_sock is not None
            self.forker_sock.send(b"F")
            self.spare_pending = True
        except OSError:
            self.stop_forker()  # the next command forks its own spare

    def collect_spare(self) -> None:
        """Wait for the spare the forker is making, if one was asked for."""
        while self.spare_pending and self.forker_sock is not None:
            self.forker_messages(wait=True)

    def forker_messages(self, *, wait: bool) -> None:
        """Handle the forker's messages: ``S <pid>`` with a spare's five pipe ends, ``X <pid> <status>``
        when one of its children (spares, then commands) exits. ``wait``: block for at least one."""
        sock = self.forker_sock
        while sock is not None:
            try:
                sock.setblocking(wait)  # (recv_fds drops its flags argument before Python 3.12)
                msg, fds, _flags, _addr = socket.recv_fds(sock, 64, len(SPARE_PIPES))
            except BlockingIOError:
                return
            except OSError:
                msg, fds = b"", []
            wait = False
            kind, *nums = msg.split() or [b""]
            if kind == b"S" and len(fds) == len(SPARE_PIPES):
                self.spare_pending = False
                self.spare = Spare(int(nums[0]), dict(zip(SPARE_PIPES, fds, strict=True)))
            elif kind == b"X" and not fds:
                self.exited(int(nums[0]), int(nums[1]))
            else:  # end of file (the forker died) or garbage
                for fd in fds:
                    os.close(fd)
                self.stop_forker()
                return

    def start_forker(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            try:
                ours.close()
                self.serve_forks(theirs)
            finally:
                os._exit(0)
        theirs.close()
        self.forker_pid, self.forker_sock = pid, ours

    def stop_forker(self) -> None:
        if self.forker_sock is not None:
            self.forker_sock.close()  # the forker exits at end of file; kill_all kills it anyway
        self.forker_pid, self.forker_sock, self.spare_pending = None, None, False

    def serve_forks(self, sock: socket.socket) -> None:
        """In the forker: for each ``F`` from the agent, fork a spare and send the agent its pid and
        pipes; report each child's exit (the spares are our children, so we reap them)."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        _close_fds_except([sock.fileno()])
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)
        while True:
            readable = select.select([sock.fileno(), wake_r], [], [])[0]
            if wake_r in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
            # Reap on every wake-up: a SIGCHLD may have come in before the handler was set.
            for pid, status in _exited_children():
                sock.send(f"X {pid} {status}".encode())
            if sock.fileno() in readable:
                if not sock.recv(16):
                    os._exit(0)  # the agent is gone
                spare = self.fork_spare()
                socket.send_fds(sock, [f"S {spare.pid}".encode()], [getattr(spare, n) for n in SPARE_PIPES])
                spare.close()

    def fork_spare(self) -> Spare:
        """A spare, as a child of this process (the agent, or the forker)."""
        cmd_r, cmd_w = os.pipe()
        err_r, err_w = os.pipe()
        out_r, out_w = os.pipe()
        err_out_r, err_out_w = os.pipe()
        in_r, in_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            try:
                _close_fds_except([cmd_r, err_w, in_r, out_w, err_out_w])  # none of its parent's
                self._become_command(cmd_r, err_w, in_r, out_w, err_out_w)
            except BaseException as exc:
                code = 127 if isinstance(exc, FileNotFoundError) else 126
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
                with contextlib.suppress(BaseException):
                    os.write(err_w, f"{code}:{reason}".encode())
            os._exit(127)
        for fd in (cmd_r, err_w, out_w, err_out_w, in_r):
            os.close(fd)
        fds = {"cmd_w": cmd_w, "err_r": err_r, "out_r": out_r, "err_out_r": err_out_r, "in_w": in_w}
        return Spare(pid, fds)

    def _become_command(self, cmd_r: int, err_w: int, in_r: int, out_w: int, err_out_w: int) -> None:
        """In the spare: drop to the sandbox user and its limits, wait for a command, exec it."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        # Python ignores these; an exec'd program must get the default behaviour (e.g. `yes | head`).
        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        os.setsid()
        # Where the sandbox has its own memory cgroup, the agent is the OOM killer's last choice and a
        # command its first (raising one's own score needs no privilege).
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        if self.commands_cgroup:
            # Into the commands' memory cgroup while still root ("0" = this process). Not optional: a
            # command outside it could starve the agent.
            with open(self.commands_cgroup, "w") as f:
                f.write("0")
        if os.geteuid() == 0 and self.uid is not None:
            gid = self.gid if self.gid is not None else self.uid
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(self.uid, self.uid, self.uid)
        lim = self.limits
        pairs = [
            (resource.RLIMIT_FSIZE, lim["max_file_mb"] * 1024 * 1024),
            # Counts threads (Linux's and gVisor's kernel alike): the max_threads bound, per sandbox where
            # its user is its own (runsc, bwrap). Processes are counted by the agent (count_processes).
            (resource.RLIMIT_NPROC, lim["max_threads"] + self.nproc_extra),
            (resource.RLIMIT_NOFILE, lim["max_open_files"]),
            (resource.RLIMIT_CORE, 0),
        ]
        if self.cap_address_space:
            pairs.append((resource.RLIMIT_AS, lim["memory_mb"] * 1024 * 1024))
        for res, value in pairs:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(res, (value, value))
        if self.libc is not None:
            self.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        os.umask(0o022)
        if not select.select([cmd_r], [], [], 0)[0]:
            # A fork's first compile() still takes copy-on-write faults in the parser's memory: taken
            # while the spare waits for its command, not on the command's clock.
            compile("pass", "<string>", "exec", dont_inherit=True)
        data = b""
        while chunk := os.read(cmd_r, 65536):
            data += chunk
        if not data:
            os._exit(0)  # discarded spare
        os.write(err_w, ACK)
        req = json.loads(data)
        # CPU seconds count from here, not from the fork. SIGXCPU at the limit, SIGKILL a second later.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
        os.chdir(req["cwd"])
        # stderr_to_stdout: one pipe for both, so the output keeps the order in which it was written.
        err_src = out_w if req.get("stderr_to_stdout") else err_out_w
        for src, dst in ((in_r, 0), (out_w, 1), (err_src, 2)):
            os.dup2(src, dst)
        for fd in (in_r, out_w, err_out_w, cmd_r):
            os.close(fd)
        os.closerange(3, err_w)
        os.closerange(err_w + 1, 4096)
        plan = inline_python_plan(req["argv"], req["env"])
        if plan is not None:
            os.close(err_w)  # what close-on-exec would do: tells the agent the command is running
            run_inline_python(plan, req["argv"], req["env"])  # never returns
        os.execvpe(req["argv"][0], req["argv"], req["env"])

    def op_exec(self, hdr: dict[str, Any], blob: bytes) -> tuple[dict[str, Any], bytes]:
        argv = [str(a) for a in hdr["argv"]]
        env = dict(self.base_env)
        env.update({str(k): str(v) for k, v in (hdr.get("env") or {}).items()})
        env["VF_SANDBOX_ID"] = self.sandbox_id
        timeout = float(hdr["timeout"])
        cap = int(hdr["max_output"])
        stdin_data: bytes | None = blob if hdr.get("has_stdin") else None
        start = time.monotonic()
        with self.as_user():
            cwd = self.resolve(hdr.get("cwd") or ".")
            if not os.path.isdir(cwd):
                raise NotADirectoryError(errno.ENOTDIR, "working directory does not exist", hdr.get("cwd"))
        # Hand the command to the pre-forked process. On its error pipe it acknowledges the command
        # (ACK), then reports an exec failure or closes the pipe (close-on-exec) once the program runs.
        req = {"argv": argv, "env": env, "cwd": cwd, "stderr_to_stdout": bool(hdr.get("stderr_to_stdout"))}
        payload = json.dumps(req).encode()
        spare = self.take_spare()
        for fresh in (False, True):
            failure = b""
            with contextlib.suppress(BrokenPipeError):
                _write_all(spare.cmd_w, payload)
                os.close(spare.cmd_w)
                spare.cmd_w = -1
                while chunk := os.read(spare.err_r, 4096):
                    failure += chunk
            if failure or fresh:
                break
            # Neither acknowledged nor failed: the spare died before it read the command (killed while
            # it waited, which a write into the pipe's buffer cannot tell). Fork one here, ourselves.
            spare.close()
            spare = self.fork_spare()
        os.close(spare.err_r)
        spare.err_r = -1
        # After the ACK: nothing (the program runs) or its exec failure. Without it the command never
        # started: the spare's own set-up failed, or a spare died twice.
        failure = failure[len(ACK) :] if failure.startswith(ACK) else failure or b"126:spare process died"
        self.watched, self.watched_status = spare.pid, None
        out_fd, err_fd, in_fd = spare.out_r, spare.err_out_r, spare.in_w
        if failure:
            for fd in (out_fd, err_fd, in_fd):
                os.close(fd)
            self.kill_commands()
            self.watched = None
            code_s, _, reason = failure.decode(errors="replace").partition(":")
            msg = f"vf-sandbox: cannot run {argv[0]!r}: {reason}\n".encode()
            return self._result(int(code_s or 126), None, False, False, False, b"", msg, start, False, False)

        for fd in (out_fd, err_fd, in_fd):
            os.set_blocking(fd, False)
        bufs = {out_fd: bytearray(), err_fd: bytearray()}
        trunc = {out_fd: False, err_fd: False}
        open_readers = {out_fd, err_fd}
        pending = memoryview(stdin_data or b"")
        in_open: int | None = in_fd
        if not pending:
            os.close(in_fd)
            in_open = None
        deadline = start + timeout
        timed_out = cancelled = oom_killed = procs_killed = False
        killed_at: float | None = None
        host_gone = False
        max_procs = int(self.limits["max_procs"])
        next_memory = start + WATCH_POLL_S if self.meminfo is not None else math.inf
        next_procs = start + WATCH_POLL_S

        while True:
            self.reap()
            status = self.watched_status
            if status is not None and killed_at is None:
                # The command is done: anything it left behind goes too, which also closes our pipes.
                self.kill_commands()
                killed_at = time.monotonic()
            if status is not None and not open_readers:
                break
            now = time.monotonic()
            if killed_at is None and now >= deadline:
                timed_out = True
                self.kill_all()
                killed_at = now
            if killed_at is None and now >= next_procs:
                with contextlib.suppress(OSError, ValueError):
                    procs_killed = self.count_processes() > max_procs
                cost = time.monotonic() - now
                next_procs = now + max(WATCH_POLL_S, cost / WATCH_MAX_SHARE)
                if procs_killed:  # (first: the cause when too many processes also took too much memory)
                    self.kill_all()
                    killed_at = now
            if killed_at is None and now >= next_memory:
                next_memory = now + WATCH_POLL_S
                try:
                    oom_killed = self.memory_over()
                except (OSError, ValueError, IndexError):
                    next_memory = math.inf  # unreadable: the host cgroup alone bounds this one
                if oom_killed:
                    self.kill_all()
                    killed_at = now
                    with contextlib.suppress(OSError, ValueError, IndexError):
                        self.after_memory_kill()
            if killed_at is not None and now - killed_at > KILL_GRACE_S:
                break
            wait = (deadline - now) if killed_at is None else max(0.0, killed_at + KILL_GRACE_S - now)
            if killed_at is None:
                wait = min(wait, next_memory - now, next_procs - now)
            forker = [self.forker_sock.fileno()] if self.forker_sock is not None else []
            rlist = [*open_readers, self.sig_r, self.rfd, *forker]
            wlist = [in_open] if in_open is not None else []
            try:
                readable, writable, _ = select.select(rlist, wlist, [], max(wait, 0.0))
            except InterruptedError:
                continue
            if self.sig_r in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.sig_r, 4096)
            if forker and forker[0] in readable:
                self.forker_messages(wait=False)
            if self.rfd in readable:
                try:
                    ctl, _blob = self.recv()
                    if ctl.get("op") == "cancel" and killed_at is None:
                        cancelled = True
                        self.kill_all()
                        killed_at = time.monotonic()
                except ProtocolEOF:
                    host_gone = True
                    self.kill_all()
                    killed_at = time.monotonic()
            for fd in readable:
                if fd not in open_readers:
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    open_readers.discard(fd)
                    continue
                room = cap - len(bufs[fd])
                if room > 0:
                    bufs[fd] += chunk[:room]
                if len(chunk) > room:
                    # Keep draining (so the command does not block on a full pipe) but keep nothing more.
                    trunc[fd] = True
            if in_open is not None and in_open in writable:
                try:
                    n = os.write(in_open, pending[:65536])
                    pending = pending[n:]
                except BlockingIOError:
                    pass
                except OSError:
                    pending = memoryview(b"")
                if not pending:
                    os.close(in_open)
                    in_open = None

        leftover: list[int | None] = [out_fd, err_fd, in_open]
        for maybe_fd in leftover:
            if maybe_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(maybe_fd)
        if status is None:
            self.kill_all()
            status = self.watched_status
        self.watched = None
        code: int | None
        sig: int | None = None
        if status is None:
            code = None
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            code = -sig
        else:
            code = os.waitstatus_to_exitcode(status)
        if host_gone:
            raise ProtocolEOF
        hdr_out, blob_out = self._result(
            code, sig, timed_out, trunc[out_fd], trunc[err_fd], bytes(bufs[out_fd]), bytes(bufs[err_fd]),
            start, cancelled, True,
        )  # fmt: skip
        hdr_out["oom_killed"] = oom_killed
        hdr_out["procs_killed"] = procs_killed
        return hdr_out, blob_out

    @staticmethod
    def _result(
        code: int | None,
        sig: int | None,
        timed_out: bool,
        out_trunc: bool,
        err_trunc: bool,
        out: bytes,
        err: bytes,
        start: float,
        cancelled: bool,
        started: bool,
    ) -> tuple[dict[str, Any], bytes]:
        hdr = {
            "ok": True,
            "exit_code": code,
            "signal": sig,
            "timed_out": timed_out,
            "stdout_truncated": out_trunc,
            "stderr_truncated": err_trunc,
            "stdout_len": len(out),
            "duration_s": time.monotonic() - start,
            "cancelled": cancelled,
            "started": started,
        }
        return hdr, out + err

    # --- files -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_user(self) -> Iterator[None]:
        if os.geteuid() != 0 or self.uid is None:
            yield
            return
        os.setegid(self.gid if self.gid is not None else self.uid)
        os.seteuid(self.uid)
        try:
            yield
        finally:
            os.seteuid(0)
            os.setegid(0)

    def resolve(self, rel: str) -> str:
        """Map a workspace-relative path to a real path inside the workspace, following symlinks."""
        if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/") or "\0" in rel:
            raise PermissionError(errno.EPERM, "path must be relative to the workspace", rel)
        real = os.path.realpath(os.path.join(self.workspace, rel))
        if real != self.workspace and not real.startswith(self.workspace + "/"):
            raise PermissionError(errno.EPERM, "path escapes the workspace", rel)
        return real

    def op_write(self, rel: str, data: bytes, mode: int) -> None:
        with self.as_user():
            parent = self.resolve(os.path.dirname(rel) or ".")
            os.makedirs(parent, exist_ok=True)
            self.resolve(os.path.dirname(rel) or ".")  # re-check after creating directories
            target = os.path.join(parent, os.path.basename(rel))
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)

    def op_read(self, rel: str, max_bytes: int) -> bytes:
        with self.as_user():
            path = self.resolve(rel)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "not a regular file", rel)
                if st.st_size > max_bytes:
                    raise ValueError(f"{rel}: {st.st_size} bytes is more than the {max_bytes} allowed")
                chunks = []
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                os.close(fd)

    def _walk(self, root: str, max_depth: int, include_hidden: bool) -> Iterator[tuple[str, str]]:
        """``(path relative to the workspace, kind)`` under ``root`` (pre-order, sorted by name, at most
        ``max_depth`` levels down; hidden names skipped unless asked); symlinks are listed, not followed."""
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            d, depth = stack.pop()
            try:
                with os.scandir(d) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            subdirs: list[tuple[str, int]] = []
            for e in items:
                if not include_hidden and e.name.startswith("."):
                    continue
                rel = os.path.relpath(e.path, self.workspace)
                if e.is_symlink():
                    yield rel, "link"
                elif e.is_dir():
                    yield rel, "dir"
                    if depth + 1 < max_depth:
                        subdirs.append((e.path, depth + 1))
                elif e.is_file():
                    yield rel, "file"
                else:
                    yield rel, "other"
            stack.extend(reversed(subdirs))

    def op_list(
        self, rel: str, max_depth: int, include_hidden: bool, max_entries: int
    ) -> tuple[list[list[str]], bool]:
        with self.as_user():
            root = self.resolve(rel)
            if not os.path.exists(root):
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", rel)
            if not os.path.isdir(root):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", rel)
            out: list[list[str]] = []
            for path, kind in self._walk(root, max_depth, include_hidden):
                if len(out) >= max_entries:
                    return out, True
                out.append([path, kind])
            return out, False

    def op_search(self, hdr: dict[str, Any]) -> dict[str, Any]:
        """Lines containing ``pattern`` (a plain substring) in a file, or in the text files under a
        directory: per file the match count and up to ``max_lines`` ``[line number, line]`` pairs."""
        rel = hdr.get("path") or "."
        pattern = str(hdr["pattern"])
        suffixes = tuple(hdr.get("suffixes") or ())
        max_files, max_lines = int(hdr.get("max_files", 1000)), int(hdr.get("max_lines", 100))
        max_file_bytes, max_line_chars = int(hdr.get("max_file_bytes", 8 << 20)), 1000
        files: list[dict[str, Any]] = []
        matched = 0
        with self.as_user():
            root = self.resolve(rel)
            if os.path.isdir(root):
                walk = self._walk(root, int(hdr.get("max_depth", 64)), bool(hdr.get("include_hidden")))
                paths = [p for p, kind in walk if kind == "file" and (not suffixes or p.endswith(suffixes))]
            elif os.path.isfile(root):
                paths = [os.path.relpath(root, self.workspace)]
            else:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", rel)
            for path in paths:
                try:
                    fd = os.open(
                        os.path.join(self.workspace, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
                    )
                except OSError:
                    continue
                try:
                    if os.fstat(fd).st_size > max_file_bytes:
                        continue
                    chunks = []
                    while chunk := os.read(fd, 1 << 20):
                        chunks.append(chunk)
                finally:
                    os.close(fd)
                data = b"".join(chunks)
                if pattern.encode() not in data or b"\0" in data[:8192]:
                    continue  # no match, or a binary file (as grep sees it)
                count = 0
                lines: list[list[Any]] = []
                for no, line in enumerate(data.decode(errors="replace").split("\n"), 1):
                    if pattern in line:
                        count += 1
                        if len(lines) < max_lines:
                            lines.append([no, line[:max_line_chars]])
                if count:
                    matched += 1
                    if len(files) < max_files:
                        files.append({"path": path, "count": count, "lines": lines})
        return {"files": files, "files_matched": matched, "truncated": matched > len(files)}

    def op_bundle(self, dest: str, blob: bytes) -> int:
        import tarfile

        with self.as_user():
            root = self.resolve(dest)
            os.makedirs(root, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tf:
                members = tf.getmembers()
                if hasattr(tarfile, "data_filter"):
                    # Rejects absolute names, '..', links that leave `root`, devices; drops setuid bits.
                    tf.extractall(root, members=members, filter="data")
                else:  # pragma: no cover - interpreters older than 3.11.4
                    for m in members:
                        if (
                            not (m.isfile() or m.isdir())
                            or m.name.startswith("/")
                            or ".." in m.name.split("/")
                        ):
                            raise PermissionError(errno.EPERM, "unsafe tar member", m.name)
                    tf.extractall(root, members=members)
            return len(members)

    def new_ipc_namespace(self) -> None:
        """Move the agent (and so every later command) to a new, empty IPC namespace; the old one goes
        away with its last process."""
        if self.libc is None or self.libc.unshare(CLONE_NEWIPC) != 0:
            err = ctypes_errno(self.libc)
            raise OSError(err, f"cannot create a fresh IPC namespace: {os.strerror(err)}")

    def clear_ipc(self) -> None:
        """Remove every IPC object commands created: SysV shared memory, message queues, semaphore sets
        and POSIX message queues (POSIX shared memory lives in /dev/shm, a scratch dir)."""
        if self.ipc == "unshare":
            self.new_ipc_namespace()
            return
        if self.ipc != "sweep" or self.libc is None:
            return
        for kind, nr in SYSV_KINDS:
            try:
                with open(f"/proc/sysvipc/{kind}") as f:
                    ids = [int(line.split()[1]) for line in f.read().splitlines()[1:] if line.strip()]
            except OSError:
                continue
            # IPC_RMID is for the owner or creator: the command user (the agent lacks CAP_SYS_ADMIN).
            with self.as_user():
                for ipc_id in ids:
                    self.libc.syscall(nr, ipc_id, 0, 0, 0)
        if os.path.isdir(MQUEUE_DIR):
            for name in os.listdir(MQUEUE_DIR):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(MQUEUE_DIR, name))

    def op_reset(self) -> None:
        """Back to a fresh sandbox: no processes, no IPC objects, empty workspace and scratch dirs."""
        self.kill_all()
        self.clear_ipc()
        self.memory_floor = 0
        for top in [self.workspace, *self.scratch]:
            if not os.path.isdir(top):
                continue
            for name in os.listdir(top):
                _remove(os.path.join(top, name))
        if os.geteuid() == 0 and self.uid is not None:
            os.chown(self.workspace, self.uid, self.gid if self.gid is not None else self.uid)
        os.chmod(self.workspace, 0o755)


def ctypes_errno(libc: Any) -> int:
    if libc is None:
        return errno.ENOSYS
    import ctypes

    return ctypes.get_errno() or errno.EPERM


def _remove(path: str) -> None:
    import shutil

    def fix(func: Any, p: str, _exc: Any) -> None:
        # A command may have made a directory unwritable or unreadable; give it back to the owner.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        with contextlib.suppress(FileNotFoundError):
            func(p)

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=fix)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


# --- the Python fast path ----------------------------------------------------------------------------
# Starting a new interpreter costs ~25-60 ms under gVisor's ptrace platform (hundreds of syscalls, each
# trapped). A spare is already a forked, initialised interpreter of the very same executable, so a plain
# `python3 -c CODE [ARGS]` or `python3 SCRIPT.py [ARGS]` runs inside it instead, set up as the interpreter
# would set it up: a fresh __main__, argv, sys.path[0], environment, standard streams, site, signal
# dispositions, and the same reporting of an uncaught exception and exit status. Anything else (other
# flags, PYTHON* variables, another locale or executable, a script that is not a readable .py file)
# takes the ordinary exec path. What stays visible: sys.flags (the agent's -I -S -B), the modules the
# agent imported, and a few frames of the agent's below the program's (docs/sandbox.md).
_INLINE_ENV_OK = {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONIOENCODING"}
#: The sandbox's locale (LC_ALL=C.UTF-8). Under another one the interpreter starts differently (locale
#: coercion, stdio encoding and errors).
_INLINE_LOCALES = {"C.UTF-8", "C.utf8"}
_STDIO_NAMES = ("<stdin>", "<stdout>", "<stderr>")


def inline_python_plan(argv: list[str], env: dict[str, str]) -> tuple[str, str | bytes] | None:
    """``(file name, source)`` of the program when ``argv`` can run in this interpreter, else ``None``:
    ``("<string>", code)`` for ``-c``, ``(absolute path, contents)`` for a script."""
    if len(argv) < 2 or any(k.startswith("PYTHON") and k not in _INLINE_ENV_OK for k in env):
        return None
    if env.get("PYTHONIOENCODING", "utf-8").lower() not in ("utf-8", "utf8"):
        return None
    if (env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG")) not in _INLINE_LOCALES:
        return None
    exe = argv[0]
    if "/" not in exe:
        for d in env.get("PATH", "").split(":"):
            cand = os.path.join(d or ".", exe)
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                exe = cand
                break
        else:
            return None
    try:
        if os.path.realpath(exe) != os.path.realpath(sys.executable):
            return None
    except OSError:
        return None
    if argv[1] == "-c":
        return ("<string>", argv[2]) if len(argv) >= 3 else None
    if argv[1].startswith("-") or not argv[1].endswith(".py"):
        return None  # the interpreter also runs directories, zip files and .pyc files, its own way
    path = os.path.join(os.getcwd(), argv[1])  # how the interpreter makes __main__.__file__ absolute
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return (path, f.read())
    except OSError:
        return None  # the interpreter reports it


def _stdio(fd: int, errors: str, buffered: bool) -> io.TextIOWrapper:
    """Standard stream ``fd`` as the interpreter creates it (``create_stdio`` in ``pylifecycle.c``): no
    newline translation, stdin always buffered, stderr line-buffered, names ``<stdout>`` & co."""
    write = fd != 0
    raw = io.FileIO(fd, "wb" if write else "rb", closefd=False)
    raw.name = _STDIO_NAMES[fd]
    buffer: Any = raw
    if not write:
        buffer = io.BufferedReader(raw)
    elif buffered:
        buffer = io.BufferedWriter(raw)
    stream = io.TextIOWrapper(
        buffer,
        encoding="utf-8",
        errors=errors,
        newline="\n",
        line_buffering=buffered and fd == 2,
        write_through=not buffered,
    )
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    return stream


def run_inline_python(program: tuple[str, str | bytes], argv: list[str], env: dict[str, str]) -> None:
    """Run the planned program in this (spare) process and exit with its status, as `python3` would."""
    import atexit

    filename, source = program
    code, interrupted = 0, False
    try:
        os.environ.clear()
        os.environ.update(env)
        sys.orig_argv = list(argv)
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        # The interpreter ignores SIGPIPE/SIGXFSZ and turns SIGINT into KeyboardInterrupt.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        if hasattr(signal, "SIGXFSZ"):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # PYTHONIOENCODING with an encoding means 'strict'; the C.UTF-8 locale means 'surrogateescape'.
        errors = "strict" if "PYTHONIOENCODING" in env else "surrogateescape"
        buffered = not env.get("PYTHONUNBUFFERED")
        sys.stdin, sys.stdout = _stdio(0, errors, buffered), _stdio(1, errors, buffered)
        sys.stderr = _stdio(2, "backslashreplace", buffered)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
        import site

        # A plain `python3` imports site: exit/quit builtins, site-packages, the user's site-packages.
        site.ENABLE_USER_SITE = os.getuid() == os.geteuid() and os.getgid() == os.getegid()
        site.main()
        main = type(sys)("__main__")
        namespace = main.__dict__
        namespace.update(__builtins__=sys.modules["builtins"], __annotations__={})
        if filename == "<string>":
            sys.argv = ["-c", *argv[3:]]
            sys.path.insert(0, "")
            namespace["__loader__"] = sys.modules["builtins"].__loader__  # BuiltinImporter
        else:
            sys.argv = [argv[1], *argv[2:]]
            sys.path.insert(0, os.path.dirname(os.path.realpath(filename)))
            loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", filename)
            namespace.update(__file__=filename, __cached__=None, __loader__=loader)
        sys.modules["__main__"] = main
        # dont_inherit: not this module's `from __future__ import annotations`.
        exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            with contextlib.suppress(Exception):
                print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:
        # Reported through sys.excepthook, without this function's frame, as the interpreter does.
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        try:
            sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        except BaseException:
            with contextlib.suppress(BaseException):
                sys.__excepthook__(type(exc), exc, tb)
        code, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    # Then what interpreter exit does: join non-daemon threads, run atexit, flush the streams.
    with contextlib.suppress(BaseException):
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception as exc:
            code = 120
            if stream is sys.stdout:
                with contextlib.suppress(Exception):
                    print(f"Exception ignored in: {stream!r}", file=sys.stderr)
                    sys.__excepthook__(type(exc), exc, None)
    if interrupted:  # an uncaught KeyboardInterrupt ends the interpreter by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def main() -> None:
    # Warm-up for the Python fast path, once, before any fork. It runs `site.main()` for each program as a
    # plain `python3` would; importing the module costs ~0.9 ms, and with -S the import has no effect
    # beyond sys.modules (where a plain `python3` has it too). A process's first compile() costs ~0.8 ms.
    __import__("site")
    compile("pass", "<string>", "exec", dont_inherit=True)
    cfg = json.loads(sys.argv[1])
    agent = Agent(cfg)
    try:
        agent.serve()
    finally:
        agent.kill_all()


if __name__ == "__main__":
    main()
