"""Fixtures of the swe-env tests (run from the repository root): sandbox backends, the scripted
OpenAI-compatible server, the real SmolLM2 tier, and a sandbox holding the tiny task's files. Helpers
live in ``swe_testing.py`` (importable from the tests: this directory is put on ``sys.path``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import scripted, smollm
from tests.envs.sandboxes import fast_backend, secure_backend
from verifiers.sandbox import Sandbox, SandboxLimits, get_backend

sys.path.insert(0, str(Path(__file__).resolve().parent))

from swe_testing import TINY  # (needs the path above)

__all__ = ["fast_backend", "scripted", "secure_backend", "smollm"]


@pytest.fixture
async def repo_sandbox(secure_backend: str) -> AsyncIterator[Sandbox]:
    """A sandbox with the tiny task's files under ``repo/`` (no git, no runner: for the tool tests)."""
    sb = await get_backend(secure_backend).create(SandboxLimits(timeout_s=20))
    try:
        for path, text in TINY.repo_files.items():
            await sb.write_file(f"repo/{path}", text)
        yield sb
    finally:
        await sb.destroy()
