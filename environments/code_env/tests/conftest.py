"""Fixtures shared with the SDK's tests (run from the repository root): sandbox backends and the scripted
OpenAI-compatible server."""

from tests.conftest import scripted
from tests.envs.sandboxes import fast_backend, secure_backend

__all__ = ["fast_backend", "scripted", "secure_backend"]
