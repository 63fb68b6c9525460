"""Which backends exist, which this machine can run, the automatic choice (runsc > bwrap; ``local`` only
by name), and the reaper that needs every backend's teardown."""

from __future__ import annotations

import os

from verifiers.errors import SandboxError
from verifiers.sandbox import _state
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._bwrap import BwrapBackend
from verifiers.sandbox._local import LocalBackend
from verifiers.sandbox._runsc import RunscBackend

BACKENDS: dict[str, type[SandboxBackend]] = {
    "runsc": RunscBackend,
    "bwrap": BwrapBackend,
    "local": LocalBackend,
}
#: Automatic choice, best first. ``local`` is deliberately absent.
PREFERENCE = ("runsc", "bwrap")


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
    return _state.reap_orphans({name: cls.teardown for name, cls in BACKENDS.items()})
