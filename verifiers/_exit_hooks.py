"""Interpreter-exit hooks, registered on first use: importing ``verifiers`` registers nothing, and a
component that is used many times (every pool, every sandbox) still registers its hook once."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable

_registered: set[str] = set()
_lock = threading.Lock()


def register_exit_hook(key: str, fn: Callable[[], None]) -> bool:
    """Run ``fn`` at interpreter exit, unless a hook was already registered under ``key`` (then this is
    a no-op). Returns whether this call registered it. Call it where the thing to clean up is created."""
    with _lock:
        if key in _registered:
            return False
        _registered.add(key)
        atexit.register(fn)
        return True
