"""Sandbox backends: gVisor (``runsc``), bubblewrap (``bwrap``) and ``local`` (no isolation).

All three start the same in-sandbox agent (``_agent.py``) and talk to it over a pipe pair; they differ
only in how the agent is confined. The choice of backend is explicit or automatic (best available:
runsc > bwrap); ``local`` is never chosen automatically.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from verifiers.errors import SandboxError
from verifiers.sandbox import _state
from verifiers.sandbox._sandbox import Sandbox, _recv
from verifiers.sandbox._state import ID_PREFIX, StateDir, kill_if, proc_start_time
from verifiers.sandbox._types import SandboxLimits

log = logging.getLogger("verifiers.sandbox")

AGENT_SOURCE = Path(__file__).with_name("_agent.py")
AGENT_PATH = "/opt/vf-sandbox/agent.py"
WORKSPACE = "/workspace"
CREATE_TIMEOUT_S = 30.0
#: Where the run uid of a bubblewrap sandbox is drawn from (unused on ordinary systems; one per sandbox, so
#: that RLIMIT_NPROC counts only that sandbox's processes).
BWRAP_UID_BASE = 1_600_000_000
BWRAP_UID_SPAN = 100_000_000
RUNSC_UID = 1000


# --- the host's interpreter ------------------------------------------------------------------------
@dataclass(frozen=True)
class HostPython:
    executable: str  # a real binary, never a pyenv shim or a venv launcher
    prefix: str  # the installation to expose read-only inside sandboxes
    bindir: str
    #: The installation's own site-packages (hidden inside sandboxes unless asked for).
    site_packages: str | None


_HOST_PYTHON: HostPython | None = None


def host_python() -> HostPython:
    """The real interpreter behind ``sys.executable`` (venvs and pyenv shims resolved away)."""
    global _HOST_PYTHON
    if _HOST_PYTHON is None:
        base = os.path.realpath(sys.base_prefix)
        ver = f"{sys.version_info.major}.{sys.version_info.minor}"
        candidates = [
            os.path.realpath(sys.executable),
            os.path.realpath(os.path.join(base, "bin", f"python{ver}")),
            os.path.realpath(os.path.join(base, "bin", "python3")),
        ]
        for exe in candidates:
            if exe.startswith(base + "/") and os.path.isfile(exe) and os.access(exe, os.X_OK):
                with open(exe, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        site = os.path.join(base, "lib", f"python{ver}", "site-packages")
                        _HOST_PYTHON = HostPython(
                            exe, base, os.path.dirname(exe), site if os.path.isdir(site) else None
                        )
                        break
        else:
            raise SandboxError(f"cannot find the real interpreter of {sys.executable} under {base}")
    return _HOST_PYTHON


def _sandbox_env(python: HostPython, home: str, tmp: str) -> dict[str, str]:
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


def _root_links() -> list[tuple[str, str | None]]:
    """Top-level library/binary dirs of the host: (path, symlink target or None for a real dir)."""
    out: list[tuple[str, str | None]] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = f"/{name}"
        if os.path.islink(p):
            out.append((p, os.readlink(p)))
        elif os.path.isdir(p):
            out.append((p, None))
    return out


#: Host files of /etc that sandboxes see (read-only): the loader's cache, alternatives' links, the time zone.
HOST_ETC = ("ld.so.cache", "alternatives", "localtime")


def _write_etc(etc: Path, uid: int) -> None:
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


def _agent_config(
    sandbox_id: str, limits: SandboxLimits, *, workspace: str, scratch: list[str], env: dict[str, str],
    uid: int | None, pidns: bool, nproc_extra: int = 0,
) -> str:  # fmt: skip
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
        }
    )


# --- the backend base ------------------------------------------------------------------------------
_live: dict[str, tuple[StateDir, SandboxBackend]] = {}
_live_lock = threading.Lock()
_atexit_registered = False
_reaped_once: set[str] = set()


def _cleanup_at_exit() -> None:
    """Tear down sandboxes the program forgot to destroy (bwrap and local die with us; runsc does not)."""
    with _live_lock:
        items = list(_live.values())
        _live.clear()
    for sd, backend in items:
        try:
            backend.teardown(sd)
        except Exception as exc:  # keep going; the reaper of a later process gets another chance
            log.warning("sandbox %s: teardown at exit failed: %s", sd.id, exc)
        sd.remove()


class SandboxBackend(ABC):
    """Creates sandboxes of one kind. Subclasses set ``name`` and ``contained`` and implement the launch."""

    name: ClassVar[str]
    #: Whether the backend is a security boundary (False only for ``local``).
    contained: ClassVar[bool] = True

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool:
        """Whether this machine can run the backend (binary present and usable by this user)."""

    @abstractmethod
    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        """Start the agent and return its pipes."""

    @classmethod
    @abstractmethod
    def teardown(cls, sd: StateDir) -> None:
        """Synchronously kill everything a sandbox record describes (used by destroy and by the reaper)."""

    def __init__(self, *, site_packages: bool = False) -> None:
        #: Whether sandboxes see the packages installed in the host interpreter's own site-packages. Off
        #: by default: sandboxed code gets the standard library only, the same on every machine, and no
        #: start-up hooks (.pth files) of the host.
        self.site_packages = site_packages

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def _hidden_site(self) -> str | None:
        py = host_python()
        return None if self.site_packages or py.prefix.startswith("/usr/") else py.site_packages

    async def start(self) -> None:
        """Once per process and backend: clean up sandboxes left behind by dead processes."""
        if self.name not in _reaped_once:
            _reaped_once.add(self.name)
            await asyncio.to_thread(reap_orphans)

    async def create(self, limits: SandboxLimits | None = None) -> Sandbox:
        """Start a new sandbox; raises :class:`SandboxError` if it cannot be started."""
        global _atexit_registered
        limits = limits or SandboxLimits()
        await self.start()
        if not _atexit_registered:
            _atexit_registered = True
            atexit.register(_cleanup_at_exit)
        sid = ID_PREFIX + secrets.token_hex(6)
        sd = await asyncio.to_thread(StateDir.create, sid, self.name)
        with _live_lock:
            _live[sid] = (sd, self)
        launched: Launched | None = None
        try:
            launched = await self._launch(sd, limits)
            try:
                hello, _ = await asyncio.wait_for(_recv(launched.reader), CREATE_TIMEOUT_S)
            except (TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                raise SandboxError(f"{self.name} sandbox did not start: {self._startup_log(sd)}") from exc
            if not hello.get("ok"):
                raise SandboxError(f"{self.name} sandbox agent failed: {hello}")
        except BaseException:
            if launched is not None:
                launched.writer.close()
                launched.read_transport.close()
            await self._discard(sd)
            raise
        if not self.contained:
            log.warning(
                "sandbox %s uses the 'local' backend: commands run as plain subprocesses on the host, with "
                "rlimits but WITHOUT filesystem, network or process isolation. It is not a security boundary.",
                sid,
            )
        backend = self

        proc = launched.proc

        async def teardown() -> None:
            await backend._discard(sd)
            if proc.returncode is None:
                # bwrap and the local agent are our children: reap them (they are dead by now).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 5.0)

        def kill() -> None:
            backend.kill_now(sd)

        return Sandbox(
            sandbox_id=sid,
            backend=self.name,
            contained=self.contained,
            limits=limits,
            reader=launched.reader,
            writer=launched.writer,
            read_transport=launched.read_transport,
            teardown=teardown,
            kill=kill,
            workdir=launched.workdir,
        )

    def kill_now(self, sd: StateDir) -> None:
        """Kill a sandbox's processes at once, without blocking on external tools (destroy follows)."""
        self.teardown(sd)

    async def _discard(self, sd: StateDir) -> None:
        try:
            await asyncio.to_thread(self.teardown, sd)
        finally:
            await asyncio.to_thread(sd.remove)
            with _live_lock:
                _live.pop(sd.id, None)

    @staticmethod
    def _startup_log(sd: StateDir) -> str:
        try:
            text = (sd.path / "startup.log").read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text[-2000:] or "(no output)"

    @staticmethod
    def _record_pid(sd: StateDir, key: str, pid: int) -> None:
        sd.meta[key] = pid
        sd.meta[key + "_start"] = proc_start_time(pid)
        sd.save()


