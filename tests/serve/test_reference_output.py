"""Our rollout rows as the reference SDK's ``RolloutOutput`` (no processes: the conversion alone)."""

from __future__ import annotations

from typing import Any

from verifiers.serve import to_reference_output


def row(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "example_id": 7,
        "rollout_index": 1,
        "task": "t",
        "prompt": [{"role": "user", "content": "q"}],
        "completion": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "1"},
            {"role": "assistant", "content": "done"},
        ],
        "answer": "",
        "info": {},
        "reward": 1.0,
        "metrics": {"m": 1.0},
        "error": None,
        "stop_condition": "answered",
        "is_truncated": False,
        "turns": [
            {
                "prompt_ids": [1, 2],
                "completion_ids": [3],
                "completion_logprobs": [-0.1],
                "finish_reason": "tool_calls",
            },
            {
                "prompt_ids": [1, 2, 3, 4],
                "completion_ids": [5],
                "completion_logprobs": None,
                "finish_reason": "stop",
            },
        ],
        "trajectory": [
            {
                "prompt_ids": [1, 2],
                "prompt_mask": [0, 0],
                "completion_ids": [3],
                "completion_mask": [1],
                "completion_logprobs": [-0.1],
                "is_truncated": False,
                "overlong_prompt": False,
            },
            {
                "prompt_ids": [1, 2, 3, 4],
                "prompt_mask": [0, 0, 0, 0],
                "completion_ids": [5],
                "completion_mask": [1],
                "completion_logprobs": None,
                "is_truncated": False,
                "overlong_prompt": False,
            },
        ],
        "usage": {"prompt_tokens": 6, "completion_tokens": 2},
        "timing": {"generation": 0.5, "scoring": 0.25, "total": 0.75},
        "env_id": "e",
        "env_version": "1",
    }
    return {**base, **over}


def test_fields_and_steps() -> None:
    out = to_reference_output(
        row(),
        model="m",
        sampling_args={"temperature": 0.7},
        state_columns=["trajectory", "sampling_args", "env_id"],
    )
    assert out["reward"] == 1.0 and out["is_completed"] and out["error"] is None
    assert out["timing"] == {
        "start_time": 0.0,
        "generation_ms": 500.0,
        "scoring_ms": 250.0,
        "total_ms": 750.0,
    }
    assert out["token_usage"] == {"input_tokens": 6.0, "output_tokens": 2.0}
    assert out["m"] == 1.0 and out["metrics"] == {"m": 1.0}  # flattened too, as the reference does
    assert "answer" not in out and "info" not in out  # empty optional fields are left out
    assert out["sampling_args"] == {"temperature": 0.7} and out["env_id"] == "e"
    assert out["completion"][0]["tool_calls"] == [{"id": "c1", "name": "f", "arguments": '{"x": 1}'}]
    first, second = out["trajectory"]
    assert first["prompt"] == [{"role": "user", "content": "q"}]
    assert [m["role"] for m in second["prompt"]] == ["user", "assistant", "tool"]
    assert second["completion"] == [{"role": "assistant", "content": "done"}]
    assert first["tokens"]["completion_logprobs"] == [-0.1] and first["tokens"]["routed_experts"] is None
    assert second["tokens"] is None  # no logprobs measured: the orchestrator re-tokenizes this step
    assert first["response"]["message"]["finish_reason"] == "tool_calls"
    assert second["response"]["usage"]["total_tokens"] == 5


def test_an_errored_rollout_is_masked_not_trained() -> None:
    err = {"category": "infra", "type": "WorkerCrashedError", "message": "worker 0 exited"}
    out = to_reference_output(row(reward=None, error=err), model="m", sampling_args={}, state_columns=[])
    assert out["reward"] == 0.0 and out["is_completed"] is False
    assert out["error"] == {
        "error": "WorkerCrashedError",
        "error_chain_repr": "infra: WorkerCrashedError: worker 0 exited",
        "error_chain_str": "infra: WorkerCrashedError: worker 0 exited",
    }
    assert "trajectory" not in out  # only the state columns asked for
