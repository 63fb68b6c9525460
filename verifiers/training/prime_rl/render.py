"""``vf-train render``: a preset + environments + model → prime-rl v0.5.0 files in a run directory.

Writes ``rl.toml`` (the launcher's config: ``uv run rl @ rl.toml``) and ``vf-train.toml`` (the adapter's
record, see ``spec``). The multi-node preset also gets the per-component files its nodes start with
(``trainer.toml``, ``orchestrator.toml``, ``inference.toml``: what ``RLConfig``'s auto-setup would pass
down: model name, ``seq_len``, output dirs, ``num_train_workers``), a per-node launch script and a Slurm
batch file. ``--set section.key=value`` overrides any value (TOML syntax; ``vf_train.…`` edits the spec).
"""

from __future__ import annotations

import copy
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from verifiers.training.prime_rl import resolved
from verifiers.training.prime_rl.bridge import PACKAGES_DIR, write_packages
from verifiers.training.prime_rl.presets import build_spec, preset_document
from verifiers.training.prime_rl.release import RELEASE, RELEASE_COMMIT
from verifiers.training.prime_rl.spec import NAME, SPEC_FILE, Preset, RunSpec, parse_env_arg, spec_problems

RL_FILE = "rl.toml"
SPLIT_FILES = ("trainer.toml", "orchestrator.toml", "inference.toml")
NODE_SCRIPT = "launch_node.sh"
SBATCH_FILE = "intellect3.sbatch"
HEADER = f"# prime-rl {RELEASE} ({RELEASE_COMMIT}), rendered by vf-train render. Edit freely; check with vf-train validate.\n"


class RenderError(ValueError):
    """Bad render input (unknown --set path, bad value, bad --env)."""


@dataclass
class Rendered:
    out: Path
    spec: RunSpec
    document: dict[str, Any]
    files: list[Path] = field(default_factory=list)


