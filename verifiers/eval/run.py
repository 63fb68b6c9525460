"""An evaluation run: row selection, the run directory, resume, live metadata and the final summary."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from verifiers.clients import Client
from verifiers.clients.sampling import cap_max_tokens
from verifiers.eval.engine import GroupPlan, ProgressCallback, RolloutEnv, RunProgress, ScoreMode, schedule
from verifiers.eval.metrics import RunAggregate
from verifiers.eval.results import RunDirectory, unique_records, utc_now
from verifiers.eval.runs import ResumeMismatchError
from verifiers.types import Row, RunCounts, RunMetadata, RunStatus, SamplingArgs, State

#: How often (at most) metadata.json is rewritten while a run progresses.
METADATA_INTERVAL_S = 1.0


class EvaluableEnv(RolloutEnv, Protocol):
    """What an evaluation run needs on top of the engine's protocol: identity, rows and records."""

    env_id: str
    env_version: str
    env_content_hash: str
    env_args: dict[str, Any]
    #: Wall-clock budget per rollout in seconds (``None``: none).
    timeout: float | None

    def select_rows(
        self, num_examples: int = -1, *, seed: int | None = None, shuffle: bool = False, split: str = "eval"
    ) -> list[Row]: ...

    def result_record(self, state: State) -> dict[str, Any]: ...

    def sampling_families(self, run_args: SamplingArgs | None) -> dict[str, SamplingArgs]:
        """What each request family (one per environment of a group) sends, by name."""
        ...


@dataclass
class EvalRun:
    """What ``evaluate`` returns: the final metadata and every rollout record of the run (including
    those completed by earlier, resumed attempts)."""

    metadata: RunMetadata
    results: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    @property
    def rewards(self) -> list[float | None]:
        return [r.get("reward") for r in self.results]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r.get("error") is not None]


def sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verifiers-sdk")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def _check_resume(meta: RunMetadata, want: RunMetadata, path: Path) -> None:
    checks = {
        "env_id": (meta.env_id, want.env_id),
        "model": (meta.model, want.model),
        "num_examples": (meta.num_examples, want.num_examples),
        "rollouts_per_example": (meta.rollouts_per_example, want.rollouts_per_example),
        "seed": (meta.seed, want.seed),
        "shuffle": (meta.shuffle, want.shuffle),
        "env_args": (meta.env_args, want.env_args),
        "sampling_args": (meta.sampling_args, want.sampling_args),
        "sampling_args_by_env": (meta.sampling_args_by_env, want.sampling_args_by_env),
    }
    diffs = [f"{k}: run has {a!r}, now {b!r}" for k, (a, b) in checks.items() if a != b]
    if diffs:
        raise ResumeMismatchError(
            f"cannot resume {path}: it was made with different settings ({'; '.join(diffs)})"
        )


