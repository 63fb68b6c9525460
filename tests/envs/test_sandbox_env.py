"""SandboxEnv on the real sandbox backends, against the scripted server: the bash and python tools,
the recorded backend, and a sandbox that is always given back (answer, error, cancel, dead sandbox)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.sandbox import Sandbox, SandboxPool
from verifiers.types import RolloutResult

pytestmark = pytest.mark.sandbox

ROWS = [{"question": "inspect the sandbox", "answer": "done"}]


class Tracked(vf.SandboxEnv):
    """Remembers its pools, so tests can check that every lease came back."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("dataset", ROWS)
        kwargs.setdefault("pool_size", 1)
        super().__init__(**kwargs)
        self.pools: list[SandboxPool] = []

    async def sandbox_pool(self) -> SandboxPool:
        pool = await super().sandbox_pool()
        if pool not in self.pools:
            self.pools.append(pool)
        return pool

    def returned(self) -> int:
        """Leases handed back (reset for reuse, or replaced when dead)."""
        return sum(p.stats["recycled"] + p.stats["replaced"] for p in self.pools)


async def test_bash_and_python_tools_run_in_the_sandbox(
    scripted: ScriptedServer, secure_backend: str
) -> None:
    scripted.enqueue(
        Reply(
            content=None,
            tool_calls=[
                tool_call("bash", {"command": "echo out; echo err >&2; exit 3"}, call_id="b"),
                tool_call("python", {"code": "import os\nprint(sum(range(10)), os.getcwd())"}, call_id="p"),
            ],
        ),
        Reply(content=None, tool_calls=[tool_call("bash", {"command": "sleep 600"}, call_id="slow")]),
        Reply(content="done"),
    )
    # 10 s: a loaded machine's python3 in a sandbox still starts in time; `sleep 600` never finishes in it.
    env = Tracked(backend=secure_backend, command_timeout=10.0)
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["error"] is None, state["error"]
    out = {m["tool_call_id"]: m["content"] for m in state["completion"] if m["role"] == "tool"}
    assert out["b"] == "out\n\n[stderr]\nerr\n\n[exit code 3]"
    assert out["p"] == "45 /workspace"
    assert out["slow"] == "[timed out after 10s; the command was killed]"
    record = env.result_record(state)
    RolloutResult.model_validate(record)
    assert record["sandbox_backend"] == secure_backend
    assert record["metrics"]["tool_calls/bash"] == 2 and record["metrics"]["tool_calls/python"] == 1
    # the model never sees the sandbox argument
    for tool in scripted.requests[0]["tools"]:
        assert "sandbox" not in json.dumps(tool["function"]["parameters"])
        assert list(tool["function"]["parameters"]["properties"]) in (["command"], ["code"])
    assert env.returned() == 1


async def test_sandbox_is_given_back_after_an_error(scripted: ScriptedServer, fast_backend: str) -> None:
    class Boom(Exception):
        pass

    def explode(sandbox: Sandbox) -> str:
        """Fail fatally."""
        raise Boom("tool blew up")

    env = Tracked(backend=fast_backend, fatal_errors=(Boom,))
    env.add_tool(explode, hidden_args=["sandbox"])
    scripted.enqueue(Reply(content=None, tool_calls=[tool_call("explode", {})]))
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["error"]["type"] == "ToolFatalError"
    assert env.returned() == 1 and "sandbox" not in state


async def test_sandbox_is_given_back_when_the_rollout_is_cancelled(
    scripted: ScriptedServer, fast_backend: str
) -> None:
    scripted.enqueue(Reply(content=None, tool_calls=[tool_call("bash", {"command": "sleep 30"})]))
    env = Tracked(backend=fast_backend)
    await env.setup()
    client = vf.Client(scripted.url)
    try:
        task = asyncio.create_task(env.rollout(client, "m", env.select_rows()[0]))
        await asyncio.to_thread(scripted.wait_for_requests, 1)  # the rollout holds its sandbox now
        await asyncio.sleep(1.0)  # most likely running the `sleep` by now (the test holds either way)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await client.aclose()
        await env.teardown()
    assert env.returned() == 1


async def test_a_dead_sandbox_is_an_infra_error(scripted: ScriptedServer, fast_backend: str) -> None:
    async def crash(sandbox: Sandbox) -> str:
        """Take the sandbox down (what a crashed sandbox looks like to the next call)."""
        await sandbox.destroy()
        return "crashed"

    env = Tracked(backend=fast_backend)
    env.add_tool(crash, hidden_args=["sandbox"])
    scripted.enqueue(
        Reply(content=None, tool_calls=[tool_call("crash", {})]),
        Reply(content=None, tool_calls=[tool_call("bash", {"command": "echo hi"})]),
        Reply(content="done"),
    )
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["error"]["category"] == "infra" and state["error"]["type"] == "SandboxError"
    assert state["reward"] is None
    assert env.pools[0].stats["replaced"] == 1  # the dead one was replaced, not reused


async def test_rollouts_share_a_warm_pool_without_leaking(
    scripted: ScriptedServer, fast_backend: str
) -> None:
    scripted.handler = lambda body: (
        Reply(content="done")
        if body["messages"][-1]["role"] == "tool"
        else Reply(content=None, tool_calls=[tool_call("bash", {"command": "touch mark; ls"})])
    )
    env = Tracked(backend=fast_backend, dataset=ROWS * 6, pool_size=2)
    states = await env.a_generate(env.select_rows(), scripted.url, "m", max_concurrent=4)
    outputs = [m["content"] for s in states for m in s["completion"] if m["role"] == "tool"]
    assert outputs == ["mark"] * 6  # each rollout starts from an empty workspace
    assert env.returned() == 6 and len(env.pools) == 1
