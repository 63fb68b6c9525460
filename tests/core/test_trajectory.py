"""Token trajectories: the step and sample builders on their own, then multi-turn rollouts against the
scripted server in its vLLM-like ``tokenize`` mode (a toy chat template over byte-level ids): interleaved
vs branching, dropped vs kept reasoning (checked on the requests the server recorded), ``max_seq_len``
truncation with aligned masks, and the result schema (old rows without trajectories still load)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.scripted_server import TOY_END, TOY_ROLES, Reply, ScriptedServer, tool_call, toy_prompt_ids
from verifiers.clients.sampling import token_request_args
from verifiers.trajectory import extends, is_interleaved, token_samples, trajectory_step
from verifiers.types import Messages, ModelResponse, RolloutResult, State, TrajectoryStep

BOTH = token_request_args("both")


@pytest.fixture
def vllm() -> Iterator[ScriptedServer]:
    with ScriptedServer(tokenize=True) as server:
        yield server


def step(prompt: list[int], completion: list[int], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = ModelResponse(
        message={"role": "assistant", "content": "x"},
        finish_reason="stop",
        prompt_ids=prompt,
        completion_ids=completion,
        completion_logprobs=[-0.1 * (i + 1) for i in range(len(completion))],
    )
    out = trajectory_step(resp, previous)
    assert out is not None
    return out


def assert_aligned(s: dict[str, Any] | vf.TokenSample | TrajectoryStep) -> None:
    d = s if isinstance(s, dict) else s.model_dump()
    assert len(d["prompt_mask"]) == len(d["prompt_ids"])
    assert len(d["completion_mask"]) == len(d["completion_ids"])
    if d["completion_logprobs"] is not None:
        assert len(d["completion_logprobs"]) == len(d["completion_ids"])


# --- builders ---------------------------------------------------------------------------------------
def test_interleaved_steps_merge_into_one_sample() -> None:
    s1 = step([1, 2], [3, 4])
    s2 = step([1, 2, 3, 4, 5, 6], [7], s1)
    s3 = step([1, 2, 3, 4, 5, 6, 7, 8], [9, 10], s2)
    assert (s1["extends_previous"], s2["extends_previous"], s3["extends_previous"]) == (False, True, True)
    assert is_interleaved([s1, s2, s3])
    (sample,) = token_samples([s1, s2, s3])
    assert sample.prompt_ids == [1, 2] and sample.prompt_mask == [0, 0]
    assert sample.completion_ids == [3, 4, 5, 6, 7, 8, 9, 10]
    assert sample.completion_mask == [1, 1, 0, 0, 1, 0, 1, 1]  # environment tokens masked
    assert sample.completion_logprobs == pytest.approx([-0.1, -0.2, 0.0, 0.0, -0.1, 0.0, -0.1, -0.2])
    assert sample.steps == [0, 1, 2]
    assert sample.prompt_ids + sample.completion_ids == s3["prompt_ids"] + s3["completion_ids"]
    assert_aligned(sample)
    # forced branching: one sample per step, each its own step's tokens
    samples = token_samples([s1, s2, s3], mode="branching")
    assert [x.steps for x in samples] == [[0], [1], [2]]
    assert samples[1].prompt_ids == s2["prompt_ids"] and samples[1].completion_mask == [1]


def test_a_step_that_does_not_extend_branches() -> None:
    s1 = step([1, 2], [3, 4])
    s2 = step([1, 2, 9, 5], [6], s1)  # history re-rendered differently: not a prefix
    s3 = step([1, 2, 9, 5, 6, 7], [8], s2)
    assert not s2["extends_previous"] and s3["extends_previous"]
    assert not is_interleaved([s1, s2, s3])
    samples = token_samples([s1, s2, s3])
    assert [x.steps for x in samples] == [[0], [1, 2]]
    assert samples[1].completion_ids == [6, 7, 8] and samples[1].completion_mask == [1, 0, 1]
    assert not extends(None, [1]) and not extends(s1, [1, 2, 3])  # too short is not an extension
    assert token_samples([]) == [] and not is_interleaved([])
    with pytest.raises(ValueError, match="mode"):
        token_samples([s1], mode="zigzag")  # type: ignore[arg-type]


def test_max_seq_len_cuts_completions_and_overlong_prompts() -> None:
    resp = ModelResponse(
        message={"role": "assistant", "content": "x"},
        finish_reason="stop",
        prompt_ids=[1, 2, 3],
        completion_ids=[4, 5, 6],
        completion_logprobs=[-1.0, -2.0, -3.0],
    )
    cut = trajectory_step(resp, max_seq_len=5)
    assert cut is not None
    assert cut["completion_ids"] == [4, 5] and cut["completion_logprobs"] == [-1.0, -2.0]
    assert cut["is_truncated"] and not cut["overlong_prompt"]
    assert_aligned(cut)
    over = trajectory_step(resp, max_seq_len=2)
    assert over is not None
    assert over["prompt_ids"] == [1, 2] and over["completion_ids"] == [] and over["completion_logprobs"] == []
    assert over["overlong_prompt"] and over["is_truncated"]
    assert_aligned(over)
    fits = trajectory_step(resp, max_seq_len=6)
    assert fits is not None and not fits["is_truncated"] and fits["completion_ids"] == [4, 5, 6]
    # no ids from the server: no step; misaligned logprobs are refused, not guessed around
    assert trajectory_step(ModelResponse(message={}, finish_reason="stop")) is None
    bad = ModelResponse(
        message={}, finish_reason="stop", prompt_ids=[1], completion_ids=[2], completion_logprobs=[]
    )
    with pytest.raises(ValueError, match="logprobs"):
        trajectory_step(bad)


# --- rollouts ---------------------------------------------------------------------------------------
class Echo(vf.MultiTurnEnv):
    """Answers every model turn with a user message ``next <n>``."""

    async def env_response(self, messages: Messages | str, state: State) -> Messages | str:
        return [{"role": "user", "content": f"next {len(state['turns'])}"}]


def echo(**kw: Any) -> Echo:
    kw.setdefault("max_turns", 3)
    return Echo(dataset=[{"question": "start", "answer": "x"}], rubric=vf.Rubric([]), **kw)


async def one_rollout(env: vf.Environment, server: ScriptedServer, **kw: Any) -> State:
    (state,) = await env.a_generate(env.select_rows(), server.url, "m", sampling_args=BOTH, **kw)
    return state


def check_recorded_tokens_match_requests(state: State, server: ScriptedServer) -> None:
    """Each step's prompt ids are the server's tokenisation of the request it was sent."""
    assert len(server.requests) == len(state["turns"])
    for st, req in zip(state["trajectory"], server.requests, strict=True):
        assert st["prompt_ids"] == toy_prompt_ids(req)
        assert_aligned(st)


async def test_multi_turn_rollout_is_one_interleaved_sequence(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content=f"answer {len(body['messages'])}")
    state = await one_rollout(echo(), vllm)
    assert state["error"] is None and state["stop_condition"] == "max_turns"
    traj = state["trajectory"]
    assert len(traj) == 3 and [s["extends_previous"] for s in traj] == [False, True, True]
    check_recorded_tokens_match_requests(state, vllm)
    (sample,) = token_samples(traj)
    last = traj[-1]
    assert sample.prompt_ids + sample.completion_ids == last["prompt_ids"] + last["completion_ids"]
    # the model's tokens are exactly the three completions; everything between them is masked
    model_tokens = [t for t, m in zip(sample.completion_ids, sample.completion_mask, strict=True) if m]
    assert model_tokens == [t for s in traj for t in s["completion_ids"]]
    env_tokens = [t for t, m in zip(sample.completion_ids, sample.completion_mask, strict=True) if not m]
    assert env_tokens[0] == TOY_ROLES["user"] and bytes(t for t in env_tokens if t < 256) == b"next 1next 2"
    rec = RolloutResult.model_validate(echo().result_record(state))
    assert len(rec.trajectory) == 3 and rec.advantage is None


async def test_reasoning_kept_is_sent_back_and_interleaves(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content="done", reasoning=f"thought {len(body['messages'])}")
    env = echo(max_turns=2)
    assert env.interleaved_thinking  # the default
    state = await one_rollout(env, vllm)
    second = vllm.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "done", "reasoning_content": "thought 1"}
    assert [s["extends_previous"] for s in state["trajectory"]] == [False, True]
    assert len(token_samples(state["trajectory"])) == 1
    check_recorded_tokens_match_requests(state, vllm)


async def test_reasoning_dropped_is_not_sent_and_branches(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content="done", reasoning=f"thought {len(body['messages'])}")
    state = await one_rollout(echo(interleaved_thinking=False), vllm)
    for req in vllm.requests[1:]:
        for m in req["messages"]:
            assert "reasoning_content" not in m
    assert vllm.requests[1]["messages"][-2] == {"role": "assistant", "content": "done"}
    traj = state["trajectory"]
    assert [s["extends_previous"] for s in traj] == [False, False, False]
    assert len(token_samples(traj)) == 3  # branching: one sample per turn
    check_recorded_tokens_match_requests(state, vllm)
    # the rollout's own record keeps the reasoning (for scoring)
    assert state["completion"][0]["reasoning_content"] == "thought 1"


async def test_think_text_in_content_is_dropped_too(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content="<think>hmm</think>\n4")
    state = await one_rollout(echo(max_turns=2, interleaved_thinking=False), vllm)
    assert vllm.requests[1]["messages"][-2] == {"role": "assistant", "content": "4"}
    assert not state["trajectory"][1]["extends_previous"]
    assert state["completion"][0]["content"] == "<think>hmm</think>\n4"
    check_recorded_tokens_match_requests(state, vllm)


async def test_max_seq_len_truncates_a_completion_with_aligned_masks(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content="a fairly long answer")
    env = echo(max_turns=5, max_seq_len=50)  # turn 2: a 38-token prompt, a 21-token answer
    state = await one_rollout(env, vllm)
    traj = state["trajectory"]
    assert state["is_truncated"] and state["stop_condition"] == "truncated" and state["error"] is None
    assert traj[-1]["is_truncated"] and not traj[-1]["overlong_prompt"]
    assert all(len(s["prompt_ids"]) + len(s["completion_ids"]) <= 50 for s in traj)
    for s in traj:
        assert_aligned(s)
    (sample,) = token_samples(traj)
    assert len(sample.prompt_ids) + len(sample.completion_ids) == 50 and sample.is_truncated
    assert_aligned(sample)


async def test_a_prompt_that_no_longer_fits_ends_the_rollout(vllm: ScriptedServer) -> None:
    vllm.handler = lambda body: Reply(content="ok")
    first = len(toy_prompt_ids({"messages": [{"role": "user", "content": "start"}]})) + 3  # "ok" + end
    env = echo(max_turns=5, max_seq_len=first + 2)  # turn 2's prompt adds "next 1" and markers
    state = await one_rollout(env, vllm)
    assert state["stop_condition"] == "prompt_too_long" and state["is_truncated"] and state["error"] is None
    traj = state["trajectory"]
    assert len(traj) == 2 and traj[1]["overlong_prompt"] and traj[1]["completion_ids"] == []
    assert len(traj[1]["prompt_ids"]) == first + 2
    # the answer to the prompt that did not fit is not part of the rollout
    assert [m["role"] for m in state["completion"]] == ["assistant", "user"]
    for s in token_samples(traj):
        assert_aligned(s)


async def test_server_refusing_a_long_prompt_is_truncation_only_with_max_seq_len(
    vllm: ScriptedServer,
) -> None:
    vllm.handler = lambda body: Reply(content="ok")
    vllm.max_model_len = len(toy_prompt_ids({"messages": [{"role": "user", "content": "start"}]}))
    state = await one_rollout(echo(max_turns=5, max_seq_len=1000), vllm)
    assert state["stop_condition"] == "prompt_too_long" and state["is_truncated"] and state["error"] is None
    assert len(state["trajectory"]) == 1
    state = await one_rollout(echo(max_turns=5), vllm)
    assert state["error"] is not None and state["error"]["category"] == "model"
    assert state["stop_condition"] == "prompt_too_long"


async def test_completion_env_tokens_interleave(vllm: ScriptedServer) -> None:
    class TextEcho(vf.MultiTurnEnv):
        message_type = "completion"

        async def env_response(self, messages: Messages | str, state: State) -> Messages | str:
            return " then"

    vllm.handler = lambda body: Reply(content=" go")
    env = TextEcho(dataset=[{"prompt": "Start:", "answer": ""}], rubric=vf.Rubric([]), max_turns=2)
    state = await one_rollout(env, vllm)
    assert [s["extends_previous"] for s in state["trajectory"]] == [False, True]
    (sample,) = token_samples(state["trajectory"])
    assert bytes(sample.prompt_ids + sample.completion_ids) == b"Start: go then go"
    with pytest.raises(ValueError, match="chat environments only"):
        TextEcho(dataset=[{"prompt": "x"}], interleaved_thinking=False)


def test_options_validate_and_reach_group_members() -> None:
    a, b = echo(), echo(max_seq_len=10)
    group = vf.EnvGroup({"a": a, "b": b})
    assert b.max_seq_len == 10  # a group's defaults leave its members' own settings alone
    group.max_seq_len = 128
    group.interleaved_thinking = False
    assert (a.max_seq_len, b.max_seq_len, a.interleaved_thinking) == (128, 128, False)
    with pytest.raises(ValueError, match="max_seq_len"):
        echo(max_seq_len=0)
    with pytest.raises(TypeError, match="interleaved_thinking"):
        echo(interleaved_thinking="no")  # type: ignore[arg-type]


async def test_evaluate_records_trajectories_and_old_rows_still_load(
    vllm: ScriptedServer, tmp_path: Path
) -> None:
    vllm.handler = lambda body: Reply(content="fine")
    env = echo(max_turns=2)
    run = await env.a_evaluate(
        vllm.url,
        "m",
        return_tokens="both",
        interleaved_thinking=False,
        max_seq_len=1000,
        output_dir=tmp_path / "run",
    )
    assert env.interleaved_thinking is False and env.max_seq_len == 1000  # the run settings were applied
    assert run.metadata.sampling_args["extra_body"]["return_token_ids"] is True  # recorded as sent
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    (row,) = rows
    result = RolloutResult.model_validate(row)
    assert len(result.trajectory) == 2 and result.trajectory[0].completion_ids[-1] == TOY_END
    old = {k: v for k, v in row.items() if k not in ("trajectory", "advantage")}
    legacy = RolloutResult.model_validate(old)
    assert legacy.trajectory == [] and legacy.advantage is None


async def test_tool_calls_interleave_with_tool_results_masked(vllm: ScriptedServer) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    vllm.enqueue(
        Reply(content=None, tool_calls=[tool_call("add", {"a": 2, "b": 3}, "c1")]), Reply(content="5")
    )
    env = vf.ToolEnv(dataset=[{"question": "2+3?", "answer": "5"}], tools=[add], rubric=vf.Rubric([]))
    state = await one_rollout(env, vllm)
    assert state["error"] is None and [m["role"] for m in state["completion"]] == [
        "assistant",
        "tool",
        "assistant",
    ]
    traj = state["trajectory"]
    assert [s["extends_previous"] for s in traj] == [False, True]
    check_recorded_tokens_match_requests(state, vllm)
    (sample,) = token_samples(traj)
    masked = bytes(
        t for t, m in zip(sample.completion_ids, sample.completion_mask, strict=True) if not m and t < 256
    )
    assert masked == b"5"  # the tool's result is the environment's, never trained on
