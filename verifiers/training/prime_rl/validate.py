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
- ``models``: every model and tokenizer name prime-rl resolves the run to (``resolved.model_names``)
  is the run's model;
- ``names``: ids, hostnames, node names and the Slurm job name are plain names (they end up in generated
  code, shell scripts and batch files);
- ``loss``: the custom loss points at the adapter's package, and its kwargs pass the loss's own check
  (``vf_icepop_loss.check_kwargs``, what the loss would raise at its first GPU step);
- ``envs`` with a running ``vf-serve``: it runs the run's env args, ``seq_len`` and scoring.

Every check reports: its problems, one line each, or one line saying what it verified. Nothing here
raises on a bad value: a value of the wrong type is a ``[keys]`` problem and the checks that need it say
they were skipped; ``validation.json`` is written whatever was found.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from verifiers._urls import redact_url
from verifiers.training.prime_rl import resolved
from verifiers.training.prime_rl.release import RELEASE, check_keys
from verifiers.training.prime_rl.render import RL_FILE, SPLIT_FILES
from verifiers.training.prime_rl.resolved import as_int
from verifiers.training.prime_rl.spec import LOSS_KWARGS, NAME, SPEC_FILE, RunSpec, spec_errors

VALIDATION_FILE = "validation.json"
_ROOTS = {
    "trainer.toml": "trainer:TrainerConfig",
    "orchestrator.toml": "orchestrator:OrchestratorConfig",
    "inference.toml": "inference:InferenceConfig",
}
#: Defaults of v0.5.0 used when a key is left out (configs/trainer.py, orchestrator.py, inference.py).
DEFAULT_SEQ_LEN = resolved.DEFAULT_SEQ_LEN
DEFAULT_ROLLOUTS_PER_EXAMPLE = 1
DEFAULT_BATCH_SIZE = 128
#: The checks, in the order they are reported.
CHECKS = ("files", "keys", "names", "models", "batch", "lengths", "gpus", "ranks", "nodes", "loss", "envs")


