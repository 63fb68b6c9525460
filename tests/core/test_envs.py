"""Environments end to end against the scripted server: single/multi-turn, stop conditions, timeouts,
error categories, EnvGroup routing and load_environment."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer
from verifiers.errors import EnvArgumentError, EnvNotFoundError
from verifiers.types import RolloutResult


def exact(completion, answer) -> float:
    return float(completion[-1]["content"].strip() == answer)


def rows(n: int = 3) -> list[dict]:
    return [{"question": f"say {i}", "answer": str(i)} for i in range(n)]


async def test_single_turn_prompt_shape_and_result_schema(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content=body["messages"][-1]["content"].split()[-1])
    env = vf.SingleTurnEnv(
        dataset=rows(),
        system_prompt="be brief",
        few_shot=[{"role": "user", "content": "say 9"}, {"role": "assistant", "content": "9"}],
        rubric=vf.Rubric([exact]),
        sampling_args={"temperature": 0.0},
    )
    states = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert [s["reward"] for s in states] == [1.0, 1.0, 1.0]
    sent = scripted.requests[0]
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert sent["temperature"] == 0.0
    rec = env.result_record(states[0])
    RolloutResult.model_validate(rec)
    assert rec["stop_condition"] == "answered" and rec["turns"][0]["finish_reason"] == "stop"


async def test_prompt_rows_and_lazy_dataset_builder(scripted: ScriptedServer) -> None:
    built = []

    def builder() -> list[dict]:
        built.append(1)
        return [{"prompt": [{"role": "user", "content": "hi"}], "answer": "ok", "example_id": 41}]

    env = vf.SingleTurnEnv(eval_dataset=builder, rubric=vf.Rubric([exact]))
    assert built == []  # nothing built at construction
    (row,) = env.select_rows()
    assert row["example_id"] == 41 and row["prompt"] == [{"role": "user", "content": "hi"}]
    assert built == [1]


def test_selection_is_deterministic() -> None:
    env = vf.SingleTurnEnv(dataset=rows(50))
    a = [r["example_id"] for r in env.select_rows(10, seed=3, shuffle=True)]
    b = [r["example_id"] for r in env.select_rows(10, seed=3, shuffle=True)]
    c = [r["example_id"] for r in env.select_rows(10, seed=4, shuffle=True)]
    assert a == b and a != c and len(set(a)) == 10
    assert [r["example_id"] for r in env.select_rows(3)] == [0, 1, 2]


class Guess(vf.MultiTurnEnv):
    """The model guesses; the env says higher/lower; solved when the guess matches."""

    async def setup_state(self, state: vf.State) -> None:
        state["target"] = int(state["answer"])

    @vf.stop
    def solved(self, state: vf.State) -> bool:
        return bool(state["completion"]) and state["completion"][-1]["content"] == state["answer"]

    async def env_response(self, messages, state):
        guess = int(messages[-1]["content"])
        if guess == 13:
            state.stop("unlucky")
            return []
        return [{"role": "user", "content": "higher" if guess < state["target"] else "lower"}]


async def test_multi_turn_until_solved() -> None:
    guesses = iter(["1", "5", "7"])

    def handler(body: dict) -> Reply:
        return Reply(content=next(guesses))

    with ScriptedServer(handler=handler) as srv:
        env = Guess(dataset=[{"question": "guess", "answer": "7"}], rubric=vf.Rubric([exact]), max_turns=5)
        (state,) = await env.a_generate(env.select_rows(), srv.url, "m")
    assert state["stop_condition"] == "solved" and state["reward"] == 1.0
    assert len(state["turns"]) == 3
    assert [m["content"] for m in state["completion"]] == ["1", "higher", "5", "higher", "7"]
    assert [m["content"] for m in srv.requests[-1]["messages"]] == ["guess", "1", "higher", "5", "higher"]


async def test_max_turns_and_early_termination(scripted: ScriptedServer) -> None:
    env = Guess(dataset=[{"question": "guess", "answer": "100"}], max_turns=3)
    scripted.handler = lambda body: Reply(content="1")
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["stop_condition"] == "max_turns" and len(state["turns"]) == 3
    scripted.handler = lambda body: Reply(content="13")
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["stop_condition"] == "unlucky" and len(state["turns"]) == 1


async def test_truncation_stops_the_rollout(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content="1", finish_reason="length")
    env = Guess(dataset=[{"question": "guess", "answer": "100"}], max_turns=5)
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["is_truncated"] and state["stop_condition"] == "truncated"


def test_stop_condition_order_priority_and_inheritance() -> None:
    class A(vf.MultiTurnEnv):
        @vf.stop
        def first(self, state):
            return False

        @vf.stop(priority=5)
        def urgent(self, state):
            return False

        async def env_response(self, messages, state):
            return []

    class B(A):
        @vf.stop
        def later(self, state):
            return False

        def first(self, state):  # overridden without the decorator: no longer a condition
            return True

    assert A._stop_names == ("urgent", "first")
    assert B._stop_names == ("urgent", "later")


async def test_rollout_timeout_is_an_infra_error(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content="0", delay=1.0)
    env = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric([exact]), timeout=0.2)
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["error"]["category"] == "infra" and state["error"]["type"] == "RolloutTimeoutError"
    assert state["stop_condition"] == "timeout" and state["reward"] is None


async def test_error_categories_are_recorded(scripted: ScriptedServer) -> None:
    class Buggy(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            raise KeyError("bug in env")

    def broken(completion) -> float:
        raise ValueError("bad reward")

    fast = vf.Client(scripted.url, max_retries=1, backoff_base=0.0)
    cases = [
        (Reply(content=None), vf.SingleTurnEnv(dataset=rows(1)), "model"),
        (Reply(status=500), vf.SingleTurnEnv(dataset=rows(1)), "infra"),
        (Reply(content="x"), Buggy(dataset=rows(1)), "env"),
        (Reply(content="x"), vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric([broken])), "scoring"),
    ]
    for reply, env, category in cases:
        scripted.handler = lambda body, reply=reply: reply
        (state,) = await env.a_generate(env.select_rows(), fast, "m")
        assert state["error"] is not None, category
        assert state["error"]["category"] == category, (category, state["error"])
        assert state["reward"] is None
    await fast.aclose()


async def test_cleanup_runs_on_error_and_cancel(scripted: ScriptedServer) -> None:
    cleaned: list[int] = []

    class Tracked(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            return [{"role": "user", "content": "again"}]

        async def cleanup_state(self, state):
            cleaned.append(state["rollout_index"])

    env = Tracked(dataset=rows(1), max_turns=100)
    scripted.handler = lambda body: Reply(content="x", delay=0.05)
    client = vf.Client(scripted.url)
    task = asyncio.create_task(env.rollout(client, "m", env.select_rows()[0], rollout_index=7))
    await asyncio.to_thread(scripted.wait_for_requests, 1)  # mid-rollout: its first turn was sent
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == [7]
    await client.aclose()


async def test_env_group_routes_by_task(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content=body["messages"][-1]["content"].split()[-1])

    def always_half() -> float:
        return 0.5

    a = vf.SingleTurnEnv(dataset=rows(2), rubric=vf.Rubric([exact]), system_prompt="A")
    b = vf.SingleTurnEnv(dataset=rows(3), rubric=vf.Rubric([always_half]))
    group = vf.EnvGroup({"alpha": a, "beta": b})
    selected = group.select_rows()
    assert [r["task"] for r in selected] == ["alpha"] * 2 + ["beta"] * 3
    assert [r["example_id"] for r in selected] == [0, 1, 2, 3, 4]
    assert selected[2]["info"]["source_example_id"] == 0
    states = await group.a_generate(selected, scripted.url, "m")
    assert [s["reward"] for s in states] == [1.0, 1.0, 0.5, 0.5, 0.5]
    assert scripted.requests[0]["messages"][0] == {"role": "system", "content": "A"}
    bad = dict(selected[0], task="gamma")
    with pytest.raises(vf.envs.UnknownRouteError, match="gamma"):
        group.env_for(bad)


def test_sync_wrappers_inside_a_running_loop(scripted: ScriptedServer) -> None:
    env = vf.SingleTurnEnv(dataset=rows(2))

    async def inside() -> list:
        return env.generate(env.select_rows(), scripted.url, "m")  # called from a running loop

    states = asyncio.run(inside())
    assert len(states) == 2 and all(s["error"] is None for s in states)


@pytest.fixture
def env_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "tiny_env_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """
            import verifiers as vf

            def load_environment(num_rows: int = 2, greeting: str = "hi") -> vf.Environment:
                rows = [{"question": f"{greeting} {i}", "answer": str(i)} for i in range(num_rows)]
                return vf.SingleTurnEnv(dataset=rows)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    sys.modules.pop("tiny_env_pkg", None)


