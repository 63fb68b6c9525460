"""Re-scoring a saved run with an environment's current rubric, without calling the model.

Use it to check a rubric fix on old completions: ``rescore(env, "outputs/evals/x--m/RUN")`` writes a new
run directory next to the original (never touching it) and returns old and new metadata.

Which rollouts are re-scored: those that finished generating — no error, or a ``scoring`` error (the
rubric failed last time, perhaps the very bug being fixed). A rollout whose generation failed (model,
infra or env error) has nothing to score; it is copied unchanged, error and all.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from verifiers.eval.engine import score_safely
from verifiers.eval.metrics import RunAggregate
from verifiers.eval.results import RunDirectory, unique_records, utc_now
from verifiers.eval.run import sdk_version
from verifiers.eval.sync import run_sync
from verifiers.types import RunMetadata, State


class RescoreError(ValueError):
    """The run cannot be re-scored (missing files, or made with a different environment)."""


class ScorableEnv(Protocol):
    env_id: str
    env_version: str
    env_content_hash: str

    async def score_group(self, states: Sequence[State]) -> None: ...

    async def setup(self) -> None: ...

    async def teardown(self) -> None: ...

    def result_record(self, state: State) -> dict[str, Any]: ...


@dataclass
class RescoreResult:
    """The re-scored run: new metadata and records, and the original run's metadata for comparison."""

    source: Path
    metadata: RunMetadata
    previous: RunMetadata
    results: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    #: Rollouts scored again, and rollouts copied unchanged because their generation had failed.
    rescored: int = 0
    kept: int = 0
    #: Rollouts whose reward changed (including from/to unscored).
    changed: int = 0


def default_output_dir(run_dir: Path) -> Path:
    """A sibling of the original run: ``<run>.rescored-<UTC timestamp>``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return run_dir.with_name(f"{run_dir.name}.rescored-{stamp}")


def _rescorable(record: Mapping[str, Any]) -> bool:
    err = record.get("error")
    return err is None or err.get("category") == "scoring"


def _to_state(record: Mapping[str, Any]) -> State:
    state = State(record)
    state["error"] = None
    state["reward"] = None
    state["metrics"] = {}
    timing = dict(state.get("timing") or {})
    timing["scoring"] = 0.0
    state["timing"] = timing
    return state


def load_metadata(run_dir: str | Path) -> RunMetadata:
    """The metadata of a saved run (which environment, with which ``env_args``), without its records."""
    rd = RunDirectory(run_dir)
    try:
        meta = rd.read_metadata()
    except ValueError as exc:
        raise RescoreError(f"{rd.metadata_path} is not valid run metadata: {exc}") from None
    if meta is None:
        raise RescoreError(f"{rd.path} is not a run directory (no {rd.metadata_path.name})")
    return meta


def load_run(run_dir: str | Path) -> tuple[RunMetadata, list[dict[str, Any]]]:
    """The metadata and records of a saved run (without repairing a partial last line)."""
    rd = RunDirectory(run_dir)
    meta = load_metadata(rd.path)
    try:
        records = rd.load_results(repair=False)
    except ValueError as exc:
        raise RescoreError(str(exc)) from None
    return meta, records


async def rescore_run(
    env: ScorableEnv,
    run_dir: str | Path,
    *,
    output_dir: str | Path | None = None,
    save: bool = True,
    pass_threshold: float = 1.0,
) -> RescoreResult:
    """Score the saved completions of ``run_dir`` with ``env``'s rubric, group by group (one group per
    example, as in the original run), and write a new run directory (default: ``default_output_dir``)."""
    source = Path(run_dir)
    previous, records = load_run(source)
    if previous.env_id != env.env_id:
        raise RescoreError(
            f"{source} is a run of environment {previous.env_id!r}, not {env.env_id!r}; "
            "re-score it with the environment it was made with"
        )
    out = RunDirectory(output_dir if output_dir is not None else default_output_dir(source))
    if save and (out.has_results() or out.has_metadata()):
        raise RescoreError(f"{out.path} already holds a run; choose another output directory")
    t0 = time.monotonic()
    started = utc_now()
    unique = unique_records(records)  # the first record of each pair, as a resume does
    groups: dict[int, list[State]] = defaultdict(list)
    new_records: dict[tuple[int, int], dict[str, Any]] = {}
    kept = 0
    for key, rec in unique.items():
        if _rescorable(rec):
            groups[key[0]].append(_to_state(rec))
        else:
            new_records[key] = dict(rec)
            kept += 1
    await env.setup()
    try:
        for states in groups.values():
            states.sort(key=lambda s: int(s["rollout_index"]))
            await score_safely(env.score_group, states)
            for s in states:
                s["timing"]["total"] = float(s["timing"].get("generation", 0.0)) + s["timing"]["scoring"]
                new_records[(int(s["example_id"]), int(s["rollout_index"]))] = env.result_record(s)
    finally:
        await env.teardown()
    results = [new_records[k] for k in sorted(new_records)]
    rescored = len(results) - kept
    changed = sum(1 for k in unique if unique[k].get("reward") != new_records[k].get("reward"))
    agg = RunAggregate(pass_threshold=pass_threshold)
    agg.add_all(results)
    meta = previous.model_copy(deep=True)
    meta.env_version = env.env_version
    meta.env_content_hash = env.env_content_hash
    meta.sdk_version = sdk_version()
    meta.started_at = started
    meta.run_id = uuid.uuid4().hex  # a new run directory: its own identity (the hub keys uploads by it)
    meta.finished_at = utc_now()
    meta.status = "completed"
    agg.fill(meta)
    meta.duration_s = time.monotonic() - t0
    meta.extra = {
        **previous.extra,
        "rescored_from": {
            "path": str(source),
            "env_version": previous.env_version,
            "env_content_hash": previous.env_content_hash,
            "avg_reward": previous.avg_reward,
            "rescored": rescored,
            "kept": kept,
        },
    }
    if save:
        with out.locked():  # one writer per run directory, as for a run
            out.open_for_append()
            try:
                out.append(results)
            finally:
                out.close(durable=True)
            out.write_metadata(meta, durable=True)
    return RescoreResult(
        source=source,
        metadata=meta,
        previous=previous,
        results=results,
        path=out.path if save else None,
        rescored=rescored,
        kept=kept,
        changed=changed,
    )


def rescore(
    env: ScorableEnv,
    run_dir: str | Path,
    *,
    output_dir: str | Path | None = None,
    save: bool = True,
    pass_threshold: float = 1.0,
) -> RescoreResult:
    """Synchronous ``rescore_run``."""
    return run_sync(
        rescore_run(env, run_dir, output_dir=output_dir, save=save, pass_threshold=pass_threshold)
    )


__all__ = [
    "RescoreError",
    "RescoreResult",
    "default_output_dir",
    "load_metadata",
    "load_run",
    "rescore",
    "rescore_run",
]
