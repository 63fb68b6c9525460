"""The gVisor backend: each sandbox is a persistent ``runsc`` container with its own user-space kernel."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from verifiers.errors import SandboxError
from verifiers.sandbox import _cgroup as cgroup, _layout as layout
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._host import find_tool, host_python, root_can_run
from verifiers.sandbox._launch import AGENT_SOURCE, CREATE_TIMEOUT_S, Launched, spawn_agent
from verifiers.sandbox._procs import kill_matching
from verifiers.sandbox._state import StateDir
from verifiers.sandbox._types import SandboxLimits

RUNSC_UID = 1000
#: What gVisor's own kernel (the sentry) holds on top of the sandbox's processes and files: its page
#: cache and the copies its forks keep (a 32-process fork bomb of Python holds ~260 MB of it).
RUNSC_MEMORY_OVERHEAD_MB = 256


def _runsc_flags(sd: StateDir) -> list[str]:
    # No --ignore-cgroups: the OCI spec's linux.resources give each sandbox a host cgroup (see _bundle).
    # --file-access-mounts=exclusive: the host dirs we bind are read-only
    # system files, so gVisor may cache them instead of revalidating every access (faster starts).
    flags = [
        f"--root={sd.path / 'runsc'}",
        "--network=none",
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
        return root_can_run(find_tool("runsc"))

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
        for path, target in layout.root_links():
            if target is None:
                bind(path)
            else:
                (rootfs / path.lstrip("/")).symlink_to(target)
        if not py.prefix.startswith("/usr/"):
            bind(py.prefix)
        mask = self._site_mask(sd)
        if mask is not None:
            hidden, empty = mask
            mounts.append(
                {"destination": hidden, "type": "bind", "source": str(empty), "options": ["rbind", "ro"]}
            )
        layout.write_etc(rootfs / "etc", RUNSC_UID)
        for name in layout.HOST_ETC:
            src = Path("/etc") / name
            if src.exists():
                bind(str(src), is_file=not src.is_dir())
        bind(str(AGENT_SOURCE.resolve()), layout.AGENT_PATH, is_file=True)
        tmpfs(layout.WORKSPACE, limits.workspace_mb, "755")
        for scratch in layout.SCRATCH:
            tmpfs(scratch, limits.tmp_mb, "1777")
        (rootfs / "root").mkdir(exist_ok=True)

        # CAP_SYS_ADMIN of gVisor's kernel (not the host's): the agent gives every lease a fresh IPC
        # namespace (reset). Commands run as RUNSC_UID with no capabilities and no_new_privs.
        caps = [*layout.AGENT_CAPS, "CAP_SYS_ADMIN"]
        spec = {
            "ociVersion": "1.0.0",
            "process": {
                "terminal": False,
                "user": {"uid": 0, "gid": 0},
                "args": layout.contained_agent_argv(
                    sd.id, limits, py, RUNSC_UID, ipc="unshare", watch_memory=True
                ),
                "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
                "cwd": layout.WORKSPACE,
                "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
                "noNewPrivileges": True,
            },
            "root": {"path": "rootfs", "readonly": True},
            "hostname": "sandbox",
            "mounts": mounts,
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
                # A host cgroup of its own (runsc creates and removes it) caps what the sandbox, gVisor's
                # kernel included, can pin on the host. gVisor of this date has no memory limit of its
                # own: the agent (watch_memory) measures the sandbox while a command runs and kills the
                # command past memory_mb; this cgroup is the backstop (its overhead covers the polling
                # lag), and going past it gets the sandbox OOM-killed as a whole (SandboxError).
                # Processes are counted inside, by RLIMIT_NPROC of the sandbox's one user in its own
                # kernel; no host pids limit: the sentry's threads and ptrace stubs would hit it first
                # and kill the whole sandbox.
                "cgroupsPath": f"/{cgroup.PARENT}/{sd.id}",
                "resources": {
                    "memory": {"limit": (limits.memory_mb + RUNSC_MEMORY_OVERHEAD_MB) * 1024 * 1024},
                },
                "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
                "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"],
            },
        }
        (bundle / "config.json").write_text(json.dumps(spec))
        return bundle

    async def _launch(self, sd: StateDir, limits: SandboxLimits) -> Launched:
        exe = find_tool("runsc")
        if exe is None:
            raise SandboxError("runsc (gVisor) is not installed")
        bundle = await asyncio.to_thread(self._bundle, sd, limits)
        sd.meta.update(runsc=exe, runsc_flags=_runsc_flags(sd))
        await asyncio.to_thread(sd.save)
        # `run --detach` returns once the container runs; the agent keeps our pipes as its stdin/stdout.
        launched = await spawn_agent(
            [exe, *_runsc_flags(sd), "run", "--detach", f"--bundle={bundle}", sd.id], sd, layout.WORKSPACE
        )
        try:
            rc = await asyncio.wait_for(launched.proc.wait(), CREATE_TIMEOUT_S)
        except TimeoutError:
            raise SandboxError(f"runsc run timed out: {self._startup_log(sd)}") from None
        if rc != 0:
            raise SandboxError(f"runsc run failed (exit {rc}): {self._startup_log(sd)}")
        launched.limits_per_sandbox = True
        return launched

    def kill_now(self, sd: StateDir) -> None:
        # The sandbox's host processes (runsc-sandbox, gofer) all name its state dir on their command line.
        kill_matching(str(sd.path))

    @classmethod
    def teardown(cls, sd: StateDir) -> None:
        exe, flags = sd.meta.get("runsc"), sd.meta.get("runsc_flags")
        if exe and flags and (sd.path / "runsc").exists():
            subprocess.run(
                [exe, *flags, "delete", "--force", sd.id],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False,
            )  # fmt: skip
        # Belt and braces: any process still pointing into this sandbox's state dir is one of its own, and
        # so is any task left in its cgroups (which runsc delete normally removes).
        kill_matching(str(sd.path))
        root = cgroup.cgroup_root()
        cgroup.remove(
            cgroup.SandboxCgroup(
                str(root / "memory" / cgroup.PARENT / sd.id), str(root / "pids" / cgroup.PARENT / sd.id)
            )
        )
