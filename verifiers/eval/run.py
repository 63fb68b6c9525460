"""An evaluation run: row selection, the run directory, resume, live metadata and the final summary."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias, cast

from verifiers._urls import redact_url
from verifiers.clients import Client
from verifiers.clients.sampling import cap_max_tokens
from verifiers.errors import ErrorCategory
from verifiers.eval.concurrency import AdaptiveLimit, MaxConcurrent, make_limit
from verifiers.eval.config import check_run_size, default_max_rollouts
from verifiers.eval.distributed import RayOptions, RayReport, ray_options, schedule_ray
from verifiers.eval.engine import GroupPlan, ProgressCallback, RolloutEnv, RunProgress, ScoreMode, schedule
from verifiers.eval.metrics import RunAggregate
from verifiers.eval.results import (
    RunDirectory,
    UnwritableRecordError,
    encode_record,
    to_json_value,
    unique_records,
    utc_now,
)
from verifiers.eval.runs import ResumeMismatchError
from verifiers.types import Row, RunCounts, RunMetadata, RunStatus, SamplingArgs, State

#: A client made when the run needs it (after its metadata is on disk), e.g. a local model's; the run
#: enters the context and closes it at the end.
ClientSource: TypeAlias = Callable[[], AbstractAsyncContextManager[Client]]
#: The error category of a rollout whose record cannot be written (DESIGN 3.5: a bug in env code).
UNWRITABLE_CATEGORY: ErrorCategory = "env"

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
    #: Token budget of one model call (``None``: none) and whether earlier reasoning is sent back.
    max_seq_len: int | None
    interleaved_thinking: bool

    def select_rows(
        self, num_examples: int = -1, *, seed: int | None = None, shuffle: bool = False, split: str = "eval"
    ) -> list[Row]: ...

    def result_record(self, state: State) -> dict[str, Any]: ...

    def sampling_families(self, run_args: SamplingArgs | None) -> dict[str, SamplingArgs]:
        """What each request family (one per environment of a group) sends, by name."""
        ...

    def tool_names(self) -> list[str]:
        """The tools offered to the model, by name (a model that cannot call tools is warned)."""
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
    # Compared as written: the saved side went through the conversion rule (a tuple is a list there).
    diffs = [
        f"{k}: run has {a!r}, now {b!r}"
        for k, (a, b) in checks.items()
        if to_json_value(a) != to_json_value(b)
    ]
    if diffs:
        raise ResumeMismatchError(
            f"cannot resume {path}: it was made with different settings ({'; '.join(diffs)})"
        )


def unwritable_record(record: dict[str, Any], exc: Exception) -> dict[str, Any]:
    """What is kept of a rollout whose record cannot be written: its identity and plain fields, every
    field that cannot be written replaced by an empty value, and an ``env`` error saying why."""
    empty: dict[str, Any] = {"prompt": [], "completion": [], "info": {}, "metrics": {}, "turns": []}
    kept: dict[str, Any] = {}
    for key, value in record.items():
        try:
            kept[str(key)] = encode_record({"v": value})[0]["v"]
        except UnwritableRecordError:
            kept[str(key)] = empty.get(str(key))
    earlier = record.get("error")
    cause = ""
    if isinstance(earlier, dict):
        cause = f" (the rollout had already failed: {earlier.get('type')}: {earlier.get('message')})"
    kept["error"] = {
        "category": UNWRITABLE_CATEGORY,
        "type": "UnwritableRecordError",
        "message": f"the rollout's record cannot be written to results.jsonl: {exc}{cause}",
    }
    kept["reward"] = None
    return kept


def _recount(progress: RunProgress | None, before: dict[str, Any]) -> None:
    """Move a rollout that ``progress`` counted as scored or otherwise failed to the env-error count."""
    if progress is None:
        return
    err = before.get("error")
    if isinstance(err, dict):
        cat = str(err.get("category", "env"))
        progress.errors[cat] = max(0, progress.errors.get(cat, 0) - 1)
    elif before.get("reward") is not None:
        progress.scored -= 1
        progress.reward_sum -= float(before["reward"])
    progress.errors[UNWRITABLE_CATEGORY] = progress.errors.get(UNWRITABLE_CATEGORY, 0) + 1


async def run_eval(
    env: EvaluableEnv,
    client: Client | ClientSource,
    model: str,
    *,
    num_examples: int = -1,
    rollouts_per_example: int = 1,
    max_concurrent: MaxConcurrent = 32,
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
    base_url: str | list[str] | None = None,
    ray: RayOptions | str | bool | None = None,
    max_rollouts: int | None = None,
) -> EvalRun:
    """Run (or, with ``resume``, complete) an evaluation of ``env`` and keep its run directory.

    Order (so that a run directory exists only for a run that started, and has one writer): an
    existing run directory is locked (``RunDirectoryBusyError`` if another run holds it) and a resumed
    run's settings checked; then the start-up — ``client`` when it is a ``ClientSource`` (a local model
    starting, the endpoint check), ``env.setup()``; and only when the first rollout is about to start
    is the directory made (a new one locked then), ``metadata.json`` written (status ``running``) and
    the rollouts run. A run that fails or is stopped during start-up leaves no directory behind (and an
    existing one as it was). A record that cannot be written keeps its place as an ``env`` error
    (``unwritable_record``).

    ``sampling_args`` is the run's layer: each request family sends its environment's defaults under it
    (capped at ``max_tokens_limit``), and that is what the metadata records — ``sampling_args`` when every
    family sends the same, else the families' by name in ``sampling_args_by_env`` (with the run's layer
    in ``sampling_args``).

    ``max_concurrent`` is a fixed cap or an adaptive one (``"auto"``, ``(floor, ceiling)``; its course is
    recorded in ``metadata.extra["concurrency"]``). ``ray`` runs the groups on Ray actors
    (``verifiers.eval.distributed``): this process stays the single writer of the run directory, and
    ``metadata.extra["ray"]`` records the actors and the groups each node ran; ``on_group`` then gets
    each group's records (the same ``error`` / ``reward`` keys as states).

    ``max_rollouts`` bounds the rows × ``rollouts_per_example`` the run plans (``None``: the default,
    ``verifiers.eval.config.default_max_rollouts``); a larger run raises ``ConfigError`` before any
    request, file or plan is made."""
    if rollouts_per_example < 1:
        raise ValueError("rollouts_per_example must be at least 1")
    limit_rollouts = max_rollouts if max_rollouts is not None else default_max_rollouts()
    check_run_size(num_examples, rollouts_per_example, limit_rollouts)
    rows = env.select_rows(num_examples, seed=seed, shuffle=shuffle)
    check_run_size(len(rows), rollouts_per_example, limit_rollouts)
    families = {
        name: cap_max_tokens(args, max_tokens_limit)
        for name, args in env.sampling_families(sampling_args).items()
    }
    distinct = {json.dumps(to_json_value(a), sort_keys=True) for a in families.values()}
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
        run_id=uuid.uuid4().hex,
        env_args=env.env_args,
        model=model,
        base_url=_base_url(client, base_url),
        sampling_args=dict(recorded),
        sampling_args_by_env={k: dict(v) for k, v in by_env.items()},
        num_examples=len(rows),
        rollouts_per_example=rollouts_per_example,
        seed=seed,
        shuffle=shuffle,
        started_at=utc_now(),
        counts=RunCounts(planned=len(rows) * rollouts_per_example),
    )
    run_dir = RunDirectory(output_dir) if output_dir is not None else None
    limit = make_limit(max_concurrent)
    distributed = ray_options(ray)
    ray_report = RayReport(address=distributed.address) if distributed is not None else None

    async def execute(previous: list[dict[str, Any]], claim: Callable[[], None]) -> EvalRun:
        agg = RunAggregate(pass_threshold=pass_threshold)
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
            if isinstance(limit, AdaptiveLimit):
                meta.extra["concurrency"] = limit.summary()
            if ray_report is not None:
                meta.extra["ray"] = ray_report.summary()
            meta.duration_s = base_duration + (time.monotonic() - t_start)
            if final:
                meta.finished_at = utc_now()
            if run_dir is not None:
                run_dir.write_metadata(meta, durable=final)
            last_write = time.monotonic()

        def handle_group(states: Sequence[State]) -> None:
            handle_records([env.result_record(s) for s in states], states)

        def handle_records(records: list[dict[str, Any]], states: Sequence[State]) -> None:
            if run_dir is not None:
                lines = []
                for i, rec in enumerate(records):
                    try:
                        records[i], line = encode_record(rec)
                    except UnwritableRecordError as exc:
                        records[i], line = encode_record(unwritable_record(rec, exc))
                        _recount(progress, rec)
                    lines.append(line)
                run_dir.append_lines(lines)
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
        status: RunStatus = "failed"
        started = False

        def start() -> None:
            """The start-up worked: the run directory is made (or taken) and holds the run from here on."""
            nonlocal started
            claim()
            write("running")
            if run_dir is not None:
                run_dir.open_for_append()
            started = True

        try:
            async with AsyncExitStack() as stack:
                run_client = (
                    client if isinstance(client, Client) else await stack.enter_async_context(client())
                )
                meta.base_url = _base_url(run_client, None)
                if distributed is not None:  # the actors set their environments up, not the driver
                    start()
                    await schedule_ray(
                        env,
                        plans,
                        run_client,
                        model,
                        options=distributed,
                        limit=limit,
                        sampling_args=sampling_args,
                        score=score,
                        on_records=lambda records: handle_records(records, cast(list[State], records)),
                        progress=progress if progress is not None else RunProgress(),
                        max_tokens_limit=max_tokens_limit,
                        report=ray_report,
                    )
                else:
                    await env.setup()
                    try:
                        start()
                        if progress is not None:
                            progress.started = time.monotonic()  # the rate counts from here, not setup
                        await schedule(
                            env,
                            plans,
                            run_client,
                            model,
                            max_concurrent=limit,
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
            if started or run_dir is None:  # a start-up that failed leaves the directory as it was
                write(status, final=True)
        results.sort(key=lambda r: (r["example_id"], r["rollout_index"]))
        return EvalRun(metadata=meta, results=results, path=run_dir.path if run_dir else None)

    if run_dir is None:
        return await execute([], lambda: None)
    directory = run_dir

    def claim() -> None:
        # A directory that did not exist is made only now, and was perhaps made meanwhile by another run
        # with the same output directory: taken only if it still holds no run.
        if directory.is_locked:
            return
        directory.lock()
        if directory.has_results() or directory.has_metadata():
            directory.unlock()
            raise FileExistsError(
                f"{directory.path} already holds a run (another run started there meanwhile); choose "
                "another output directory"
            )

    try:
        # An existing directory is locked before it is read (one writer per directory until the run ends).
        if directory.path.is_dir():
            directory.lock()
        previous: list[dict[str, Any]] = []
        old = run_dir.read_metadata() if directory.is_locked else None
        if resume and old is not None:
            _check_resume(old, meta, run_dir.path)
            meta.started_at = old.started_at
            meta.run_id = old.run_id
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
        return await execute(previous, claim)
    finally:
        directory.unlock()


def _base_url(client: Client | ClientSource, given: str | list[str] | None) -> str | list[str]:
    """What metadata records as the run's server(s), without credentials: the client's, else ``given``
    (before a client source has made its client), else empty."""
    if isinstance(client, Client):
        urls = [redact_url(u) for u in client.base_urls]
        return urls if len(urls) > 1 else urls[0]
    if isinstance(given, list):
        return [redact_url(u) for u in given]
    return redact_url(given) if given is not None else ""
