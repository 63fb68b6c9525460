"""``vf-train validate DIR``: the invariants of a rendered run, checked before anyone spends GPU hours.

Each problem is one line naming the key and what to fix. The checks:

- ``keys``: every key of every prime-rl file is a field of the pinned release (``release.check_keys``),
  including the plain-pydantic sections that would silently drop a typo (``trainer.loss``, ``optim``, …);
- ``batch``: ``orchestrator.batch_size`` (rollouts per step) divisible by ``rollouts_per_example``;
- ``lengths``: prompt budget + ``sampling.max_tokens`` ≤ ``orchestrator.seq_len`` ≤ ``trainer.model.seq_len``,
  and ``orchestrator.seq_len`` ≤ ``[inference.model] max_model_len``;
- ``gpus``: GPU counts fit the nodes (single node: trainer + inference ≤ ``gpus_per_node``, inference
  ``tp × dp`` = inference GPUs; multi node: ``tp × dp`` ≤ ``gpus_per_node``);
- ``ranks``: the trainer's data-parallel ranks equal the orchestrator's ``num_train_workers``;
- ``nodes``: node counts match the node lists and the inference base URLs;
- ``envs``: each ``[[orchestrator.env]]`` is the bridge of a spec environment at its env-server address,
  ``env_ratios`` has one ratio per environment, and each environment is reachable at its ``vf-serve``
  (``/info``) or importable here, with its version and content hash recorded in ``validation.json``;
- ``loss``: the custom loss points at the adapter's package with known kwargs.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.training.prime_rl.release import RELEASE, check_keys
from verifiers.training.prime_rl.render import RL_FILE, SPLIT_FILES
from verifiers.training.prime_rl.spec import LOSS_KWARGS, SPEC_FILE, RunSpec

VALIDATION_FILE = "validation.json"
_ROOTS = {
    "trainer.toml": "trainer:TrainerConfig",
    "orchestrator.toml": "orchestrator:OrchestratorConfig",
    "inference.toml": "inference:InferenceConfig",
}
#: Defaults of v0.5.0 used when a key is left out (configs/trainer.py, orchestrator.py, inference.py).
DEFAULT_SEQ_LEN = 2048
DEFAULT_ROLLOUTS_PER_EXAMPLE = 1
DEFAULT_BATCH_SIZE = 128


@dataclass(frozen=True)
class Problem:
    check: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.message}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    environments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, check: str, message: str) -> None:
        self.problems.append(Problem(check, message))


def _get(doc: dict[str, Any], dotted: str, default: Any = None) -> Any:
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _load(path: Path, report: Report) -> dict[str, Any] | None:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        report.add("files", f"{path.name} is missing (run vf-train render)")
    except tomllib.TOMLDecodeError as exc:
        report.add("files", f"{path.name} is not valid TOML: {exc}")
    return None


def validate(run_dir: Path, *, probe_envs: bool = True, timeout: float = 3.0) -> Report:
    report = Report()
    rl = _load(run_dir / RL_FILE, report)
    try:
        spec: RunSpec | None = RunSpec.read(run_dir)
    except FileNotFoundError:
        report.add("files", f"{SPEC_FILE} is missing (run vf-train render)")
        spec = None
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        report.add("files", f"{SPEC_FILE}: {exc}".replace("\n", " "))
        spec = None
    if rl is None:
        return report
    for p in check_keys(rl):
        report.add("keys", f"{RL_FILE}: {p}")
    splits: dict[str, dict[str, Any]] = {}
    for name in SPLIT_FILES:
        if (run_dir / name).exists() and (doc := _load(run_dir / name, report)) is not None:
            splits[name] = doc
            for p in check_keys(doc, _ROOTS[name]):
                report.add("keys", f"{name}: {p}")
    _check_batch(rl, report)
    _check_lengths(rl, spec, report)
    _check_gpus(rl, report)
    _check_ranks(rl, splits, report)
    _check_nodes(rl, spec, splits, run_dir, report)
    _check_loss(rl, spec, report)
    if spec is not None:
        _check_envs(rl, spec, report, probe=probe_envs, timeout=timeout)
        (run_dir / VALIDATION_FILE).write_text(
            json.dumps(
                {
                    "release": RELEASE,
                    "ok": report.ok,
                    "problems": [str(p) for p in report.problems],
                    "environments": report.environments,
                },
                indent=1,
            )
            + "\n"
        )
    return report


def _check_batch(rl: dict[str, Any], report: Report) -> None:
    rpe = int(_get(rl, "orchestrator.rollouts_per_example", DEFAULT_ROLLOUTS_PER_EXAMPLE))
    if _get(rl, "orchestrator.token_batch_size") is not None:
        return
    batch = int(_get(rl, "orchestrator.batch_size", DEFAULT_BATCH_SIZE))
    if rpe > 0 and batch % rpe:
        report.add(
            "batch",
            f"orchestrator.batch_size = {batch} (rollouts per step) is not divisible by "
            f"orchestrator.rollouts_per_example = {rpe}; e.g. {batch // rpe * rpe or rpe} or {(batch // rpe + 1) * rpe}",
        )


def _seq_lens(rl: dict[str, Any]) -> tuple[int, int]:
    shared = _get(rl, "seq_len")
    orch = _get(rl, "orchestrator.seq_len", shared if shared is not None else DEFAULT_SEQ_LEN)
    trainer = _get(rl, "trainer.model.seq_len", shared if shared is not None else DEFAULT_SEQ_LEN)
    return int(orch), int(trainer)


def _check_lengths(rl: dict[str, Any], spec: RunSpec | None, report: Report) -> None:
    orch, trainer = _seq_lens(rl)
    max_tokens = _get(rl, "orchestrator.sampling.max_tokens")
    budget = spec.prompt_budget if spec is not None else 0
    if max_tokens is None:
        report.add(
            "lengths", "orchestrator.sampling.max_tokens is unset: generation is bounded only by the context"
        )
    elif budget + int(max_tokens) > orch:
        report.add(
            "lengths",
            f"prompt budget {budget} + orchestrator.sampling.max_tokens {max_tokens} = {budget + int(max_tokens)} "
            f"exceeds orchestrator.seq_len {orch}",
        )
    if orch > trainer:
        report.add("lengths", f"orchestrator.seq_len {orch} exceeds trainer.model.seq_len {trainer}")
    max_model_len = _get(rl, "inference.model.max_model_len")
    if _get(rl, "inference") is not None:
        if max_model_len is None:
            report.add(
                "lengths", "[inference.model] max_model_len is unset (vLLM then uses the model's own limit)"
            )
        elif orch > int(max_model_len):
            report.add(
                "lengths",
                f"orchestrator.seq_len {orch} exceeds [inference.model] max_model_len {max_model_len}",
            )


def _check_gpus(rl: dict[str, Any], report: Report) -> None:
    dep = _get(rl, "deployment", {}) or {}
    gpn = int(dep.get("gpus_per_node", 8))
    tp = int(_get(rl, "inference.parallel.tp", 1))
    dp = _get(rl, "inference.parallel.dp")
    if dep.get("type", "single_node") == "single_node":
        train, infer = int(dep.get("num_train_gpus", 1)), int(dep.get("num_infer_gpus", 1))
        teacher = int(dep.get("num_teacher_gpus") or 0)
        if train + infer + teacher > gpn:
            report.add(
                "gpus",
                f"deployment: {train} trainer + {infer} inference + {teacher} teacher GPUs exceed gpus_per_node {gpn}",
            )
        if _get(rl, "inference") is not None:
            if infer % tp:
                report.add(
                    "gpus",
                    f"deployment.num_infer_gpus {infer} is not divisible by inference.parallel.tp {tp}",
                )
            elif dp is not None and int(dp) * tp != infer:
                report.add(
                    "gpus",
                    f"inference.parallel tp {tp} × dp {dp} = {int(dp) * tp} != deployment.num_infer_gpus {infer}",
                )
    else:
        per_node = tp * int(dp if dp is not None else 1)
        if per_node > gpn:
            report.add(
                "gpus", f"inference.parallel tp {tp} × dp {dp or 1} = {per_node} exceeds gpus_per_node {gpn}"
            )
        if gpn % tp:
            report.add("gpus", f"gpus_per_node {gpn} is not divisible by inference.parallel.tp {tp}")


def _expected_workers(rl: dict[str, Any]) -> int:
    dep = _get(rl, "deployment", {}) or {}
    if dep.get("type", "single_node") == "multi_node":
        return int(dep.get("num_train_nodes", 0)) * int(dep.get("gpus_per_node", 8))
    train = int(dep.get("num_train_gpus", 1))
    cp = int(_get(rl, "trainer.model.cp", 1))
    return train // cp if train > 1 else 1


def _check_ranks(rl: dict[str, Any], splits: dict[str, dict[str, Any]], report: Report) -> None:
    expected = _expected_workers(rl)
    if expected < 1:
        report.add("ranks", "the deployment leaves the trainer no data-parallel rank")
    for where, doc in (
        ("rl.toml", _get(rl, "orchestrator", {})),
        ("orchestrator.toml", splits.get("orchestrator.toml")),
    ):
        if doc and "num_train_workers" in doc and int(doc["num_train_workers"]) != expected:
            report.add(
                "ranks",
                f"{where}: orchestrator num_train_workers = {doc['num_train_workers']} but the trainer has {expected} "
                "data-parallel ranks (trainer GPUs / context parallel)",
            )
    batch = _get(rl, "orchestrator.batch_size")
    if batch is not None and expected > 0 and int(batch) < expected:
        report.add("ranks", f"orchestrator.batch_size {batch} is smaller than the {expected} trainer ranks")


def _check_nodes(
    rl: dict[str, Any], spec: RunSpec | None, splits: dict[str, dict[str, Any]], run_dir: Path, report: Report
) -> None:
    dep = _get(rl, "deployment", {}) or {}
    urls = _get(rl, "orchestrator.client.base_url")
    if dep.get("type", "single_node") == "single_node":
        if urls is not None and len(urls) != 1:
            report.add(
                "nodes", f"single node: orchestrator.client.base_url should be one URL, got {len(urls)}"
            )
        return
    n_infer, n_train = int(dep.get("num_infer_nodes", 0)), int(dep.get("num_train_nodes", 0))
    if urls is None or len(urls) != n_infer:
        report.add(
            "nodes",
            f"deployment.num_infer_nodes = {n_infer} but orchestrator.client.base_url lists {len(urls or [])} URLs",
        )
    split_urls = _get(splits.get("orchestrator.toml", {}), "client.base_url")
    if split_urls is not None and urls is not None and split_urls != urls:
        report.add("nodes", "orchestrator.toml client.base_url differs from rl.toml's")
    if spec is not None:
        if len(spec.nodes.inference) != n_infer:
            report.add(
                "nodes",
                f"vf-train.toml lists {len(spec.nodes.inference)} inference nodes, deployment {n_infer}",
            )
        if len(spec.nodes.trainer) != n_train:
            report.add(
                "nodes", f"vf-train.toml lists {len(spec.nodes.trainer)} trainer nodes, deployment {n_train}"
            )
        hosts = {u.split("//", 1)[-1].split(":", 1)[0].split("/", 1)[0] for u in urls or []}
        missing = [h for h in spec.nodes.inference if h not in hosts]
        if missing and urls:
            report.add("nodes", f"inference nodes without a base URL: {', '.join(missing[:5])}")
        sbatch = run_dir / "intellect3.sbatch"
        if sbatch.exists():
            for line in sbatch.read_text().splitlines():
                if line.startswith("#SBATCH --nodes=") and int(line.split("=", 1)[1]) != n_infer + n_train:
                    report.add(
                        "nodes",
                        f"intellect3.sbatch asks for {line.split('=', 1)[1]} nodes, deployment {n_infer + n_train}",
                    )


def _check_loss(rl: dict[str, Any], spec: RunSpec | None, report: Report) -> None:
    loss = _get(rl, "trainer.loss", {}) or {}
    if loss.get("type") != "custom":
        return
    expected = spec.loss_import_path if spec is not None else None
    if expected is not None and loss.get("import_path") != expected:
        report.add(
            "loss", f"trainer.loss.import_path = {loss.get('import_path')!r}; the adapter ships {expected!r}"
        )
    if loss.get("import_path") == expected:
        unknown = sorted(set(loss.get("kwargs", {})) - set(LOSS_KWARGS))
        if unknown:
            report.add(
                "loss", f"trainer.loss.kwargs: unknown {unknown}; the IcePop loss takes {sorted(LOSS_KWARGS)}"
            )


def _check_envs(rl: dict[str, Any], spec: RunSpec, report: Report, *, probe: bool, timeout: float) -> None:
    tables = _get(rl, "orchestrator.env", []) or []
    by_id = {t.get("id"): t for t in tables if isinstance(t, dict)}
    for e in spec.env:
        t = by_id.get(e.bridge_distribution)
        if t is None:
            report.add(
                "envs", f"no [[orchestrator.env]] with id = {e.bridge_distribution!r} (the bridge of {e.id})"
            )
        elif t.get("address") != e.zmq_address:
            report.add(
                "envs",
                f"[[orchestrator.env]] {e.bridge_distribution}: address {t.get('address')!r} != vf-serve's {e.zmq_address!r}",
            )
    known = {e.bridge_distribution for e in spec.env}
    for t in tables:
        if isinstance(t, dict) and t.get("id") not in known:
            report.add(
                "envs", f"[[orchestrator.env]] id = {t.get('id')!r} has no environment in vf-train.toml"
            )
    ratios = _get(rl, "orchestrator.buffer.env_ratios")
    if ratios is not None and len(ratios) != len(tables):
        report.add(
            "envs", f"orchestrator.buffer.env_ratios has {len(ratios)} entries for {len(tables)} environments"
        )
    if ratios is not None and any(r <= 0 for r in ratios):
        report.add("envs", "orchestrator.buffer.env_ratios must all be positive")
    if probe:
        for e in spec.env:
            report.environments.append(_probe_env(e.id, e.http_url, e.version, e.args, report, timeout))


def _probe_env(
    env_id: str, url: str, pinned: str, args: dict[str, Any], report: Report, timeout: float
) -> dict[str, Any]:
    """Reachable at its vf-serve (``/info``), else importable here; version and content hash recorded."""
    import httpx

    try:
        info = httpx.get(f"{url}/info", timeout=timeout).json()
        rec = {
            "id": env_id,
            "source": url,
            "version": info.get("env_version") or info.get("version"),
            "content_hash": info.get("env_content_hash") or info.get("content_hash"),
        }
        served_args = info.get("env_args")
        if isinstance(served_args, dict) and served_args != args:
            report.add(
                "envs", f"{env_id}: vf-serve at {url} runs env args {served_args}, vf-train.toml says {args}"
            )
    except (httpx.HTTPError, ValueError):
        from verifiers.envs.loading import import_environment_module
        from verifiers.hub.packaging import content_hash_of_module

        try:
            _, source = import_environment_module(env_id)
        except Exception as exc:  # EnvNotFoundError or an env's own import error: say which
            report.add("envs", f"{env_id}: not reachable at {url} and not importable here ({exc})")
            return {"id": env_id, "source": None, "version": None, "content_hash": None}
        rec = {
            "id": env_id,
            "source": "import",
            "version": source.version,
            "content_hash": content_hash_of_module(source.module_path) if source.module_path else None,
        }
    if pinned and rec["version"] and rec["version"] != pinned:
        report.add("envs", f"{env_id}: vf-train.toml pins {pinned} but {rec['source']} has {rec['version']}")
    return rec
