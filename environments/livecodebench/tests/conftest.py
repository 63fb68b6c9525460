"""Fixtures of the livecodebench tests (run from the repository root): sandbox backends and the scripted
OpenAI-compatible server. Helpers live in ``lcb_testing.py`` (importable from the tests: this directory and
``fixtures/`` are put on ``sys.path``)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import scripted
from tests.envs.sandboxes import fast_backend, secure_backend

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "fixtures")]

__all__ = ["fast_backend", "scripted", "secure_backend"]