def parse_set(item: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` → (["a", "b", "c"], value); the value is read as TOML, else taken as a string."""
    if "=" not in item:
        raise RenderError(f"--set {item!r}: expected section.key=value")
    path, raw = item.split("=", 1)
    keys = [k for k in path.strip().split(".") if k]
    if not keys:
        raise RenderError(f"--set {item!r}: empty key")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return keys, value


def apply_set(doc: dict[str, Any], keys: list[str], value: Any) -> None:
    node: Any = doc
    for i, key in enumerate(keys[:-1]):
        if isinstance(node, list):
            node = node[_index(node, key, keys)]
            continue
        nxt = node.get(key)
        if nxt is None:
            nxt = node[key] = {}
        elif not isinstance(nxt, dict | list):
            raise RenderError(f"--set {'.'.join(keys)}: {'.'.join(keys[: i + 1])} is a value, not a table")
        node = nxt
    if isinstance(node, list):
        node[_index(node, keys[-1], keys)] = value
    else:
        node[keys[-1]] = value


def _index(node: list[Any], key: str, keys: list[str]) -> int:
    if not key.isdigit() or int(key) >= len(node):
        raise RenderError(f"--set {'.'.join(keys)}: {key!r} is not an index of a {len(node)}-entry list")
    return int(key)


def split_documents(doc: dict[str, Any], spec: RunSpec) -> dict[str, dict[str, Any]]:
    """Per-component files with the shared values ``RLConfig`` would propagate (configs/rl.py auto_setup_*)."""
    model = doc.get("model", {}).get("name", spec.model)
    seq_len = doc.get("seq_len")
    out_dir = str(doc.get("output_dir", "outputs"))
    trainer = copy.deepcopy(doc.get("trainer", {}))
    trainer.setdefault("model", {})["name"] = model
    trainer.setdefault("tokenizer", {}).setdefault("name", model)
    if seq_len is not None:
        trainer["model"].setdefault("seq_len", seq_len)
    trainer["output_dir"] = out_dir
    orch = copy.deepcopy(doc.get("orchestrator", {}))
    orch.setdefault("model", {})["name"] = model
    if seq_len is not None:
        orch.setdefault("seq_len", seq_len)
    orch["output_dir"] = f"{out_dir}/run_default"
    dep = doc.get("deployment", {})
    if dep.get("type") == "multi_node":
        orch.setdefault(
            "num_train_workers", int(dep.get("num_train_nodes", 0)) * int(dep.get("gpus_per_node", 8))
        )
    for key in ("max_steps", "max_async_level"):
        if key in doc:
            trainer[key] = orch[key] = doc[key]
    infer = copy.deepcopy(doc.get("inference", {}))
    infer.setdefault("model", {})["name"] = model
    return {"trainer.toml": trainer, "orchestrator.toml": orch, "inference.toml": infer}


def render(
    preset: Preset,
    envs: list[str],
    model: str,
    out: Path,
    sets: list[str] | None = None,
) -> Rendered:
    if not envs:
        raise RenderError("give at least one --env")
    try:
        parsed = [parse_env_arg(e) for e in envs]
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    ids = [p[0] for p in parsed]
    if len(set(ids)) != len(ids):
        raise RenderError(f"each environment once: {ids}")
    for env_id in ids:
        check_known(env_id)
    try:
        spec = build_spec(preset, parsed, model)
    except ValueError as exc:
        raise RenderError(spec_problems(exc)) from None
    pairs = [parse_set(s) for s in sets or []]
    spec_sets = [(k[1:], v) for k, v in pairs if k[0] == "vf_train"]
    if spec_sets:
        data = spec.model_dump(mode="json")
        for keys, value in spec_sets:
            apply_set(data, keys, value)
        try:
            spec = RunSpec.model_validate(data)
        except ValueError as exc:
            raise RenderError(f"--set vf_train.…: {spec_problems(exc)}") from None
    doc = preset_document(spec)
    for keys, value in pairs:
        if keys[0] != "vf_train":
            apply_set(doc, keys, value)
    job = doc.get("slurm", {}).get("job_name") if isinstance(doc.get("slurm"), dict) else None
    if job is not None and not (isinstance(job, str) and NAME.fullmatch(job)):
        raise RenderError(f"slurm.job_name = {job!r}: use letters, digits, '.', '_' and '-' only")
    out.mkdir(parents=True, exist_ok=True)
    result = Rendered(out=out, spec=spec, document=doc)
    spec.write(out)
    result.files.append(out / SPEC_FILE)
    _write_toml(out / RL_FILE, doc)
    result.files.append(out / RL_FILE)
    result.files += write_packages(out, spec)
    if spec.preset == "intellect3":
        for name, part in split_documents(doc, spec).items():
            _write_toml(out / name, part)
            result.files.append(out / name)
        (out / NODE_SCRIPT).write_text(node_script(spec, doc))
        (out / NODE_SCRIPT).chmod(0o755)
        (out / SBATCH_FILE).write_text(sbatch_file(spec, doc))
        result.files += [out / NODE_SCRIPT, out / SBATCH_FILE]
    return result


def check_known(env_id: str) -> None:
    """Refuse an environment that is neither installed nor under ``./environments`` (a typo would
    otherwise render a run no env server can serve), suggesting the nearest known ids."""
    import difflib

    from verifiers.envs.loading import installed_environments, local_environments

    known = sorted({*installed_environments(), *local_environments()})
    if env_id in known:
        return
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    listed = ", ".join(known) or "none"
    raise RenderError(
        f"--env {env_id!r}: no such environment here; {hint}known: {listed} (install one with `vf-install ID`)"
    )


def _write_toml(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(HEADER + tomli_w.dumps(doc))


def env_server_commands(spec: RunSpec, doc: dict[str, Any]) -> list[list[str]]:
    """One ``vf-serve`` per environment, on the ports the config names, with the run's token budget and
    scoring: prime-rl passes ``max_seq_len`` and ``score_rollouts`` only to env servers it spawns itself,
    never to one at an ``address``, so the adapter starts ours with them (``resolved``)."""
    import json

    seq_len, _ = resolved.seq_lens(doc)
    scoring = "--score-rollouts" if resolved.score_rollouts(doc) else "--no-score-rollouts"
    cmds = []
    for e in spec.env:
        # The version pin is checked by validate (vf-serve serves what is installed).
        cmd = [
            "vf-serve",
            e.id,
            "--host",
            e.host,
            "--port",
            str(e.http_port),
            "--zmq-port",
            str(e.zmq_port),
            "--max-concurrent",
            str(e.max_concurrent),
            "--workers",
            str(e.workers),
            *(["--max-seq-len", str(seq_len)] if seq_len is not None else []),
            scoring,
        ]
        if e.args:
            cmd += ["--env-args", json.dumps(e.args, sort_keys=True)]
        cmds.append(cmd)
    return cmds


def node_script(spec: RunSpec, doc: dict[str, Any]) -> str:
    """The per-node launcher: a node's role comes from its hostname's place in the rendered lists, so the
    inference base URLs in orchestrator.toml are right whatever order Slurm lists the nodes in."""
    gpus = int(doc.get("deployment", {}).get("gpus_per_node", 8))
    # Hostnames are checked names (spec.Host); quoted all the same, as everything put into a script.
    infer = " ".join(shlex.quote(h) for h in spec.nodes.inference)
    train = " ".join(shlex.quote(h) for h in spec.nodes.trainer)
    serve = "\n".join(
        f'      {shlex.join(c)} > "$RUN_DIR/logs/vf-serve-{i}.log" 2>&1 &'
        for i, c in enumerate(env_server_commands(spec, doc))
    )
    health = " ".join(shlex.quote(f"{e.http_url}/health") for e in spec.env)
    return f"""#!/usr/bin/env bash
# Per-node launcher for the {spec.preset} preset (prime-rl {RELEASE}). Run on every node (the Slurm batch
# file does: srun bash launch_node.sh). Roles by hostname:
#   inference nodes ({len(spec.nodes.inference)}): {infer}
#   trainer nodes   ({len(spec.nodes.trainer)}): {train}  (the first also runs vf-serve and the orchestrator)
# PRIME_RL_DIR: a prime-rl {RELEASE} checkout with its venv; VF_VENV: the venv with verifiers-sdk + the envs.
set -euo pipefail
RUN_DIR="${{RUN_DIR:-$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)}}"
PRIME_RL_DIR="${{PRIME_RL_DIR:?set PRIME_RL_DIR to a prime-rl {RELEASE} checkout}}"
VF_VENV="${{VF_VENV:?set VF_VENV to the verifiers-sdk venv}}"
export PATH="$VF_VENV/bin:$PATH"
INFER_HOSTS=({infer})
TRAIN_HOSTS=({train})
GPUS_PER_NODE={gpus}
MASTER_ADDR="${{TRAIN_HOSTS[0]}}"
MASTER_PORT="${{MASTER_PORT:-29500}}"
ME="$(hostname -s)"
mkdir -p "$RUN_DIR/logs"
cd "$PRIME_RL_DIR"

for i in "${{!INFER_HOSTS[@]}}"; do
  if [ "${{INFER_HOSTS[$i]}}" = "$ME" ]; then
    echo "[$ME] inference node $i -> http://$ME:{spec.nodes.inference_port}/v1"
    exec uv run inference @ "$RUN_DIR/inference.toml" --server.host 0.0.0.0 --server.port {spec.nodes.inference_port}
  fi
done

for i in "${{!TRAIN_HOSTS[@]}}"; do
  if [ "${{TRAIN_HOSTS[$i]}}" = "$ME" ]; then
    if [ "$i" -eq 0 ]; then
      echo "[$ME] env servers + orchestrator"
{serve}
      for url in {health}; do
        until curl -sf "$url" > /dev/null; do sleep 2; done
      done
      uv run orchestrator @ "$RUN_DIR/orchestrator.toml" > "$RUN_DIR/logs/orchestrator.log" 2>&1 &
    fi
    echo "[$ME] trainer node $i of ${{#TRAIN_HOSTS[@]}}"
    exec uv run torchrun --nnodes="${{#TRAIN_HOSTS[@]}}" --nproc-per-node="$GPUS_PER_NODE" --node-rank="$i" \\
      --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" --rdzv-id="vf-train-${{SLURM_JOB_ID:-0}}" \\
      -m prime_rl.trainer.rl.train @ "$RUN_DIR/trainer.toml"
  fi
done
echo "[$ME] is neither an inference nor a trainer node of this run" >&2
exit 1
"""


def sbatch_file(spec: RunSpec, doc: dict[str, Any]) -> str:
    gpus = int(doc.get("deployment", {}).get("gpus_per_node", 8))
    hosts = [*spec.nodes.inference, *spec.nodes.trainer]
    job = str(doc.get("slurm", {}).get("job_name", spec.preset))
    urls = "\n".join(f"#   {h}: http://{h}:{spec.nodes.inference_port}/v1" for h in spec.nodes.inference)
    return f"""#!/bin/bash
#SBATCH --job-name={job}
#SBATCH --nodes={len(hosts)}
#SBATCH --nodelist={",".join(hosts)}
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:{gpus}
#SBATCH --exclusive
#SBATCH --output=%x_%j.log
# {len(spec.nodes.trainer)} trainer nodes + {len(spec.nodes.inference)} inference nodes, {gpus} GPUs each (prime-rl {RELEASE}).
# Inference base URLs (orchestrator.client.base_url), one per node:
{urls}
set -euo pipefail
RUN_DIR="${{RUN_DIR:-$SLURM_SUBMIT_DIR}}"
PRIME_RL_DIR="${{PRIME_RL_DIR:?set PRIME_RL_DIR to a prime-rl {RELEASE} checkout}}"
export RUN_DIR PRIME_RL_DIR
# Once, before any node starts: the custom loss (trainers) and the bridge packages (orchestrator) go into
# prime-rl's venv (on the shared filesystem).
uv pip install -q --python "$PRIME_RL_DIR/.venv/bin/python" "$RUN_DIR"/{PACKAGES_DIR}/*/
srun --ntasks-per-node=1 bash "$RUN_DIR/{NODE_SCRIPT}"
"""
