"""Backend selection for the sandbox suite.

Each secure backend (runsc, bwrap) that this machine cannot run is skipped with the reason, unless
``VF_REQUIRE_SANDBOX=1`` (set by CI, which installs both), in which case its tests fail loudly instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.tiers import component_missing
from verifiers.sandbox import BwrapBackend, LocalBackend, RunscBackend, Sandbox, SandboxBackend, SandboxLimits

BACKEND_CLASSES: dict[str, type[SandboxBackend]] = {
    "runsc": RunscBackend,
    "bwrap": BwrapBackend,
    "local": LocalBackend,
}
SECURE = ("runsc", "bwrap")
ALL = ("runsc", "bwrap", "local")

#: Limits small enough that the abuse tests finish fast.
TEST_LIMITS = SandboxLimits(
    timeout_s=10,
    memory_mb=256,
    cpu_s=5,
    max_procs=32,
    max_threads=128,
    max_file_mb=8,
    max_output_bytes=100_000,
    workspace_mb=64,
)


def require_backend(name: str) -> SandboxBackend:
    cls = BACKEND_CLASSES[name]
    if cls.is_available():
        return cls()
    why = {
        "runsc": "gVisor's runsc is not installed (apt-get install runsc) or we are not root",
        "bwrap": "bubblewrap is not installed (apt-get install bubblewrap) or we are not root",
        "local": "the local backend needs Linux",
    }[name]
    reason = f"sandbox backend {name!r} is unavailable: {why}"
    if name in SECURE:
        component_missing("VF_REQUIRE_SANDBOX", reason)
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Sandbox records of this test session live in a directory of their own (the reaper tests scan it)."""
    root = tmp_path_factory.mktemp("vf-sandboxes")
    root.chmod(0o700)
    old = os.environ.get("VF_SANDBOX_DIR")
    os.environ["VF_SANDBOX_DIR"] = str(root)
    yield root
    if old is None:
        os.environ.pop("VF_SANDBOX_DIR", None)
    else:
        os.environ["VF_SANDBOX_DIR"] = old


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    return require_backend(request.param)


@pytest.fixture(params=SECURE)
def secure_backend(request: pytest.FixtureRequest) -> SandboxBackend:
    return require_backend(request.param)


@pytest.fixture
async def sandbox(backend: SandboxBackend) -> AsyncIterator[Sandbox]:
    sb = await backend.create(TEST_LIMITS)
    try:
        yield sb
    finally:
        await sb.destroy()