@dataclass
class Launched:
    """A started agent: the host process (bwrap, local agent, or the already-exited ``runsc run``) and
    our ends of the agent's stdin/stdout pipes."""

    proc: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    read_transport: asyncio.ReadTransport
    workdir: str


async def _spawn(
    argv: list[str], sd: StateDir, workdir: str, *, cwd: str | None = None, env: dict[str, str] | None = None
) -> Launched:
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


# --- gVisor ----------------------------------------------------------------------------------------
def _runsc_binary() -> str | None:
    return (
        os.environ.get("VF_RUNSC")
        or shutil.which("runsc")
        or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
    )


def _runsc_flags(sd: StateDir) -> list[str]:
    # --ignore-cgroups: limits are enforced inside the sandbox (rlimits, tmpfs sizes), and host cgroups
    # are often not delegated to us. --file-access-mounts=exclusive: the host dirs we bind are read-only
    # system files, so gVisor may cache them instead of revalidating every access (faster starts).
    flags = [
        f"--root={sd.path / 'runsc'}",
        "--network=none",
        "--ignore-cgroups",
        "--file-access-mounts=exclusive",
    ]
    platform = os.environ.get("VF_RUNSC_PLATFORM")
    if platform:
        flags.append(f"--platform={platform}")
    if os.geteuid() != 0:
        flags.append("--rootless")
    # Escape hatch for machines that need other runsc flags (space-separated, appended last).
    flags += os.environ.get("VF_RUNSC_FLAGS", "").split()
    return flags


