"""ToolEnv and StatefulToolEnv end to end against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.errors import SandboxError
from verifiers.types import RolloutResult

ROWS = [{"question": "use the tools", "answer": "42"}]


def final_is_answer(completion, answer) -> float:
    return float(completion[-1]["content"].strip() == answer)


class Vec(BaseModel):
    x: int
    y: int


#: How many slow_double calls are running now, and the most that ever ran at once.
SLOW_CALLS = {"running": 0, "peak": 0}


async def slow_double(n: int) -> int:
    """Double a number, slowly.

    Args:
        n: The number.
    """
    SLOW_CALLS["running"] += 1
    SLOW_CALLS["peak"] = max(SLOW_CALLS["peak"], SLOW_CALLS["running"])
    try:
        await asyncio.sleep(0.3)
    finally:
        SLOW_CALLS["running"] -= 1
    return 2 * n


def norm1(v: Vec) -> dict[str, Any]:
    """Manhattan norm of a vector."""
    return {"norm": abs(v.x) + abs(v.y), "of": [v.x, v.y]}


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def shout(text: str) -> str:
    """Upper-case some text."""
    return text.upper()


def make_env(**kwargs: Any) -> vf.ToolEnv:
    kwargs.setdefault("tools", [slow_double, norm1, divide, shout])
    return vf.ToolEnv(dataset=ROWS, rubric=vf.Rubric([final_is_answer]), **kwargs)


async def run_one(env: vf.Environment, url: str) -> vf.State:
    (state,) = await env.a_generate(env.select_rows(), url, "m")
    return state


async def test_parallel_calls_run_concurrently_and_return_in_call_order(scripted: ScriptedServer) -> None:
    scripted.enqueue(
        Reply(
            content=None,
            tool_calls=[
                tool_call("slow_double", {"n": 4}, call_id="a"),
                tool_call("norm1", {"v": {"x": -3, "y": 4}}, call_id="b"),
                tool_call("slow_double", {"n": 21}, call_id="c"),
            ],
        ),
        Reply(content="42"),
    )
    env = make_env()
    SLOW_CALLS["peak"] = 0
    state = await run_one(env, scripted.url)
    # What was observed, not wall time (a loaded machine can stretch that either way).
    assert SLOW_CALLS["peak"] == 2, "the two slow calls did not overlap"
    assert state["error"] is None and state["reward"] == 1.0
    assert state["stop_condition"] == "no_tool_calls" and len(state["turns"]) == 2
    tool_msgs = [m for m in state["completion"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_msgs] == [
        ("a", "8"),
        ("b", '{"norm": 7, "of": [-3, 4]}'),
        ("c", "42"),
    ]
    # the second request carried the tool results, and every request offered the schemas
    second = scripted.requests[1]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "tool", "tool"]
    assert [t["function"]["name"] for t in second["tools"]] == ["slow_double", "norm1", "divide", "shout"]
    assert second["tools"][0]["function"]["parameters"]["properties"]["n"]["description"] == "The number."
    m = state["metrics"]
    assert m["tool_calls"] == 3 and m["tool_errors"] == 0
    assert m["tool_calls/slow_double"] == 2 and m["tool_calls/norm1"] == 1 and m["tool_calls/divide"] == 0


async def test_sync_tools_run_in_threads_concurrently(scripted: ScriptedServer) -> None:
    # Each call blocks its thread until all three are inside: run one after another, they would fail.
    all_in = threading.Barrier(3, timeout=120)

    def blocking(n: int) -> int:
        """Block until the other calls are running too."""
        all_in.wait()
        return n

    scripted.enqueue(
        Reply(content=None, tool_calls=[tool_call("blocking", {"n": i}, call_id=str(i)) for i in range(3)]),
        Reply(content="done"),
    )
    state = await run_one(make_env(tools=[blocking]), scripted.url)
    assert state["metrics"]["tool_errors"] == 0, state["completion"]
    assert [m["content"] for m in state["completion"] if m["role"] == "tool"] == ["0", "1", "2"]


async def test_model_mistakes_and_tool_exceptions_become_readable_tool_messages(
    scripted: ScriptedServer,
) -> None:
    scripted.enqueue(
        Reply(
            content=None,
            tool_calls=[
                tool_call("divide", {"a": 1, "b": 0}, call_id="zero"),
                tool_call("divide", '{"a": 1, "b":', call_id="badjson"),
                tool_call("divide", {"a": "one", "b": 2}, call_id="badtype"),
                tool_call("teleport", {"to": "mars"}, call_id="unknown"),
                tool_call("shout", {"text": "hi"}, call_id="fine"),
            ],
        ),
        Reply(content="42"),
    )
    state = await run_one(make_env(), scripted.url)
    assert state["error"] is None and state["reward"] == 1.0
    out = {m["tool_call_id"]: m["content"] for m in state["completion"] if m["role"] == "tool"}
    assert out["zero"] == "Error: tool 'divide' raised ZeroDivisionError: float division by zero"
    assert out["badjson"].startswith("Error: arguments for tool 'divide' are not valid JSON")
    assert out["badtype"].startswith("Error: invalid arguments for tool 'divide': a: Input should be")
    assert out["unknown"] == (
        "Error: there is no tool named 'teleport' (available: slow_double, norm1, divide, shout)"
    )
    assert out["fine"] == "HI"
    m = state["metrics"]
    assert m["tool_calls"] == 5 and m["tool_errors"] == 4 and m["tool_calls/divide"] == 3
    assert "tool_calls/teleport" not in m  # names the model invents do not become metrics


async def test_custom_error_formatter_and_output_cap(scripted: ScriptedServer) -> None:
    scripted.enqueue(
        Reply(
            content=None,
            tool_calls=[
                tool_call("divide", {"a": 1, "b": 0}, call_id="e"),
                tool_call("shout", {"text": "x" * 50}, call_id="long"),
            ],
        ),
        Reply(content="42"),
    )
    env = make_env(
        error_formatter=lambda name, exc: f"{name} failed ({type(exc).__name__})", max_tool_output_chars=10
    )
    state = await run_one(env, scripted.url)
    out = {m["tool_call_id"]: m["content"] for m in state["completion"] if m["role"] == "tool"}
    assert out["e"] == "divide fai\n[... truncated 23 characters]"
    assert out["long"] == "XXXXXXXXXX\n[... truncated 40 characters]"


async def test_fatal_error_ends_the_rollout_with_an_env_error(scripted: ScriptedServer) -> None:
    cancelled: list[str] = []

    async def slow(n: int) -> int:
        """Slow sibling that must be cancelled."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return n

    scripted.enqueue(
        Reply(
            content=None,
            tool_calls=[tool_call("slow", {"n": 1}), tool_call("divide", {"a": 1, "b": 0})],
        ),
        Reply(content="never asked"),
    )
    env = make_env(tools=[slow, divide], fatal_errors=(ZeroDivisionError,))
    state = await run_one(env, scripted.url)
    assert state["error"] == {
        "category": "env",
        "type": "ToolFatalError",
        "message": "tool 'divide' raised ZeroDivisionError: float division by zero",
    }
    assert state["reward"] is None and state["stop_condition"] == "error"
    assert cancelled == ["slow"] and len(scripted.requests) == 1
    RolloutResult.model_validate(env.result_record(state))


