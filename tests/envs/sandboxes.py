"""Choosing sandbox backends in tests: every secure backend this machine has (runsc, bwrap).

A backend that is missing is skipped, unless ``VF_REQUIRE_SANDBOX=1`` and no secure backend exists at all:
then the test fails, so CI cannot pass without ever touching a real sandbox.
"""

from __future__ import annotations

import pytest

from tests.tiers import component_missing

SECURE_BACKENDS = ("runsc", "bwrap")


def require_backend(name: str) -> str:
    """``name`` if this machine can run it; otherwise skip (or fail, see the module docstring)."""
    from verifiers.sandbox import available_backends

    available = available_backends()
    if name in available:
        return name
    if not any(b in available for b in SECURE_BACKENDS):
        component_missing("VF_REQUIRE_SANDBOX", f"no secure sandbox backend is available (have: {available})")
    pytest.skip(f"sandbox backend {name!r} is not available here (have: {available})")


@pytest.fixture(params=SECURE_BACKENDS)
def secure_backend(request: pytest.FixtureRequest) -> str:
    """Each secure backend in turn (skipped where missing)."""
    return require_backend(request.param)


@pytest.fixture
def fast_backend() -> str:
    """One secure backend, the quickest to start (bwrap, else runsc), for lifecycle tests."""
    from verifiers.sandbox import available_backends

    available = available_backends()
    return require_backend(next((b for b in ("bwrap", "runsc") if b in available), "bwrap"))
