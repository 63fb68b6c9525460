"""Runs inside a fresh venv with ``verifiers==0.1.12`` and a generated bridge package, never in our venv.

Loads the bridge with that SDK's ``load_environment`` and drives it as prime-rl v0.5.0's orchestrator does
(orchestrator.py:180-253, vf_utils.py:99-150): the env inside a ``vf.EnvGroup``, its rows from
``get_dataset`` / ``get_eval_dataset``, ``env.env_client`` a ``ZMQEnvClient`` at the env server's address,
training rollouts through ``run_rollout`` with ``state_columns=["trajectory", "sampling_args"]`` and
evaluation through ``run_group``. Prints one JSON document on stdout.

    python bridge_driver.py SPEC_JSON_FILE
    # {"bridges": [{"bridge_id", "name", "server_url", "address"}, ...], "base_url": ..., "model": ...}
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic import TypeAdapter

import verifiers as vf
from verifiers.serve import ZMQEnvClient
from verifiers.types import ClientConfig, ErrorInfo, RolloutTiming, TrajectoryStep

STATE_COLUMNS = ["trajectory", "sampling_args"]  # prime-rl v0.5.0 vf_utils.REQUIRED_STATE_COLUMNS
SAMPLING = {"temperature": 1.0, "max_tokens": 64, "logprobs": True, "extra_body": {"return_token_ids": True}}


def digest(output: dict[str, Any]) -> dict[str, Any]:
    """Check the fields the orchestrator reads (orchestrator.py, trajectories.py, scheduler.py)."""
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
        "trajectory",
        "sampling_args",
    ):
        assert key in output, f"missing {key}"
    assert isinstance(output["reward"], float)
    TypeAdapter(RolloutTiming).validate_python(output["timing"])
    for key in ("generation_ms", "scoring_ms"):
        assert isinstance(output["timing"][key], float)
    if output.get("error") is not None:
        TypeAdapter(ErrorInfo).validate_python(output["error"])
    assert output["sampling_args"]["temperature"] == SAMPLING["temperature"]
    steps = TypeAdapter(list[TrajectoryStep]).validate_python(output["trajectory"])
    lengths = []
    for step in steps:
        t = step["tokens"]
        assert t is not None, "a step without tokens: the trainer cannot use it"
        assert len(t["prompt_ids"]) == len(t["prompt_mask"])
        assert len(t["completion_ids"]) == len(t["completion_mask"]) == len(t["completion_logprobs"])
        lengths.append([len(t["prompt_ids"]), len(t["completion_ids"])])
    return {
        "example_id": output["example_id"],
        "task": output["task"],
        "prompt": output["prompt"],
        "completion": output["completion"],
        "reward": output["reward"],
        "metrics": output["metrics"],
        "error": output.get("error"),
        "token_lengths": lengths,
    }


async def main(spec_path: str) -> None:
    assert vf.__version__ == "0.1.12", vf.__version__
    with open(spec_path) as f:  # noqa: ASYNC230 - before any task runs
        spec = json.load(f)
    bridges = spec["bridges"]
    envs = [vf.load_environment(b["bridge_id"], server_url=b["server_url"]) for b in bridges]
    names = [b["name"] for b in bridges]
    group = vf.EnvGroup(envs=envs, env_names=names, map_kwargs=dict(writer_batch_size=1))
    train_rows = [dict(r) for r in group.get_dataset()]
    eval_rows = [dict(r) for r in group.get_eval_dataset()]
    clients = [
        ZMQEnvClient(address=b["address"], name=b["name"], health_check_interval=0.5, startup_timeout=60)
        for b in bridges
    ]
    try:
        await asyncio.gather(*(c.wait_for_server_startup() for c in clients))
        for env, client in zip(group.envs, clients, strict=True):
            env.env_client = client
        config = ClientConfig(api_base_url=spec["base_url"], api_key_var="OPENAI_API_KEY")
        model = spec["model"]
        picked = [r for name in names for r in [x for x in train_rows if x["task"] == name][:2]]
        train = await asyncio.gather(
            *(
                group.run_rollout(
                    vf.RolloutInput(**row),
                    client=config,
                    model=model,
                    sampling_args=SAMPLING,
                    max_retries=0,
                    state_columns=STATE_COLUMNS,
                )
                for row in picked
                for _ in range(2)
            )
        )
        eval_picked = [next(x for x in eval_rows if x["task"] == name) for name in names]
        groups = await asyncio.gather(
            *(
                group.run_group(
                    [vf.RolloutInput(**row) for _ in range(2)],
                    client=config,
                    model=model,
                    sampling_args=SAMPLING,
                    max_retries=0,
                    state_columns=STATE_COLUMNS,
                )
                for row in eval_picked
            )
        )
        print(
            json.dumps(
                {
                    "bridge_module_files": [
                        sys.modules[b["bridge_id"].replace("-", "_")].__file__ for b in bridges
                    ],
                    "train_rows": train_rows,
                    "train": [digest(dict(o)) for o in train],
                    "eval": [[digest(dict(o)) for o in g] for g in groups],
                },
                default=str,
            )
        )
    finally:
        for c in clients:
            await c.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
