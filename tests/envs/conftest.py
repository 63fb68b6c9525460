"""Fixtures of the environment tests: sandbox backends (see sandboxes.py)."""

from tests.envs.sandboxes import fast_backend, secure_backend

__all__ = ["fast_backend", "secure_backend"]