class RunscBackend(SandboxBackend):
    """gVisor: each sandbox is a persistent runsc container with its own user-space kernel.

    The OCI bundle shows the host's ``/usr`` (and ``/lib*`` links) and the Python installation read-only,
    a private minimal ``/etc``, and in-memory ``/workspace``, ``/tmp`` and ``/dev/shm``; no network at all.
    """

    name = "runsc"

    @classmethod
    def is_available(cls) -> bool:
        exe = _runsc_binary()
        return exe is not None and os.access(exe, os.X_OK) and os.geteuid() == 0

    def _bundle(self, sd: StateDir, limits: SandboxLimits) -> Path:
        py = host_python()
        bundle = sd.path / "bundle"
        rootfs = bundle / "rootfs"
        rootfs.mkdir(parents=True)
        mounts: list[dict[str, Any]] = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
            {
                "destination": "/sys",
                "type": "sysfs",
                "source": "sysfs",
                "options": ["nosuid", "noexec", "nodev", "ro"],
            },
        ]

        def bind(src: str, dest: str | None = None, *, is_file: bool = False) -> None:
            dest = dest or src
            mp = rootfs / dest.lstrip("/")
            if is_file:
                mp.parent.mkdir(parents=True, exist_ok=True)
                mp.touch()
            else:
                mp.mkdir(parents=True, exist_ok=True)
            mounts.append(
                {
                    "destination": dest,
                    "type": "bind",
                    "source": src,
                    "options": ["rbind", "ro", "nosuid", "nodev"],
                }
            )

        def tmpfs(dest: str, size_mb: int, mode: str) -> None:
            (rootfs / dest.lstrip("/")).mkdir(parents=True, exist_ok=True)
            mounts.append({"destination": dest, "type": "tmpfs", "source": "tmpfs",
                           "options": ["nosuid", "nodev", f"size={size_mb}m", f"mode={mode}"]})  # fmt: skip

        bind("/usr")
        for path, target in _root_links():
            if target is None:
                bind(path)
            else:
                (rootfs / path.lstrip("/")).symlink_to(target)
        if not py.prefix.startswith("/usr/"):
            bind(py.prefix)
        hidden = self._hidden_site()
        if hidden is not None:
            empty = sd.path / "empty"
            empty.mkdir(exist_ok=True)
            mounts.append(
                {"destination": hidden, "type": "bind", "source": str(empty), "options": ["rbind", "ro"]}
            )
        _write_etc(rootfs / "etc", RUNSC_UID)
        for name in HOST_ETC:
            src = Path("/etc") / name
            if src.exists():
                bind(str(src), is_file=not src.is_dir())
        bind(str(AGENT_SOURCE.resolve()), AGENT_PATH, is_file=True)
        tmpfs(WORKSPACE, limits.workspace_mb, "755")
        tmpfs("/tmp", limits.tmp_mb, "1777")
        tmpfs("/dev/shm", limits.tmp_mb, "1777")
        (rootfs / "root").mkdir(exist_ok=True)

        agent_cfg = _agent_config(
            sd.id, limits, workspace=WORKSPACE, scratch=["/tmp", "/dev/shm"],
            env=_sandbox_env(py, WORKSPACE, "/tmp"), uid=RUNSC_UID, pidns=True,
        )  # fmt: skip
        caps = ["CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE"]
        spec = {
            "ociVersion": "1.0.0",
            "process": {
                "terminal": False,
                "user": {"uid": 0, "gid": 0},
                "args": [py.executable, "-I", "-S", "-B", AGENT_PATH, agent_cfg],
                "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
                "cwd": WORKSPACE,
                "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
                "noNewPrivileges": True,
            },
            "root": {"path": "rootfs", "readonly": True},
            "hostname": "sandbox",
            "mounts": mounts,
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
                "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
                "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"],
            },
        }
        (bundle / "config.json").write_text(json.dumps(spec))
        return bundle

    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        exe = _runsc_binary()
        if exe is None:
            raise SandboxError("runsc (gVisor) is not installed")
        bundle = await asyncio.to_thread(self._bundle, sd, limits)
        sd.meta.update(runsc=exe, runsc_flags=_runsc_flags(sd))
        await asyncio.to_thread(sd.save)
        # `run --detach` returns once the container runs; the agent keeps our pipes as its stdin/stdout.
        launched = await _spawn(
            [exe, *_runsc_flags(sd), "run", "--detach", f"--bundle={bundle}", sd.id], sd, WORKSPACE
        )
        try:
            rc = await asyncio.wait_for(launched.proc.wait(), CREATE_TIMEOUT_S)
        except TimeoutError:
            raise SandboxError(f"runsc run timed out: {self._startup_log(sd)}") from None
        if rc != 0:
            raise SandboxError(f"runsc run failed (exit {rc}): {self._startup_log(sd)}")
        return launched

    def kill_now(self, sd: StateDir) -> None:
        # The sandbox's host processes (runsc-sandbox, gofer) all name its state dir on their command line.
        _kill_matching(str(sd.path))

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        exe, flags = sd.meta.get("runsc"), sd.meta.get("runsc_flags")
        if exe and flags and (sd.path / "runsc").exists():
            subprocess.run(
                [exe, *flags, "delete", "--force", sd.id],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False,
            )  # fmt: skip
        # Belt and braces: any process still pointing into this sandbox's state dir is one of its own.
        _kill_matching(str(sd.path))


