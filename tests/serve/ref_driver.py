"""Runs inside ``.venv-ref`` (the reference SDK, ``verifiers==0.1.12`` from PyPI), never in our venv.

Drives ``vf-serve``'s ZMQ port with that SDK's own ``ZMQEnvClient`` exactly as prime-rl v0.5.0's
orchestrator does (``run_rollout`` with ``state_columns=["trajectory", "sampling_args"]`` for training,
``run_group`` for evaluation), validates every output against the reference's own types, checks what
the orchestrator reads, and prints one JSON document on stdout for the test to compare.

    python ref_driver.py ADDRESS BASE_URL MODEL INPUTS_JSON_FILE
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic import TypeAdapter

import verifiers as vf
from verifiers.serve import RunGroupResponse, RunRolloutResponse, ZMQEnvClient
from verifiers.types import ClientConfig, ErrorInfo, RolloutTiming, TokenUsage, TrajectoryStep

STATE_COLUMNS = ["trajectory", "sampling_args"]  # prime-rl v0.5.0 REQUIRED_STATE_COLUMNS
SAMPLING = {"temperature": 1.0, "max_tokens": 512, "logprobs": True, "extra_body": {"return_token_ids": True}}


def check(output: dict[str, Any]) -> dict[str, Any]:
    """Validate one output against the reference types and the orchestrator's reads; return a digest."""
    assert vf.__version__ == "0.1.12", vf.__version__
    for key in (
        "example_id",
        "task",
        "prompt",
        "completion",
        "reward",
        "timing",
        "is_completed",
        "is_truncated",
        "metrics",
    ):  # RolloutOutput's required fields
        assert key in output, f"missing {key}"
    assert isinstance(output["reward"], float)
    TypeAdapter(RolloutTiming).validate_python(output["timing"])
    for key in ("generation_ms", "scoring_ms"):  # orchestrator.py logs these
        assert isinstance(output["timing"][key], float)
    if output.get("token_usage") is not None:
        TypeAdapter(TokenUsage).validate_python(output["token_usage"])
    if output.get("error") is not None:
        TypeAdapter(ErrorInfo).validate_python(output["error"])
        assert output["error"]["error_chain_repr"]  # scheduler.py logs it
    assert output["sampling_args"]["temperature"] == SAMPLING["temperature"]  # trajectories.py reads it
    steps = TypeAdapter(list[TrajectoryStep]).validate_python(output["trajectory"])
    lengths = []
    for step in steps:
        tokens = step["tokens"]
        if tokens is None:
            lengths.append(None)
            continue
        assert len(tokens["prompt_ids"]) == len(tokens["prompt_mask"])
        assert (
            len(tokens["completion_ids"])
            == len(tokens["completion_mask"])
            == len(tokens["completion_logprobs"])
        )
        assert all(m == 0 for m in tokens["prompt_mask"])
        lengths.append([len(tokens["prompt_ids"]), len(tokens["completion_ids"])])
    return {
        "example_id": output["example_id"],
        "reward": output["reward"],
        "metrics": output["metrics"],
        "error": output.get("error"),
        "completion": output["completion"],
        "steps": len(steps),
        "token_lengths": lengths,
        "completion_ids": [s["tokens"]["completion_ids"] if s["tokens"] else None for s in steps],
    }


async def main(address: str, base_url: str, model: str, inputs: list[dict[str, Any]]) -> None:
    client = ZMQEnvClient(address=address, health_check_interval=0.5, startup_timeout=60)
    try:
        await client.wait_for_server_startup()
        assert await client.health()
        config = ClientConfig(api_base_url=base_url, api_key_var="OPENAI_API_KEY")
        # Training: one rollout per call, as prime-rl's scheduler does.
        train = await asyncio.gather(
            *(
                client.run_rollout(vf.RolloutInput(**x), config, model, SAMPLING, 0, STATE_COLUMNS)
                for x in inputs
                for _ in range(2)
            )
        )
        # Evaluation: one group per example (vf_utils.generate -> run_group).
        groups = await asyncio.gather(
            *(
                client.run_group([vf.RolloutInput(**x)] * 2, config, model, SAMPLING, 0, STATE_COLUMNS)
                for x in inputs
            )
        )
        # The response models the client validated against, once more by hand.
        RunRolloutResponse.model_validate({"output": dict(train[0])})
        RunGroupResponse.model_validate({"outputs": [dict(o) for o in groups[0]]})
        print(
            json.dumps(
                {
                    "train": [check(dict(o)) for o in train],
                    "eval": [[check(dict(o)) for o in g] for g in groups],
                }
            )
        )
    finally:
        await client.close()


if __name__ == "__main__":
    with open(sys.argv[4]) as f:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.load(f)))