async def test_argument_errors_can_be_declared_fatal(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content=None, tool_calls=[tool_call("divide", "not json")]))
    state = await run_one(make_env(fatal_errors=(vf.ToolArgumentError,)), scripted.url)
    assert state["error"]["type"] == "ToolFatalError"
    assert "not valid JSON" in state["error"]["message"]


async def test_sdk_errors_from_tools_keep_their_category(scripted: ScriptedServer) -> None:
    def run(cmd: str) -> str:
        """Run in a sandbox that has died."""
        raise SandboxError("sandbox died")

    scripted.enqueue(Reply(content=None, tool_calls=[tool_call("run", {"cmd": "ls"})]))
    state = await run_one(make_env(tools=[run]), scripted.url)
    assert state["error"] == {"category": "infra", "type": "SandboxError", "message": "sandbox died"}


async def test_stops_at_max_turns_when_the_model_keeps_calling(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content=None, tool_calls=[tool_call("shout", {"text": "a"})])
    state = await run_one(make_env(max_turns=3), scripted.url)
    assert state["stop_condition"] == "max_turns" and len(state["turns"]) == 3
    # the last allowed turn's calls still run (a final answer there counts); no model call follows
    assert state["metrics"]["tool_calls"] == 3 and state["completion"][-1]["role"] == "tool"
    assert state["reward"] == 0.0