def _kill_matching(marker: str) -> None:
    """SIGKILL every process whose command line contains ``marker``."""
    for pid_s in os.listdir("/proc"):
        if pid_s.isdigit() and int(pid_s) != os.getpid() and marker in _state.proc_cmdline(int(pid_s)):
            kill_if(int(pid_s), proc_start_time(int(pid_s)), marker)


# --- bubblewrap ------------------------------------------------------------------------------------
def _bwrap_binary() -> str | None:
    return (
        os.environ.get("VF_BWRAP")
        or shutil.which("bwrap")
        or ("/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap") else None)
    )


class BwrapBackend(SandboxBackend):
    """bubblewrap: one long-lived ``bwrap`` per sandbox with fresh pid, net, ipc, uts (and cgroup)
    namespaces, the host's ``/usr``/``/lib*`` and Python read-only, in-memory ``/workspace`` and ``/tmp``,
    killed with its parent. Commands run under a uid of their own (one per sandbox, no capabilities).

    Needs root (to give commands their own uid; a user namespace would map them all to the caller).
    """

    name = "bwrap"

    @classmethod
    def is_available(cls) -> bool:
        exe = _bwrap_binary()
        return exe is not None and os.access(exe, os.X_OK) and os.geteuid() == 0

    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        exe = _bwrap_binary()
        if exe is None:
            raise SandboxError("bwrap (bubblewrap) is not installed")
        py = host_python()
        uid = BWRAP_UID_BASE + secrets.randbelow(BWRAP_UID_SPAN)
        etc = sd.path / "etc"
        await asyncio.to_thread(_write_etc, etc, uid)
        mb = 1024 * 1024
        argv = [
            exe,
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--as-pid-1", "--new-session", "--hostname", "sandbox",
            "--cap-drop", "ALL",
        ]  # fmt: skip
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE"):
            argv += ["--cap-add", cap]
        argv += ["--ro-bind", "/usr", "/usr"]
        for path, target in _root_links():
            argv += ["--symlink", target, path] if target is not None else ["--ro-bind", path, path]
        if not py.prefix.startswith("/usr/"):
            # bwrap would copy the host's modes onto the parents it creates (/root is 0700): make them
            # traversable for the sandbox user first.
            parents = Path(py.prefix).parents
            for parent in reversed([str(p) for p in parents if str(p) != "/"]):
                argv += ["--perms", "0755", "--dir", parent]
            argv += ["--ro-bind", py.prefix, py.prefix]
        hidden = self._hidden_site()
        if hidden is not None:
            (sd.path / "empty").mkdir(exist_ok=True)
            argv += ["--ro-bind", str(sd.path / "empty"), hidden]
        argv += ["--ro-bind", str(etc), "/etc"]
        for name in HOST_ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        argv += [
            "--ro-bind", str(AGENT_SOURCE.resolve()), AGENT_PATH,
            "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
            "--dev", "/dev",
            "--size", str(limits.tmp_mb * mb), "--tmpfs", "/tmp",
            "--size", str(limits.tmp_mb * mb), "--tmpfs", "/dev/shm",
            "--size", str(limits.workspace_mb * mb), "--tmpfs", WORKSPACE,
            "--remount-ro", "/",
            "--chdir", WORKSPACE,
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "VF_SANDBOX_ID", sd.id,
        ]  # fmt: skip
        agent_cfg = _agent_config(
            sd.id, limits, workspace=WORKSPACE, scratch=["/tmp", "/dev/shm"],
            env=_sandbox_env(py, WORKSPACE, "/tmp"), uid=uid, pidns=True,
        )  # fmt: skip
        argv += ["--", py.executable, "-I", "-S", "-B", AGENT_PATH, agent_cfg]
        sd.meta["uid"] = uid
        launched = await _spawn(argv, sd, WORKSPACE)
        self._record_pid(sd, "host_pid", launched.proc.pid)
        return launched

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        # The agent is the init of the sandbox's pid namespace: when it dies the kernel kills everything
        # else in it. bwrap and the agent both carry the sandbox id on their command line. (bwrap's
        # --die-with-parent is not enough on its own: the agent's credential changes reset the
        # parent-death signal; the agent also exits by itself when our end of its pipe closes.)
        kill_if(sd.meta.get("host_pid"), sd.meta.get("host_pid_start"), sd.id)
        _kill_matching(sd.id)
        uid = sd.meta.get("uid")
        if isinstance(uid, int) and uid >= BWRAP_UID_BASE:
            _kill_uid(uid)


