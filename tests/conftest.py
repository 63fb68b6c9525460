"""Shared fixtures: the scripted OpenAI-compatible server, and the real SmolLM2 tier."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests import scheduling
from tests.scripted_server import ScriptedServer
from tests.tiers import component_missing
from verifiers.clients.local_model import LocalModelError, check_server_installed, resolve_model_file

# Hubs started by tests (in-process or `vf-hub serve` subprocesses) do not smoke-check every publish in a
# sandbox; tests of the checks turn them on in their HubSettings (tests/hub/test_smoke_check.py).
os.environ.setdefault("VF_HUB_SMOKE_CHECKS", "false")


def pytest_configure(config: pytest.Config) -> None:
    # A suite started as a background job (`bash scripts/test.sh &`, nohup, some CI runners) inherits SIGINT
    # ignored, and so would every process the tests start: the tests that press Ctrl-C on a run would see
    # it ignored. Python's own handler instead, as in a foreground run (exec resets it in the children).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scheduling.schedule(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadscope`` (scripts/test.sh) with this project's units of work (tests/scheduling.py)."""
    return scheduling.make_scheduler(config, log) if config.getvalue("dist") == "loadscope" else None


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """A fresh scripted server on a free loopback port (replies 'ok' unless scripted)."""
    with ScriptedServer() as server:
        yield server


def smollm_missing() -> str | None:
    """Why the real SmolLM2 server cannot run here (the library's own message), or None when it can."""
    try:
        check_server_installed()
        resolve_model_file("local/smollm2")
    except LocalModelError as exc:
        return str(exc)
    return None


@pytest.fixture
def smollm() -> None:
    """Skip when SmolLM2 cannot run here, or fail when VF_REQUIRE_SMOLLM=1 (CI) says it must."""
    reason = smollm_missing()
    if reason is not None:
        component_missing("VF_REQUIRE_SMOLLM", reason)
