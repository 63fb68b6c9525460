"""Local secure sandboxes: run untrusted commands in gVisor (``runsc``) or bubblewrap (``bwrap``).

```python
from verifiers.sandbox import SandboxLimits, get_backend, SandboxPool

backend = get_backend()                      # runsc > bwrap; $VF_SANDBOX_BACKEND or a name overrides
async with await backend.create(SandboxLimits(timeout_s=5)) as sb:
    await sb.write_file("a.py", "print(2)")
    r = await sb.exec(["python3", "a.py"])   # r.stdout == "2\n", r.backend == backend.name
async with SandboxPool(backend, size=4) as pool:
    async with pool.lease() as sb: ...
```

See ``docs/sandbox.md`` for the isolation each backend gives and its known gaps. This package is a leaf:
it imports nothing from ``verifiers`` but ``errors`` and ``_exit_hooks`` (and is imported by the sandbox
environments only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "SandboxError": "verifiers.errors",
    "SandboxBackend": "verifiers.sandbox._base",
    "BwrapBackend": "verifiers.sandbox._bwrap",
    "LocalBackend": "verifiers.sandbox._local",
    "LazySandboxPool": "verifiers.sandbox._pool",
    "SandboxPool": "verifiers.sandbox._pool",
    "available_backends": "verifiers.sandbox._registry",
    "get_backend": "verifiers.sandbox._registry",
    "reap_orphans": "verifiers.sandbox._registry",
    "RunscBackend": "verifiers.sandbox._runsc",
    "Sandbox": "verifiers.sandbox._sandbox",
    "DirEntry": "verifiers.sandbox._types",
    "ExecResult": "verifiers.sandbox._types",
    "FileMatches": "verifiers.sandbox._types",
    "SandboxLimits": "verifiers.sandbox._types",
    "SearchResult": "verifiers.sandbox._types",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.errors import SandboxError as SandboxError
    from verifiers.sandbox._base import SandboxBackend as SandboxBackend
    from verifiers.sandbox._bwrap import BwrapBackend as BwrapBackend
    from verifiers.sandbox._local import LocalBackend as LocalBackend
    from verifiers.sandbox._pool import LazySandboxPool as LazySandboxPool, SandboxPool as SandboxPool
    from verifiers.sandbox._registry import (
        available_backends as available_backends,
        get_backend as get_backend,
        reap_orphans as reap_orphans,
    )
    from verifiers.sandbox._runsc import RunscBackend as RunscBackend
    from verifiers.sandbox._sandbox import Sandbox as Sandbox
    from verifiers.sandbox._types import (
        DirEntry as DirEntry,
        ExecResult as ExecResult,
        FileMatches as FileMatches,
        SandboxLimits as SandboxLimits,
        SearchResult as SearchResult,
    )
