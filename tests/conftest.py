"""Shared fixtures: the scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripted_server import ScriptedServer


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """A fresh scripted server on a free loopback port (replies 'ok' unless scripted)."""
    with ScriptedServer() as server:
        yield server