async def run_eval(
    env: EvaluableEnv,
    client: Client,
    model: str,
    *,
    num_examples: int = -1,
    rollouts_per_example: int = 1,
    max_concurrent: int = 32,
    sampling_args: SamplingArgs | None = None,
    seed: int | None = None,
    shuffle: bool = False,
    score: ScoreMode = "group",
    output_dir: Path | None = None,
    resume: bool = False,
    progress: RunProgress | None = None,
    on_group: ProgressCallback | None = None,
    pass_threshold: float = 1.0,
    max_tokens_limit: int | None = None,
) -> EvalRun:
    """Run (or, with ``resume``, complete) an evaluation of ``env`` and keep its run directory.

    ``sampling_args`` is the run's layer: each request family sends its environment's defaults under it
    (capped at ``max_tokens_limit``), and that is what the metadata records — ``sampling_args`` when every
    family sends the same, else the families' by name in ``sampling_args_by_env`` (with the run's layer
    in ``sampling_args``)."""
    if rollouts_per_example < 1:
        raise ValueError("rollouts_per_example must be at least 1")
    rows = env.select_rows(num_examples, seed=seed, shuffle=shuffle)
    families = {
        name: cap_max_tokens(args, max_tokens_limit)
        for name, args in env.sampling_families(sampling_args).items()
    }
    distinct = {orjson.dumps(a, option=orjson.OPT_SORT_KEYS) for a in families.values()}
    by_env: dict[str, SamplingArgs] = families if len(distinct) > 1 else {}
    recorded = (
        next(iter(families.values()))
        if len(distinct) == 1
        else cap_max_tokens(env.request_sampling_args(sampling_args), max_tokens_limit)
    )
    meta = RunMetadata(
        env_id=env.env_id,
        env_version=env.env_version,
        env_content_hash=env.env_content_hash,
        sdk_version=sdk_version(),
        env_args=env.env_args,
        model=model,
        base_url=client.base_urls if len(client.base_urls) > 1 else client.base_urls[0],
        sampling_args=dict(recorded),
        sampling_args_by_env={k: dict(v) for k, v in by_env.items()},
        num_examples=len(rows),
        rollouts_per_example=rollouts_per_example,
        seed=seed,
        shuffle=shuffle,
        started_at=utc_now(),
        counts=RunCounts(planned=len(rows) * rollouts_per_example),
    )
    agg = RunAggregate(pass_threshold=pass_threshold)
    previous: list[dict[str, Any]] = []
    run_dir = RunDirectory(output_dir) if output_dir is not None else None
    if run_dir is not None:
        old = run_dir.read_metadata()
        if resume and old is not None:
            _check_resume(old, meta, run_dir.path)
            meta.started_at = old.started_at
            meta.duration_s = old.duration_s
            if old.env_content_hash != meta.env_content_hash:
                meta.extra["resumed_across_content_hashes"] = sorted(
                    {old.env_content_hash, meta.env_content_hash}
                )
            previous = run_dir.load_results(repair=True)
        elif run_dir.has_results() or old is not None:
            raise FileExistsError(
                f"{run_dir.path} already holds a run; pass resume=True (vf-eval --resume) to complete it, "
                "or choose another output directory"
            )
    done = unique_records(previous)
    previous = [dict(r) for r in done.values()]
    agg.add_all(previous)
    plans = [
        GroupPlan(row, missing)
        for row in rows
        if (missing := [i for i in range(rollouts_per_example) if (row["example_id"], i) not in done])
    ]
    results: list[dict[str, Any]] = list(previous)
    t_start = time.monotonic()
    base_duration = meta.duration_s
    last_write = 0.0

    def write(status: RunStatus, *, final: bool = False) -> None:
        nonlocal last_write
        meta.status = status
        agg.fill(meta)
        meta.duration_s = base_duration + (time.monotonic() - t_start)
        if final:
            meta.finished_at = utc_now()
        if run_dir is not None:
            run_dir.write_metadata(meta, durable=final)
        last_write = time.monotonic()

    def handle_group(states: Sequence[State]) -> None:
        records = [env.result_record(s) for s in states]
        if run_dir is not None:
            run_dir.append(records)
        agg.add_all(records)
        results.extend(records)
        if on_group is not None:
            on_group(states)
        if run_dir is not None and time.monotonic() - last_write >= METADATA_INTERVAL_S:
            write("running")

    if progress is not None:
        progress.done += len(previous)
        progress.generated += len(previous)
        progress.total += len(previous)
        progress.preloaded += len(previous)
        progress.started = time.monotonic()  # the rate counts from here, not from setup before the run
    if run_dir is not None:
        run_dir.open_for_append()
    write("running")
    status: RunStatus = "failed"
    try:
        await env.setup()
        try:
            await schedule(
                env,
                plans,
                client,
                model,
                max_concurrent=max_concurrent,
                sampling_args=sampling_args,
                score=score,
                on_group=handle_group,
                progress=progress,
                collect=False,
                max_tokens_limit=max_tokens_limit,
            )
        finally:
            await env.teardown()
        status = "completed"
    except (asyncio.CancelledError, KeyboardInterrupt):
        status = "cancelled"
        raise
    finally:
        if run_dir is not None:
            run_dir.close(durable=True)
        write(status, final=True)
    results.sort(key=lambda r: (r["example_id"], r["rollout_index"]))
    return EvalRun(metadata=meta, results=results, path=run_dir.path if run_dir else None)