class Skip(Exception):
    """A check that cannot run because a value it needs has the wrong type (``[keys]`` says which)."""


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
    #: Per check that found nothing: what it verified (or why it was skipped), one line.
    passed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, check: str, message: str) -> None:
        self.problems.append(Problem(check, message.replace("\n", " ")))

    def run(self, check: str, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Run one check; it returns what it verified. A check never takes validate down: a value it
        cannot use is a skip, anything else it trips over is a problem line of its own."""
        before = len(self.problems)
        try:
            summary = fn(*args, **kwargs)
        except Skip as exc:
            summary = f"skipped: {exc}"
        except Exception as exc:  # a check's own bug, or a value no rule foresaw: say so, keep going
            self.add(check, f"could not be checked: {type(exc).__name__}: {exc}")
            return
        if len(self.problems) == before and summary:
            self.passed[check] = str(summary)

    def lines(self) -> list[str]:
        """Every check, in order: its problems, or one line saying what it verified."""
        out = []
        for check in CHECKS:
            mine = [str(p) for p in self.problems if p.check == check]
            if mine:
                out += mine
            elif check in self.passed:
                out.append(f"[{check}] ok: {self.passed[check]}")
        out += [str(p) for p in self.problems if p.check not in CHECKS]
        return out


_get = resolved.get


def _table(doc: dict[str, Any], dotted: str) -> dict[str, Any]:
    """A table setting (empty when left out); ``Skip`` when it is a value of another type."""
    value = _get(doc, dotted, {})
    if not isinstance(value, dict):
        raise Skip(f"{dotted} = {value!r} is not a table")
    return value


def _int(doc: dict[str, Any], dotted: str, default: int | None = None) -> int:
    """An integer setting (its default when left out); ``Skip`` when it has another type."""
    value = _get(doc, dotted, default)
    number = as_int(value)
    if number is None:
        raise Skip(f"{dotted} = {value!r} is not an integer")
    return number


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
    spec: RunSpec | None = None
    try:
        spec = RunSpec.read(run_dir)
    except FileNotFoundError:
        report.add("files", f"{SPEC_FILE} is missing (run vf-train render)")
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        for problem in spec_errors(exc):  # one line each: a count that matches what is listed
            report.add("files", f"{SPEC_FILE}: {problem}")
    splits: dict[str, dict[str, Any]] = {}
    if rl is not None:
        for name in SPLIT_FILES:
            if (run_dir / name).exists() and (doc := _load(run_dir / name, report)) is not None:
                splits[name] = doc
        present = ", ".join([RL_FILE, SPEC_FILE, *splits])
        report.run("files", lambda: f"{present} read")
        report.run("keys", _check_keys, rl, splits, report)
        report.run("names", _check_names, rl, report)
        report.run("models", _check_models, rl, spec, splits, report)
        report.run("batch", _check_batch, rl, report)
        report.run("lengths", _check_lengths, rl, spec, report)
        report.run("gpus", _check_gpus, rl, report)
        report.run("ranks", _check_ranks, rl, splits, report)
        report.run("nodes", _check_nodes, rl, spec, splits, run_dir, report)
        report.run("loss", _check_loss, rl, spec, report)
        if spec is not None:
            report.run("envs", _check_envs, rl, spec, report, probe=probe_envs, timeout=timeout)
    if run_dir.is_dir():
        (run_dir / VALIDATION_FILE).write_text(
            json.dumps(
                {
                    "release": RELEASE,
                    "ok": report.ok,
                    "problems": [str(p) for p in report.problems],
                    "checks": report.lines(),
                    "environments": report.environments,
                },
                indent=1,
            )
            + "\n"
        )
    return report


def _check_keys(rl: dict[str, Any], splits: dict[str, dict[str, Any]], report: Report) -> str:
    for p in check_keys(rl):
        report.add("keys", f"{RL_FILE}: {p}")
    for name, doc in splits.items():
        for p in check_keys(doc, _ROOTS[name]):
            report.add("keys", f"{name}: {p}")
    files = ", ".join([RL_FILE, *splits])
    return f"every key of {files} is a field of prime-rl {RELEASE}, with a value of its type and bounds"


def _check_names(rl: dict[str, Any], report: Report) -> str:
    """Names that end up in shell scripts, batch files and generated code: plain names only."""
    job = _get(rl, "slurm.job_name")
    if job is not None and not (isinstance(job, str) and NAME.fullmatch(job)):
        report.add("names", f"slurm.job_name = {job!r}: use letters, digits, '.', '_' and '-' only")
    envs = _get(rl, "orchestrator.env", [])
    for i, t in enumerate(envs if isinstance(envs, list) else []):
        if not isinstance(t, dict):
            continue
        for key in ("id", "name"):
            v = t.get(key)
            if v is not None and not (isinstance(v, str) and NAME.fullmatch(v)):
                report.add(
                    "names",
                    f"orchestrator.env[{i}].{key} = {v!r}: use letters, digits, '.', '_' and '-' only",
                )
    return "environment ids, hostnames, node names and the Slurm job name are plain names"


def _check_models(
    rl: dict[str, Any], spec: RunSpec | None, splits: dict[str, dict[str, Any]], report: Report
) -> str:
    """Every model and tokenizer name prime-rl resolves the run to is the run's model (v0.5.0 resolves an
    unset trainer tokenizer to Qwen/Qwen3-0.6B whatever the model is)."""
    model = spec.model if spec is not None else _get(rl, "model.name")
    if not isinstance(model, str):
        raise Skip("no model name (vf-train.toml model or rl.toml [model] name)")
    for key, name in resolved.model_names(rl).items():
        if name != model:
            report.add(
                "models",
                f"rl.toml resolves {key} to {name!r}, not the run's model {model!r}: set {key} = {model!r}",
            )
    for file, keys in (
        ("trainer.toml", ("model.name", "tokenizer.name")),
        ("orchestrator.toml", ("model.name",)),
        ("inference.toml", ("model.name",)),
    ):
        doc = splits.get(file)
        if doc is None:
            continue
        for key in keys:
            name = _get(doc, key)
            if key == "tokenizer.name" and name is None:
                name = _get(doc, "model.name", resolved.DEFAULT_MODEL)
            if name != model:
                report.add("models", f"{file}: {key} is {name!r}, not the run's model {model!r}")
    return f"every model and tokenizer name resolves to {model!r}"


def _check_batch(rl: dict[str, Any], report: Report) -> str:
    rpe = _int(rl, "orchestrator.rollouts_per_example", DEFAULT_ROLLOUTS_PER_EXAMPLE)
    if _get(rl, "orchestrator.token_batch_size") is not None:
        return "orchestrator.token_batch_size is set: batches count tokens, not rollouts"
    batch = _int(rl, "orchestrator.batch_size", DEFAULT_BATCH_SIZE)
    if rpe > 0 and batch % rpe:
        report.add(
            "batch",
            f"orchestrator.batch_size = {batch} (rollouts per step) is not divisible by "
            f"orchestrator.rollouts_per_example = {rpe}; e.g. {batch // rpe * rpe or rpe} or {(batch // rpe + 1) * rpe}",
        )
    return f"orchestrator.batch_size {batch} = {batch // max(rpe, 1)} prompts x rollouts_per_example {rpe}"


def _seq_lens(rl: dict[str, Any]) -> tuple[int, int]:
    orch, trainer = resolved.seq_lens(rl)
    if orch is None or trainer is None:
        raise Skip("seq_len, orchestrator.seq_len or trainer.model.seq_len is not an integer")
    return orch, trainer


def _check_lengths(rl: dict[str, Any], spec: RunSpec | None, report: Report) -> str:
    orch, trainer = _seq_lens(rl)
    max_tokens = _get(rl, "orchestrator.sampling.max_tokens")
    # Without a readable vf-train.toml the prompt budget is unknown, not 0.
    budget = spec.prompt_budget if spec is not None else None
    if max_tokens is None:
        report.add(
            "lengths", "orchestrator.sampling.max_tokens is unset: generation is bounded only by the context"
        )
    else:
        max_tokens = _int(rl, "orchestrator.sampling.max_tokens")
        if budget is not None and budget + max_tokens > orch:
            report.add(
                "lengths",
                f"prompt budget {budget} + orchestrator.sampling.max_tokens {max_tokens} = {budget + max_tokens} "
                f"exceeds orchestrator.seq_len {orch}",
            )
    if orch > trainer:
        report.add("lengths", f"orchestrator.seq_len {orch} exceeds trainer.model.seq_len {trainer}")
    shown = (
        f"prompt budget {budget}" if budget is not None else f"prompt budget unknown ({SPEC_FILE} unreadable)"
    )
    line = (
        f"{shown} + max_tokens {max_tokens} <= orchestrator.seq_len {orch} <= trainer.model.seq_len {trainer}"
    )
    if _get(rl, "inference") is not None:
        if _get(rl, "inference.model.max_model_len") is None:
            report.add(
                "lengths", "[inference.model] max_model_len is unset (vLLM then uses the model's own limit)"
            )
        else:
            max_model_len = _int(rl, "inference.model.max_model_len")
            if orch > max_model_len:
                report.add(
                    "lengths",
                    f"orchestrator.seq_len {orch} exceeds [inference.model] max_model_len {max_model_len}",
                )
            line += f", <= [inference.model] max_model_len {max_model_len}"
    return line


def _check_gpus(rl: dict[str, Any], report: Report) -> str:
    dep = _table(rl, "deployment")
    gpn = _int(rl, "deployment.gpus_per_node", 8)
    tp = _int(rl, "inference.parallel.tp", 1)
    dp = _int(rl, "inference.parallel.dp") if _get(rl, "inference.parallel.dp") is not None else None
    if tp < 1 or (dp is not None and dp < 1) or gpn < 1:
        raise Skip("a GPU count or parallel size is below 1 (see [keys])")
    if dep.get("type", "single_node") == "single_node":
        train, infer = _int(rl, "deployment.num_train_gpus", 1), _int(rl, "deployment.num_infer_gpus", 1)
        teacher = _int(rl, "deployment.num_teacher_gpus", 0) if dep.get("num_teacher_gpus") is not None else 0
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
            elif dp is not None and dp * tp != infer:
                report.add(
                    "gpus",
                    f"inference.parallel tp {tp} × dp {dp} = {dp * tp} != deployment.num_infer_gpus {infer}",
                )
        return f"{train} trainer + {infer} inference + {teacher} teacher GPUs fit {gpn} per node; inference tp {tp} x dp {dp or infer // tp}"
    per_node = tp * (dp if dp is not None else 1)
    if per_node > gpn:
        report.add(
            "gpus", f"inference.parallel tp {tp} × dp {dp or 1} = {per_node} exceeds gpus_per_node {gpn}"
        )
    if gpn % tp:
        report.add("gpus", f"gpus_per_node {gpn} is not divisible by inference.parallel.tp {tp}")
    return f"inference tp {tp} x dp {dp or 1} per node fits {gpn} GPUs per node"


def _expected_workers(rl: dict[str, Any]) -> int:
    dep = _table(rl, "deployment")
    if dep.get("type", "single_node") == "multi_node":
        return _int(rl, "deployment.num_train_nodes", 0) * _int(rl, "deployment.gpus_per_node", 8)
    train = _int(rl, "deployment.num_train_gpus", 1)
    cp = _int(rl, "trainer.model.cp", 1)
    if cp < 1:
        raise Skip("trainer.model.cp is below 1")
    return train // cp if train > 1 else 1


def _check_ranks(rl: dict[str, Any], splits: dict[str, dict[str, Any]], report: Report) -> str:
    expected = _expected_workers(rl)
    if expected < 1:
        report.add("ranks", "the deployment leaves the trainer no data-parallel rank")
    for where, doc in (
        ("rl.toml", _get(rl, "orchestrator", {})),
        ("orchestrator.toml", splits.get("orchestrator.toml")),
    ):
        if isinstance(doc, dict) and "num_train_workers" in doc and doc["num_train_workers"] != expected:
            report.add(
                "ranks",
                f"{where}: orchestrator num_train_workers = {doc['num_train_workers']} but the trainer has {expected} "
                "data-parallel ranks (trainer GPUs / context parallel)",
            )
    batch = as_int(_get(rl, "orchestrator.batch_size"))
    if batch is not None and expected > 0 and batch < expected:
        report.add("ranks", f"orchestrator.batch_size {batch} is smaller than the {expected} trainer ranks")
    return f"the orchestrator feeds the trainer's {expected} data-parallel rank(s)"


def _check_nodes(
    rl: dict[str, Any], spec: RunSpec | None, splits: dict[str, dict[str, Any]], run_dir: Path, report: Report
) -> str:
    dep = _table(rl, "deployment")
    urls = _get(rl, "orchestrator.client.base_url")
    if urls is not None and not (isinstance(urls, list) and all(isinstance(u, str) for u in urls)):
        raise Skip("orchestrator.client.base_url is not a list of URLs")
    if dep.get("type", "single_node") == "single_node":
        if urls is not None and len(urls) != 1:
            report.add(
                "nodes", f"single node: orchestrator.client.base_url should be one URL, got {len(urls)}"
            )
        return "single node: one inference base URL"
    n_infer, n_train = _int(rl, "deployment.num_infer_nodes", 0), _int(rl, "deployment.num_train_nodes", 0)
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
                if line.startswith("#SBATCH --nodes=") and line.split("=", 1)[1].strip() != str(
                    n_infer + n_train
                ):
                    report.add(
                        "nodes",
                        f"intellect3.sbatch asks for {line.split('=', 1)[1]} nodes, deployment {n_infer + n_train}",
                    )
    return f"{n_infer} inference + {n_train} trainer nodes: node lists, base URLs and the batch file agree"


def _check_loss(rl: dict[str, Any], spec: RunSpec | None, report: Report) -> str:
    loss = _table(rl, "trainer.loss")
    if loss.get("type") != "custom":
        return f"trainer.loss is prime-rl's built-in {loss.get('type', 'default')!r} loss"
    expected = spec.loss_import_path if spec is not None else None
    if expected is not None and loss.get("import_path") != expected:
        report.add(
            "loss", f"trainer.loss.import_path = {loss.get('import_path')!r}; the adapter ships {expected!r}"
        )
        return ""
    kwargs = loss.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise Skip("trainer.loss.kwargs is not a table")
    unknown = sorted(set(kwargs) - set(LOSS_KWARGS))
    if unknown:
        report.add(
            "loss", f"trainer.loss.kwargs: unknown {unknown}; the IcePop loss takes {sorted(LOSS_KWARGS)}"
        )
        return ""
    try:
        _loss_module().check_kwargs(**kwargs)
    except (TypeError, ValueError) as exc:
        report.add("loss", f"trainer.loss.kwargs: {exc} (the loss would refuse it at its first step)")
    return f"{expected}: kwargs {dict(sorted({**LOSS_KWARGS, **kwargs}.items()))} pass the loss's own check"


@cache
def _loss_module() -> Any:
    """The shipped loss module itself (its ``check_kwargs`` needs no torch), loaded from the package."""
    import importlib.util
    import sys

    from verifiers.training.prime_rl.bridge import LOSS_SOURCE
    from verifiers.training.prime_rl.spec import LOSS_MODULE

    name = f"_vf_train_{LOSS_MODULE}"
    spec = importlib.util.spec_from_file_location(name, LOSS_SOURCE / f"{LOSS_MODULE}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _check_envs(rl: dict[str, Any], spec: RunSpec, report: Report, *, probe: bool, timeout: float) -> str:
    tables = _get(rl, "orchestrator.env", [])
    if not isinstance(tables, list):
        raise Skip("orchestrator.env is not a list of tables")
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
    if ratios is not None and not (
        isinstance(ratios, list)
        and all(isinstance(r, int | float) and not isinstance(r, bool) for r in ratios)
    ):
        raise Skip("orchestrator.buffer.env_ratios is not a list of numbers")
    if ratios is not None and len(ratios) != len(tables):
        report.add(
            "envs", f"orchestrator.buffer.env_ratios has {len(ratios)} entries for {len(tables)} environments"
        )
    if ratios is not None and any(r <= 0 for r in ratios):
        report.add("envs", "orchestrator.buffer.env_ratios must all be positive")
    serve = _serve_settings(rl)
    if probe:
        for e in spec.env:
            report.environments.append(
                _probe_env(e.id, e.http_url, e.version, e.args, serve, report, timeout)
            )
    ids = ", ".join(e.id for e in spec.env)
    where = "reachable or importable, versions recorded" if probe else "not probed (--no-probe)"
    return f"{ids}: each wired to its vf-serve at its address; {where}"


def _serve_settings(rl: dict[str, Any]) -> dict[str, Any]:
    """What ``vf-serve`` must run with for this run (what launch passes it): the orchestrator's seq_len
    and the run's scoring."""
    seq_len, _ = resolved.seq_lens(rl)
    return {"max_seq_len": seq_len, "score_rollouts": resolved.score_rollouts(rl)}


def _probe_env(
    env_id: str,
    url: str,
    pinned: str,
    args: dict[str, Any],
    serve: dict[str, Any],
    report: Report,
    timeout: float,
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
                "envs",
                f"{env_id}: vf-serve at {redact_url(url)} runs env args {served_args}, vf-train.toml says {args}",
            )
        for key, want in serve.items():
            if key in info and info[key] != want:
                flag = {
                    "max_seq_len": f"--max-seq-len {want}",
                    "score_rollouts": "--score-rollouts" if want else "--no-score-rollouts",
                }[key]
                report.add(
                    "envs",
                    f"{env_id}: vf-serve at {redact_url(url)} runs {key} = {info[key]!r} but the run needs {want!r} "
                    f"(restart it with {flag}, as vf-train launch does)",
                )
    except (httpx.HTTPError, ValueError):
        from verifiers.envs.loading import import_environment_module
        from verifiers.hub.packaging import content_hash_of_module

        try:
            _, source = import_environment_module(env_id)
        except Exception as exc:  # EnvNotFoundError or an env's own import error: say which
            report.add(
                "envs", f"{env_id}: not reachable at {redact_url(url)} and not importable here ({exc})"
            )
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