def test_load_environment_identity_and_kwargs(env_pkg: Path) -> None:
    env = vf.load_environment("tiny-env-pkg", num_rows=4)
    assert env.env_id == "tiny-env-pkg"
    assert len(env.select_rows()) == 4
    assert len(env.env_content_hash) == 64
    assert env.env_args == {"num_rows": 4}
    with pytest.raises(EnvArgumentError, match=r"num_row.*accepts: num_rows, greeting"):
        vf.load_environment("tiny-env-pkg", num_row=4)
    first = env.env_content_hash
    (env_pkg / "__init__.py").write_text((env_pkg / "__init__.py").read_text() + "\n# changed\n")
    assert vf.load_environment("tiny-env-pkg").env_content_hash != first


def test_load_environment_unknown_id_lists_what_exists() -> None:
    with pytest.raises(EnvNotFoundError, match="no environment 'no-such-env'"):
        vf.load_environment("no-such-env")


async def test_environment_runs_start_and_stop_the_rubric(scripted: ScriptedServer) -> None:
    events: list[str] = []

    class Tracked(vf.Rubric):
        async def setup(self) -> None:
            events.append(f"setup:{id(self) % 7}")

        async def teardown(self) -> None:
            events.append("teardown")

    member = Tracked([exact])
    env = vf.SingleTurnEnv(dataset=rows(2), rubric=vf.RubricGroup([member, Tracked()]))
    await env.a_generate(env.select_rows(), scripted.url, "m")
    assert [e.split(":")[0] for e in events] == ["setup", "setup", "teardown", "teardown"]
    events.clear()
    scripted.handler = lambda body: Reply(status=400)  # a failing run still tears down
    await env.a_evaluate(scripted.url, "m")
    assert events[-2:] == ["teardown", "teardown"]


async def test_a_timeout_error_from_env_code_is_not_the_rollout_budget(scripted: ScriptedServer) -> None:
    class SlowTool(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            raise TimeoutError("tool gave up")

    env = SlowTool(dataset=rows(1), timeout=30)
    (state,) = await env.a_generate(env.select_rows(), scripted.url, "m")
    assert state["stop_condition"] == "error"
    assert (state["error"]["category"], state["error"]["type"]) == ("env", "TimeoutError")