async def test_answer_without_tools_stops_immediately(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content="42"))
    state = await run_one(make_env(), scripted.url)
    assert state["stop_condition"] == "no_tool_calls" and len(state["turns"]) == 1
    assert state["metrics"]["tool_calls"] == 0 and state["metrics"]["tool_errors"] == 0


async def test_tool_metrics_survive_rubric_groups_and_results(scripted: ScriptedServer, tmp_path) -> None:
    def calls_made(state) -> float:
        return state["metrics"]["tool_calls"]

    rubric = vf.RubricGroup([vf.Rubric([final_is_answer]), vf.Rubric([calls_made], weights=[0.0])])
    env = vf.ToolEnv(dataset=ROWS, tools=[shout], rubric=rubric)
    scripted.enqueue(
        Reply(content=None, tool_calls=[tool_call("shout", {"text": "a"})]),
        Reply(content="42"),
    )
    run = await env.a_evaluate(scripted.url, "m", output_dir=tmp_path)
    (rec,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert rec["reward"] == 1.0
    assert rec["metrics"] == {
        "tool_calls": 1.0,
        "tool_errors": 0.0,
        "tool_calls/shout": 1.0,
        "final_is_answer": 1.0,
        "calls_made": 1.0,
    }
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["avg_metrics"]["tool_calls/shout"] == 1.0
    assert run is not None


def test_tool_env_needs_chat_and_unique_names() -> None:
    env = make_env()
    with pytest.raises(ValueError, match="already has a tool"):
        env.add_tool(shout)
    env.add_tool(shout, name="shout2")
    assert [t["function"]["name"] for t in env.tool_schemas][-1] == "shout2"
    assert vf.ToolEnv(dataset=ROWS).tools_for(vf.State()) is None

    class CompletionToolEnv(vf.ToolEnv):
        message_type = "completion"

    with pytest.raises(ValueError, match="needs chat messages"):
        CompletionToolEnv(dataset=ROWS, tools=[shout])


# --- StatefulToolEnv ---------------------------------------------------------------------------------
class Counter:
    """Per-rollout state that is not JSON-schema-able."""

    def __init__(self) -> None:
        self.total = 0


def add(amount: int, counter: Counter) -> int:
    """Add to the running total.

    Args:
        amount: How much to add.
        counter: Injected; the model never sees it.
    """
    counter.total += amount
    return counter.total


class CounterEnv(vf.StatefulToolEnv):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(dataset=ROWS, **kwargs)
        self.add_tool(add, hidden_args=["counter"])
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def setup_state(self, state: vf.State) -> None:
        await super().setup_state(state)
        state["counter"] = Counter()

    async def update_tool_args(self, tool_name, tool_args, messages, state):
        self.seen.append((tool_name, dict(tool_args)))
        return {**tool_args, "counter": state["counter"]}


async def test_hidden_args_are_absent_from_the_schema_and_injected(scripted: ScriptedServer) -> None:
    scripted.enqueue(
        Reply(content=None, tool_calls=[tool_call("add", {"amount": 2}, call_id="1")]),
        Reply(content=None, tool_calls=[tool_call("add", {"amount": 5}, call_id="2")]),
        Reply(
            content=None,
            tool_calls=[tool_call("add", {"amount": 1, "counter": {"total": 1000}}, call_id="3")],
        ),
        Reply(content="7"),
    )
    env = CounterEnv()
    state = await run_one(env, scripted.url)
    sent = scripted.requests[0]["tools"][0]["function"]
    assert sent["parameters"]["properties"] == {
        "amount": {"type": "integer", "description": "How much to add."}
    }
    assert "counter" not in json.dumps(sent)
    out = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert out[:2] == ["2", "7"]
    assert out[2].startswith("Error: invalid arguments for tool 'add': counter: Extra inputs")
    assert state["counter"].total == 7
    assert env.seen == [("add", {"amount": 2}), ("add", {"amount": 5})]


async def test_missing_hidden_argument_is_an_env_error(scripted: ScriptedServer) -> None:
    class Forgetful(CounterEnv):
        def update_tool_args(self, tool_name, tool_args, messages, state):
            return tool_args

    scripted.enqueue(Reply(content=None, tool_calls=[tool_call("add", {"amount": 2})]))
    state = await run_one(Forgetful(), scripted.url)
    assert state["error"]["category"] == "env" and state["error"]["type"] == "EnvError"
    assert "hidden argument(s) ['counter']" in state["error"]["message"]
