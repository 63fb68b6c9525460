"""The two presets as prime-rl v0.5.0 config documents (the launcher's ``rl.toml`` as a dict).

Every key here exists in the release (``release.check_keys`` is run on the result by the tests):

- ``single-node``: one 8×H200 node, 2 trainer GPUs and 6 inference GPUs (``[deployment]`` counts, not ids);
- ``intellect3``: the INTELLECT-3 recipe: 16 trainer + 44 inference nodes of 8 H200s, 256 prompts × 16
  rollouts (``batch_size`` counts rollouts: 4096), 65,536-token context, Muon at lr 1e-6,
  ``max_off_policy_steps = 8`` (a field of that name exists in v0.5.0's orchestrator), the custom IcePop loss,
  online difficulty filtering with easy/hard pools and environments mixed by ratio.
"""

from __future__ import annotations

from typing import Any

from verifiers.training.prime_rl.spec import LOSS_KWARGS, EnvEntry, Nodes, Preset, RunSpec

GPUS_PER_NODE = 8
SINGLE_NODE = {"train_gpus": 2, "infer_gpus": 6}
INTELLECT3 = {"train_nodes": 16, "infer_nodes": 44}
FIRST_HTTP_PORT = 8100
FIRST_ZMQ_PORT = 5100


#: Rollouts each env server keeps in flight: two steps' batches (``orchestrator.batch_size`` below counts
#: rollouts; the orchestrator generates the next step while one trains), and worker processes to run them.
ENV_SERVER: dict[str, dict[str, int]] = {
    "single-node": {"max_concurrent": 2 * 256, "workers": 2},
    "intellect3": {"max_concurrent": 2 * 256 * 16, "workers": 8},
}


def build_spec(preset: Preset, envs: list[tuple[str, str, float | None]], model: str) -> RunSpec:
    """The run spec of a preset; ``envs`` are parsed ``--env`` values (id, version pin or "", ratio)."""
    entries = [
        EnvEntry(
            id=env_id,
            version=version,
            ratio=ratio,
            http_port=FIRST_HTTP_PORT + i,
            zmq_port=FIRST_ZMQ_PORT + i,
            max_concurrent=ENV_SERVER[preset]["max_concurrent"],
            workers=ENV_SERVER[preset]["workers"],
        )
        for i, (env_id, version, ratio) in enumerate(envs)
    ]
    if preset == "single-node":
        return RunSpec(preset=preset, model=model, prompt_budget=2048, env=entries)
    nodes = Nodes(
        inference=[f"infer-{i:03d}" for i in range(INTELLECT3["infer_nodes"])],
        trainer=[f"train-{i:03d}" for i in range(INTELLECT3["train_nodes"])],
    )
    return RunSpec(preset=preset, model=model, prompt_budget=4096, env=entries, nodes=nodes)


def _env_tables(spec: RunSpec) -> list[dict[str, Any]]:
    return [
        {
            "id": e.bridge_distribution,
            "name": e.name,
            "address": e.zmq_address,
            "args": {"server_url": e.http_url},
        }
        for e in spec.env
    ]


def _loss(spec: RunSpec) -> dict[str, Any]:
    return {"type": "custom", "import_path": spec.loss_import_path, "kwargs": dict(LOSS_KWARGS)}


def _ratios(spec: RunSpec) -> list[float] | None:
    if all(e.ratio is None for e in spec.env):
        return None
    return [e.ratio if e.ratio is not None else 1.0 for e in spec.env]


def single_node(spec: RunSpec) -> dict[str, Any]:
    seq_len = 8192
    buffer: dict[str, Any] = {}
    if (ratios := _ratios(spec)) is not None:
        buffer["env_ratios"] = ratios
    orchestrator: dict[str, Any] = {
        "batch_size": 256,
        "rollouts_per_example": 16,
        "max_off_policy_steps": 8,
        "sampling": {"max_tokens": seq_len - spec.prompt_budget, "temperature": 1.0},
        "env": _env_tables(spec),
    }
    if buffer:
        orchestrator["buffer"] = buffer
    return {
        "output_dir": "outputs/vf-train",
        "seq_len": seq_len,
        "model": {"name": spec.model},
        "deployment": {
            "type": "single_node",
            "gpus_per_node": GPUS_PER_NODE,
            "num_train_gpus": SINGLE_NODE["train_gpus"],
            "num_infer_gpus": SINGLE_NODE["infer_gpus"],
        },
        "trainer": {
            # Explicit: v0.5.0 resolves an unset tokenizer before [model] name reaches the trainer (to
            # Qwen/Qwen3-0.6B, whatever the model; resolved.model_names).
            "tokenizer": {"name": spec.model},
            "loss": _loss(spec),
            "optim": {"type": "adamw", "lr": 1e-6},
        },
        "orchestrator": orchestrator,
        "inference": {
            "model": {"max_model_len": seq_len},
            "parallel": {"tp": 1, "dp": SINGLE_NODE["infer_gpus"]},
        },
    }


def intellect3(spec: RunSpec) -> dict[str, Any]:
    seq_len = 65536
    buffer: dict[str, Any] = {
        "online_difficulty_filtering": True,
        "easy_threshold": 1.0,
        "hard_threshold": 0.0,
        "easy_fraction": 0.0,
        "hard_fraction": 0.0,
    }
    if (ratios := _ratios(spec)) is not None:
        buffer["env_ratios"] = ratios
    return {
        "output_dir": "outputs/intellect3",
        "seq_len": seq_len,
        "model": {"name": spec.model},
        "deployment": {
            "type": "multi_node",
            "gpus_per_node": GPUS_PER_NODE,
            "num_train_nodes": len(spec.nodes.trainer),
            "num_infer_nodes": len(spec.nodes.inference),
        },
        "slurm": {"job_name": "intellect3"},
        "trainer": {
            "tokenizer": {"name": spec.model},  # explicit, as in single_node
            "loss": _loss(spec),
            "optim": {"type": "muon", "lr": 1e-6},
            "model": {"ac": {"freq": 1}},
        },
        "orchestrator": {
            "batch_size": 256 * 16,
            "rollouts_per_example": 16,
            "max_off_policy_steps": 8,
            "sampling": {"max_tokens": seq_len - spec.prompt_budget, "temperature": 1.0},
            "client": {
                "base_url": [f"http://{h}:{spec.nodes.inference_port}/v1" for h in spec.nodes.inference]
            },
            "buffer": buffer,
            "env": _env_tables(spec),
        },
        "inference": {
            "model": {"max_model_len": seq_len},
            "parallel": {"tp": GPUS_PER_NODE, "dp": 1},
            "server": {"port": spec.nodes.inference_port},
        },
    }


def preset_document(spec: RunSpec) -> dict[str, Any]:
    return single_node(spec) if spec.preset == "single-node" else intellect3(spec)
