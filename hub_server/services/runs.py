"""Eval runs as records: create (or resume), upload rollouts in chunks, finalize, read, leaderboard.

Writes need a token that may publish to the environment's namespace (issue 10 §3). A run is linked to
an existing version *and* its content hash: a run whose hash matches no published version's is refused,
and nothing here ever creates an environment or a version. Reads follow the environment's visibility: a
run is visible when its environment is and the run is public (a read grant makes a private environment
visible to its user, so its public runs too), or to those who may read the owner's private environments;
anything else is the same 404 as an absent run.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from sqlalchemy import Row, Select, and_, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from hub_server.auth import Principal
from hub_server.context import Hub
from hub_server.eval_stats import aggregate, ranking_bound
from hub_server.models import Environment, EvalRollout, EvalRun, Owner, User, Version as VersionRow, utcnow
from hub_server.services.errors import HubError, not_found
from hub_server.services.lookups import get_environment, get_version
from verifiers.hub import wire
from verifiers.hub.packaging import normalize_name

MAX_PER_PAGE = 100
#: The leaderboard considers at most this many recent complete public runs.
_LEADERBOARD_RUNS = 5000
_S = TypeVar("_S", bound="Select[*tuple[Any, ...]]")
_RunRow = Row[EvalRun, str, str, str, str | None]


def _require_writer(principal: Principal | None) -> Principal:
    if principal is None:
        raise HubError(401, "uploading an eval needs a token with the publish scope")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope")
    return principal


def _check_namespace(principal: Principal, env: Environment) -> None:
    # Results live under the environment: only those who may publish it may write them.
    if not principal.can_publish_to(env.owner_id):
        raise HubError(403, f"only publishers of {env.full_name}'s namespace may upload its eval results")


def visible_runs(stmt: _S, principal: Principal | None) -> _S:
    """``stmt`` over ``EvalRun`` joined to ``Environment``, narrowed to the runs ``principal`` may read."""
    if principal is not None and principal.has("admin"):
        return stmt
    public = and_(Environment.visibility == "public", EvalRun.visibility == "public")
    if principal is not None and principal.has("read"):
        shared = and_(Environment.id.in_(principal.granted_ids), EvalRun.visibility == "public")
        return stmt.where(or_(public, shared, Environment.owner_id.in_(principal.owner_ids)))
    return stmt.where(public)


def _run_select() -> Select[EvalRun, str, str, str, str | None]:
    uploader = select(Owner.name).join(User, User.owner_id == Owner.id).where(User.id == EvalRun.uploader_id)
    return (
        select(EvalRun, Owner.name, Environment.name, VersionRow.version, uploader.scalar_subquery())
        .join(Environment, EvalRun.environment_id == Environment.id)
        .join(Owner, Environment.owner_id == Owner.id)
        .join(VersionRow, EvalRun.version_id == VersionRow.id)
    )


def run_url(owner: str, name: str, run_id: int) -> str:
    return f"/{owner}/{name}/evals/{run_id}"


def _info(row: _RunRow) -> wire.EvalRunInfo:
    run, owner, name, version, uploader = row
    return wire.EvalRunInfo(
        id=run.id,
        environment=f"{owner}/{name}",
        version=version,
        content_hash=run.content_hash,
        model=run.model,
        sampling_args=run.sampling_args,
        env_args=run.env_args,
        sdk_version=run.sdk_version,
        visibility=run.visibility,  # type: ignore[arg-type]
        status=run.status,  # type: ignore[arg-type]
        num_examples=run.num_examples,
        rollouts_per_example=run.rollouts_per_example,
        started_at=run.started_at,
        finished_at=run.finished_at,
        uploader=uploader,
        created_at=run.created_at,
        finalized_at=run.finalized_at,
        rollout_count=run.rollout_count,
        scored_count=run.scored_count,
        avg_reward=run.avg_reward,
        std_reward=run.std_reward,
        reward_ci95=run.reward_ci95,
        **wire.interval_fields(run.avg_reward, run.scored_count, run.std_reward),
        pass_at_k=run.pass_at_k,
        avg_metrics=run.avg_metrics,
        error_counts=run.error_counts,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        url=run_url(owner, name, run.id),
        warnings=wire.run_warnings(run.avg_metrics, run.scored_count),
    )


def _load_info(session: Session, principal: Principal | None, run_id: int) -> wire.EvalRunInfo:
    row = session.execute(visible_runs(_run_select(), principal).where(EvalRun.id == run_id)).first()
    if row is None:
        raise not_found(f"eval run {run_id}")
    return _info(row)


# --- writes -----------------------------------------------------------------------------------------------
def create_run(
    hub: Hub, principal: Principal | None, owner: str, name: str, body: wire.EvalRunCreate
) -> tuple[wire.EvalRunInfo, bool]:
    """The run for ``body.run_key`` (created, True; or the one already there, False)."""
    p = _require_writer(principal)
    with hub.db.write() as session:
        env = get_environment(session, p, owner, name)  # 404: pushing never creates an environment
        _check_namespace(p, env)
        try:
            ver = get_version(env, body.version)
        except HubError as exc:
            if exc.status_code != 404:
                raise
            raise HubError(
                404,
                f"{env.full_name} has no version {body.version}; publish it first (vf-push), then push its "
                "results",
            ) from None
        if ver.content_hash != body.content_hash:
            same = [v.version for v in env.versions if v.content_hash == body.content_hash]
            hint = (
                f"it matches version(s) {', '.join(same)}: push those results against that version"
                if same
                else "no published version has it: publish this code as a new version first (vf-push)"
            )
            raise HubError(
                409,
                f"the run's environment content hash {body.content_hash[:12]}… does not match "
                f"{env.full_name} {ver.version}'s ({ver.content_hash[:12]}…); {hint}",
            )
        existing = session.scalar(
            select(EvalRun).where(EvalRun.environment_id == env.id, EvalRun.run_key == body.run_key)
        )
        if existing is not None:
            if (existing.version_id, existing.model) != (ver.id, body.model):
                raise HubError(
                    409,
                    f"run key {body.run_key} is already used by eval run {existing.id} of another version or model",
                )
            run_id, created = existing.id, False
        else:
            run = EvalRun(
                environment_id=env.id,
                version_id=ver.id,
                run_key=body.run_key,
                content_hash=body.content_hash,
                model=body.model,
                sampling_args=body.sampling_args,
                env_args=body.env_args,
                sdk_version=body.sdk_version,
                visibility=body.visibility,
                status="uploading",
                num_examples=body.num_examples,
                rollouts_per_example=body.rollouts_per_example,
                shuffled=body.shuffle,
                started_at=body.started_at,
                finished_at=body.finished_at,
                uploader_id=p.user_id,
                pass_at_k={},
                avg_metrics={},
                error_counts={},
            )
            session.add(run)
            session.flush()
            run_id, created = run.id, True
        return _load_info(session, p, run_id), created


def _run_for_write(session: Session, principal: Principal, run_id: int) -> EvalRun:
    row = session.execute(
        visible_runs(
            select(EvalRun, Environment).join(Environment, EvalRun.environment_id == Environment.id),
            principal,
        ).where(EvalRun.id == run_id)
    ).first()
    if row is None:
        raise not_found(f"eval run {run_id}")
    run, env = row
    _check_namespace(principal, env)
    return run


def _row(run_id: int, r: wire.RolloutRecord) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "example_id": r.example_id,
        "rollout_index": r.rollout_index,
        "reward": r.reward,
        "error_category": r.error.category if r.error else None,
        "data": r.model_dump(mode="json"),
    }


def _check_example_ids(session: Session, run: EvalRun, ids: set[int]) -> None:
    """422 for example ids the run cannot have: beyond ``0 .. num_examples - 1``, or, for a shuffled run
    (whose ids are dataset positions), more distinct ids than ``num_examples`` with those already stored."""
    if not run.shuffled:
        beyond = sorted(i for i in ids if i >= run.num_examples)
        if beyond:
            raise HubError(
                422,
                f"example_id {beyond[0]} is out of range: the run has {run.num_examples} example(s), ids 0.."
                f"{run.num_examples - 1} (a run of shuffled examples says so when it is created: shuffle)",
            )
        return
    # Concurrent chunks of one run are counted one after the other (PostgreSQL; SQLite writes are serial).
    session.execute(select(EvalRun.id).where(EvalRun.id == run.id).with_for_update())
    held = set(session.scalars(select(EvalRollout.example_id).where(EvalRollout.run_id == run.id).distinct()))
    if len(held | ids) > run.num_examples:
        raise HubError(
            422,
            f"the run has {run.num_examples} example(s), and this chunk brings its distinct example ids to "
            f"{len(held | ids)}",
        )


def add_rollouts(
    hub: Hub, principal: Principal | None, run_id: int, chunk: wire.RolloutChunk
) -> wire.ChunkReceipt:
    """Store a chunk; a rollout already there (same example and index) is skipped, so chunks may be resent."""
    p = _require_writer(principal)
    with hub.db.write() as session:
        run = _run_for_write(session, p, run_id)
        if run.status != "uploading":
            raise HubError(409, f"eval run {run_id} is finalized; its rollouts cannot change")
        _check_example_ids(session, run, {r.example_id for r in chunk.rollouts})
        for r in chunk.rollouts:
            if r.rollout_index >= run.rollouts_per_example:
                raise HubError(
                    422,
                    f"rollout_index {r.rollout_index} of example {r.example_id} is out of range: the run has "
                    f"{run.rollouts_per_example} rollout(s) per example",
                )
        insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
        # RETURNING names the rows that went in (rowcount is not reliable for this statement on psycopg).
        stored = session.execute(
            insert(EvalRollout)
            .values([_row(run.id, r) for r in chunk.rollouts])
            .on_conflict_do_nothing()
            .returning(EvalRollout.id)
        ).all()
        total = session.scalar(select(func.count()).where(EvalRollout.run_id == run.id)) or 0
        run.rollout_count = total  # live while uploading, so a resuming client knows to ask which
        return wire.ChunkReceipt(
            stored=len(stored), duplicates=len(chunk.rollouts) - len(stored), total=total
        )


def rollout_keys(session: Session, principal: Principal | None, run_id: int) -> wire.RolloutKeys:
    _load_info(session, principal, run_id)  # 404 unless visible
    rows = session.execute(
        select(EvalRollout.example_id, EvalRollout.rollout_index)
        .where(EvalRollout.run_id == run_id)
        .order_by(EvalRollout.example_id, EvalRollout.rollout_index)
    )
    return wire.RolloutKeys(keys=[(e, i) for e, i in rows])


def finalize_run(hub: Hub, principal: Principal | None, run_id: int) -> wire.EvalRunInfo:
    """Compute the aggregates from the stored rollouts and close the run to further uploads.

    The rollouts are read and aggregated outside the write transaction (a large run takes a while, and
    SQLite's write lock would stall every other writer); the write then checks that no rollout arrived
    in between.
    """
    p = _require_writer(principal)
    with hub.db.read() as session:
        run = _run_for_write(session, p, run_id)
        if run.status == "complete":
            return _load_info(session, p, run_id)
        per_example = run.rollouts_per_example
        rows = session.scalars(select(EvalRollout.data).where(EvalRollout.run_id == run_id)).all()
    if not rows:
        raise HubError(409, f"eval run {run_id} has no rollouts yet; upload them before finalizing")
    stats = aggregate(rows, per_example)
    with hub.db.write() as session:
        run = _run_for_write(session, p, run_id)
        if run.status == "complete":  # a concurrent finalize won: its numbers stand
            return _load_info(session, p, run_id)
        count = session.scalar(select(func.count()).where(EvalRollout.run_id == run_id)) or 0
        if count != stats.rollout_count:
            raise HubError(
                409, f"rollouts of eval run {run_id} arrived while it was being finalized; finalize again"
            )
        for name in (
            "rollout_count",
            "scored_count",
            "avg_reward",
            "std_reward",
            "reward_ci95",
            "pass_at_k",
            "avg_metrics",
            "error_counts",
            "prompt_tokens",
            "completion_tokens",
        ):
            setattr(run, name, getattr(stats, name))
        run.status = "complete"
        run.finalized_at = utcnow()
        session.flush()
        return _load_info(session, p, run_id)


def set_visibility(
    hub: Hub, principal: Principal | None, run_id: int, visibility: wire.Visibility
) -> wire.EvalRunInfo:
    """Make a run public (the leaderboard shows it) or private; publishers of its namespace only."""
    p = _require_writer(principal)
    with hub.db.write() as session:
        run = _run_for_write(session, p, run_id)
        run.visibility = visibility
        session.flush()
        return _load_info(session, p, run_id)


# --- reads ------------------------------------------------------------------------------------------------
def get_run(session: Session, principal: Principal | None, run_id: int) -> wire.EvalRunInfo:
    return _load_info(session, principal, run_id)


def list_runs(
    session: Session,
    principal: Principal | None,
    env: Environment,
    *,
    version: str | None = None,
    model: str | None = None,
    page: int = 1,
    per_page: int = 20,
) -> wire.EvalRunPage:
    """The runs of ``env`` (which the caller may read) that ``principal`` may read, newest first."""
    stmt = visible_runs(_run_select(), principal).where(EvalRun.environment_id == env.id)
    if version:
        stmt = stmt.where(EvalRun.version_id == get_version(env, version).id)
    if model:
        stmt = stmt.where(EvalRun.model == model)
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = session.execute(
        stmt.order_by(EvalRun.created_at.desc(), EvalRun.id.desc())
        .offset((page - 1) * per_page)
        .limit(per_page)
    ).all()
    return wire.EvalRunPage(items=[_info(r) for r in rows], total=total, page=page, per_page=per_page)


def _stored(data: dict[str, Any]) -> wire.StoredRollout:
    return wire.StoredRollout.model_validate(wire.RolloutRecord.model_validate(data).model_dump(mode="json"))


def list_rollouts(
    session: Session,
    principal: Principal | None,
    run_id: int,
    *,
    min_reward: float | None = None,
    max_reward: float | None = None,
    error: str | None = None,
    example_id: int | None = None,
    page: int = 1,
    per_page: int = 20,
) -> wire.RolloutPage:
    """Rollouts in (example, index) order. ``error``: a category, ``any`` (errored) or ``none`` (not)."""
    _load_info(session, principal, run_id)
    stmt = select(EvalRollout.data).where(EvalRollout.run_id == run_id)
    if min_reward is not None:
        stmt = stmt.where(EvalRollout.reward >= min_reward)
    if max_reward is not None:
        stmt = stmt.where(EvalRollout.reward <= max_reward)
    if error == "none":
        stmt = stmt.where(EvalRollout.error_category.is_(None))
    elif error == "any":
        stmt = stmt.where(EvalRollout.error_category.is_not(None))
    elif error:
        stmt = stmt.where(EvalRollout.error_category == error)
    if example_id is not None:
        stmt = stmt.where(EvalRollout.example_id == example_id)
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = session.scalars(
        stmt.order_by(EvalRollout.example_id, EvalRollout.rollout_index)
        .offset((page - 1) * per_page)
        .limit(per_page)
    )
    return wire.RolloutPage(items=[_stored(d) for d in rows], total=total, page=page, per_page=per_page)


def get_rollout(
    session: Session, principal: Principal | None, run_id: int, example_id: int, rollout_index: int
) -> wire.StoredRollout:
    _load_info(session, principal, run_id)
    data = session.scalar(
        select(EvalRollout.data).where(
            EvalRollout.run_id == run_id,
            EvalRollout.example_id == example_id,
            EvalRollout.rollout_index == rollout_index,
        )
    )
    if data is None:
        raise not_found(f"rollout {example_id}/{rollout_index} of eval run {run_id}")
    return _stored(data)


RolloutKey = tuple[int, int]


def rollout_neighbours(
    session: Session, run_id: int, example_id: int, rollout_index: int
) -> tuple[RolloutKey | None, RolloutKey | None, int, int]:
    """For the rollout viewer's previous/next links: the rollouts before and after (example_id,
    rollout_index) in the run's (example, index) order, this one's position (1-based) and the total.
    The caller has already checked that the run is visible."""
    key = (EvalRollout.example_id, EvalRollout.rollout_index)
    before = or_(
        EvalRollout.example_id < example_id,
        and_(EvalRollout.example_id == example_id, EvalRollout.rollout_index < rollout_index),
    )
    after = or_(
        EvalRollout.example_id > example_id,
        and_(EvalRollout.example_id == example_id, EvalRollout.rollout_index > rollout_index),
    )
    in_run = EvalRollout.run_id == run_id
    prev = session.execute(
        select(*key).where(in_run, before).order_by(*(c.desc() for c in key)).limit(1)
    ).first()
    nxt = session.execute(select(*key).where(in_run, after).order_by(*key).limit(1)).first()
    position = (session.scalar(select(func.count()).where(in_run, before)) or 0) + 1
    total = session.scalar(select(func.count()).where(in_run)) or 0
    return (
        (prev[0], prev[1]) if prev else None,
        (nxt[0], nxt[1]) if nxt else None,
        position,
        total,
    )


#: The eval page groups at most this many rollouts (the API pages through all of them).
OVERVIEW_LIMIT = 20_000


def run_overview(
    session: Session, principal: Principal | None, owner: str, name: str, run_id: int
) -> tuple[wire.EvalRunInfo, list[dict[str, Any]]]:
    """The run (404 unless visible and under ``owner/name``) and a light record of each rollout:
    example_id, rollout_index, reward and, for errored ones, the error — what the eval page groups."""
    info = _load_info(session, principal, run_id)
    if info.environment != f"{owner.lower()}/{normalize_name(name)}":
        raise not_found(f"eval run {run_id} of {owner}/{name}")
    rows = session.execute(
        select(
            EvalRollout.example_id,
            EvalRollout.rollout_index,
            EvalRollout.reward,
            EvalRollout.error_category,
            EvalRollout.id,
        )
        .where(EvalRollout.run_id == run_id)
        .order_by(EvalRollout.example_id, EvalRollout.rollout_index)
        .limit(OVERVIEW_LIMIT)
    ).all()
    errored = [r.id for r in rows if r.error_category is not None]
    errors: dict[int, Any] = {}
    for start in range(0, len(errored), 500):
        for rid, data in session.execute(
            select(EvalRollout.id, EvalRollout.data).where(EvalRollout.id.in_(errored[start : start + 500]))
        ):
            errors[rid] = data.get("error")
    records = [
        {
            "example_id": r.example_id,
            "rollout_index": r.rollout_index,
            "reward": r.reward,
            "error": errors.get(r.id),
        }
        for r in rows
    ]
    return info, records


def _score(run: EvalRun) -> float:
    bound = ranking_bound(run.avg_reward, run.scored_count, run.std_reward)
    return bound if bound is not None else -math.inf


def leaderboard(session: Session, env: Environment, pick: wire.LeaderboardPick = "best") -> wire.Leaderboard:
    """One entry per (model, version) of ``env``: its best or latest complete public run, ranked by the
    lower end of the 95% interval of the mean reward (``eval_stats.ranking_bound``; "best" picks by it too),
    so a handful of lucky rollouts does not outrank a large run."""
    rows = session.execute(
        _run_select()
        .where(EvalRun.environment_id == env.id, EvalRun.visibility == "public", EvalRun.status == "complete")
        .order_by(EvalRun.finalized_at.desc(), EvalRun.id.desc())
        .limit(_LEADERBOARD_RUNS)
    ).all()
    chosen: dict[tuple[str, str], _RunRow] = {}
    for row in rows:  # newest first
        run, version = row[0], row[3]
        key = (run.model, version)
        better = pick == "best" and key in chosen and _score(run) > _score(chosen[key][0])
        if key not in chosen or better:
            chosen[key] = row
    entries = [
        wire.LeaderboardEntry(
            model=run.model,
            version=version,
            run_id=run.id,
            avg_reward=run.avg_reward,
            reward_ci95=run.reward_ci95,
            **wire.interval_fields(run.avg_reward, run.scored_count, run.std_reward),
            reward_lower=ranking_bound(run.avg_reward, run.scored_count, run.std_reward),
            pass_at_k=run.pass_at_k,
            rollout_count=run.rollout_count,
            scored_count=run.scored_count,
            date=run.finalized_at or run.created_at,
            uploader=uploader,
            warnings=wire.run_warnings(run.avg_metrics, run.scored_count),
        )
        for run, _o, _n, version, uploader in chosen.values()
    ]
    entries.sort(
        key=lambda e: (
            e.reward_lower is None,
            -(e.reward_lower or 0.0),
            -(e.avg_reward if e.avg_reward is not None else -math.inf),
            e.model,
            e.version,
        )
    )
    return wire.Leaderboard(environment=env.full_name, pick=pick, entries=entries)
