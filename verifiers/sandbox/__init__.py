"""Local secure sandboxes: run untrusted commands in gVisor (``runsc``) or bubblewrap (``bwrap``).

```python
from verifiers.sandbox import SandboxLimits, get_backend, SandboxPool

backend = get_backend()                      # runsc > bwrap; $VF_SANDBOX_BACKEND or a name overrides
async with await backend.create(SandboxLimits(timeout_s=5)) as sb:
    await sb.write_file("a.py", "print(2)")
    r = await sb.exec(["python3", "a.py"])   # r.stdout == "2\\n", r.backend == backend.name
async with SandboxPool(backend, size=4) as pool:
    async with pool.lease() as sb: ...
```

See ``docs/sandbox.md`` for the isolation each backend gives and its known gaps. This package is a leaf:
it imports nothing from ``verifiers`` but ``errors`` and ``_exit_hooks`` (and is imported by the sandbox
environments only).
"""

from verifiers.errors import SandboxError
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._bwrap import BwrapBackend
from verifiers.sandbox._local import LocalBackend
from verifiers.sandbox._pool import LazySandboxPool, SandboxPool
from verifiers.sandbox._registry import available_backends, get_backend, reap_orphans
from verifiers.sandbox._runsc import RunscBackend
from verifiers.sandbox._sandbox import Sandbox
from verifiers.sandbox._types import ExecResult, SandboxLimits

__all__ = [
    "BwrapBackend",
    "ExecResult",
    "LazySandboxPool",
    "LocalBackend",
    "RunscBackend",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxLimits",
    "SandboxPool",
    "available_backends",
    "get_backend",
    "reap_orphans",
]