def _kill_uid(uid: int) -> None:
    """SIGKILL every host process running as ``uid`` (a bwrap sandbox's private uid) until none is left."""
    for _ in range(50):
        pids = _state.processes_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


# --- local -----------------------------------------------------------------------------------------
def _user_task_count(uid: int) -> int:
    n = 0
    for pid in _state.processes_of_uid(uid):
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
        env = _sandbox_env(py, str(work), str(tmp))
        agent_cfg = _agent_config(
            sd.id, limits, workspace=str(work), scratch=[str(tmp)],
            env=env, uid=None, pidns=False, nproc_extra=extra,
        )  # fmt: skip
        launched = await _spawn(
            [py.executable, "-I", "-S", "-B", str(AGENT_SOURCE.resolve()), agent_cfg],
            sd,
            str(work),
            cwd=str(work),
            env={**env, "VF_SANDBOX_ID": sd.id},
        )
        self._record_pid(sd, "host_pid", launched.proc.pid)
        return launched

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        # The agent kills its process tree when its pipe closes; this is for an agent that was SIGKILLed
        # itself: its orphans still carry VF_SANDBOX_ID=<id> in their environment.
        kill_if(sd.meta.get("host_pid"), sd.meta.get("host_pid_start"), sd.id)
        for _ in range(20):
            pids = [p for p in _state.processes_with_env(f"VF_SANDBOX_ID={sd.id}") if p != os.getpid()]
            if not pids:
                return
            for pid in pids:
                kill_if(pid, proc_start_time(pid))
            time.sleep(0.01)


# --- selection -------------------------------------------------------------------------------------
BACKENDS: dict[str, type[SandboxBackend]] = {
    "runsc": RunscBackend,
    "bwrap": BwrapBackend,
    "local": LocalBackend,
}
#: Automatic choice, best first. ``local`` is deliberately absent.
PREFERENCE = ("runsc", "bwrap")
for _name, _cls in BACKENDS.items():
    _state.TEARDOWN[_name] = _cls.teardown


def available_backends() -> list[str]:
    """Names of the backends this machine can run, best first (``local`` last, never chosen by default)."""
    return [n for n in (*PREFERENCE, "local") if BACKENDS[n].is_available()]


def get_backend(name: str | None = None) -> SandboxBackend:
    """The backend called ``name``, else ``$VF_SANDBOX_BACKEND``, else the best secure one available.

    Raises :class:`SandboxError` if the requested backend cannot run here, or if no secure backend exists
    (``local`` must be asked for by name).
    """
    name = name or os.environ.get("VF_SANDBOX_BACKEND") or None
    if name is not None:
        cls = BACKENDS.get(name)
        if cls is None:
            raise SandboxError(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
        if not cls.is_available():
            raise SandboxError(f"sandbox backend {name!r} is not available on this machine")
        return cls()
    for candidate in PREFERENCE:
        if BACKENDS[candidate].is_available():
            return BACKENDS[candidate]()
    raise SandboxError(
        "no secure sandbox backend is available: install gVisor (runsc) or bubblewrap (bwrap) and run as "
        "root, or ask for the unsafe 'local' backend by name"
    )


def reap_orphans() -> list[str]:
    """Tear down sandboxes (containers, processes, state dirs) whose owning process is gone."""
    return _state.reap_orphans()
