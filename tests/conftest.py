"""Shared fixtures: the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.scripted_server import ScriptedServer

# Hubs started by tests (in-process or `vf-hub serve` subprocesses) do not smoke-check every publish in a
# sandbox; tests of the checks turn them on in their HubSettings (tests/hub/test_smoke_check.py).
os.environ.setdefault("VF_HUB_SMOKE_CHECKS", "false")


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """A fresh scripted server on a free loopback port (replies 'ok' unless scripted)."""
    with ScriptedServer() as server:
        yield server
