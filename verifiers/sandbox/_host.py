"""The host programs sandboxes rely on: the real interpreter behind this one (shown read-only inside
sandboxes, it runs the agent and the commands' Python) and the confinement tools (``runsc``, ``bwrap``)."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

from verifiers.errors import SandboxError


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


def find_tool(name: str) -> str | None:
    """The host binary ``name`` (``runsc``, ``bwrap``): ``$VF_<NAME>``, else on ``PATH``, else ``/usr/bin``."""
    fallback = f"/usr/bin/{name}"
    return (
        os.environ.get(f"VF_{name.upper()}")
        or shutil.which(name)
        or (fallback if os.path.exists(fallback) else None)
    )


def root_can_run(exe: str | None) -> bool:
    """Whether ``exe`` exists and is executable, and we are root (the secure backends need both)."""
    return exe is not None and os.access(exe, os.X_OK) and os.geteuid() == 0
