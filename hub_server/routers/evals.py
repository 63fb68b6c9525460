"""Eval runs under ``/api/v1``: create or resume, upload rollouts in chunks, finalize, read, leaderboard."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path as FastAPIPath, Query, Response

from hub_server import services
from hub_server.deps import HubDep, PrincipalDep, SessionDep, WriterDep
from hub_server.services import runs
from verifiers.hub import wire

router = APIRouter(prefix="/api/v1", tags=["evals"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": wire.Problem} for s in (401, 403, 404, 409, 413, 422)
}
RunId = Annotated[int, FastAPIPath(ge=1, le=2**31 - 1)]
Page = Annotated[int, Query(ge=1, le=100_000)]
PerPage = Annotated[int, Query(ge=1, le=runs.MAX_PER_PAGE)]
ErrorFilter = Literal["none", "any", "model", "infra", "env", "scoring"]


@router.post(
    "/environments/{owner}/{name}/runs",
    status_code=201,
    response_model=wire.EvalRunInfo,
    responses={
        200: {"model": wire.EvalRunInfo, "description": "The run already existed (resume)."},
        **_ERRORS,
    },
    summary="Start uploading an eval run (or resume one with the same run_key)",
)
def create_run(
    owner: str, name: str, body: wire.EvalRunCreate, hub: HubDep, principal: WriterDep, response: Response
) -> wire.EvalRunInfo:
    info, created = runs.create_run(hub, principal, owner, name, body)
    if not created:
        response.status_code = 200
    return info


@router.get("/environments/{owner}/{name}/runs", response_model=wire.EvalRunPage, responses=_ERRORS)
def list_runs(
    owner: str,
    name: str,
    session: SessionDep,
    principal: PrincipalDep,
    version: Annotated[str | None, Query(max_length=100)] = None,
    model: Annotated[str | None, Query(max_length=200)] = None,
    page: Page = 1,
    per_page: PerPage = 20,
) -> wire.EvalRunPage:
    env = services.get_environment(session, principal, owner, name)
    return runs.list_runs(session, principal, env, version=version, model=model, page=page, per_page=per_page)


@router.get("/environments/{owner}/{name}/leaderboard", response_model=wire.Leaderboard, responses=_ERRORS)
def leaderboard(
    owner: str, name: str, session: SessionDep, principal: PrincipalDep, pick: wire.LeaderboardPick = "best"
) -> wire.Leaderboard:
    return runs.leaderboard(session, services.get_environment(session, principal, owner, name), pick)


@router.get("/runs/{run_id}", response_model=wire.EvalRunInfo, responses=_ERRORS)
def get_run(run_id: RunId, session: SessionDep, principal: PrincipalDep) -> wire.EvalRunInfo:
    return runs.get_run(session, principal, run_id)


@router.patch(
    "/runs/{run_id}",
    response_model=wire.EvalRunInfo,
    responses=_ERRORS,
    summary="Change a run's visibility (public runs are on the leaderboard)",
)
def update_run(
    run_id: RunId, body: wire.EvalRunUpdate, hub: HubDep, principal: WriterDep
) -> wire.EvalRunInfo:
    return runs.set_visibility(hub, principal, run_id, body.visibility)


@router.post(
    "/runs/{run_id}/rollouts",
    response_model=wire.ChunkReceipt,
    responses=_ERRORS,
    summary="Upload a chunk of rollouts (idempotent by example_id and rollout_index)",
)
def add_rollouts(
    run_id: RunId, body: wire.RolloutChunk, hub: HubDep, principal: WriterDep
) -> wire.ChunkReceipt:
    return runs.add_rollouts(hub, principal, run_id, body)


@router.get("/runs/{run_id}/rollouts", response_model=wire.RolloutPage, responses=_ERRORS)
def list_rollouts(
    run_id: RunId,
    session: SessionDep,
    principal: PrincipalDep,
    min_reward: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    max_reward: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    error: ErrorFilter | None = None,
    example_id: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
    page: Page = 1,
    per_page: PerPage = 20,
) -> wire.RolloutPage:
    return runs.list_rollouts(
        session,
        principal,
        run_id,
        min_reward=min_reward,
        max_reward=max_reward,
        error=error,
        example_id=example_id,
        page=page,
        per_page=per_page,
    )


@router.get("/runs/{run_id}/rollout-keys", response_model=wire.RolloutKeys, responses=_ERRORS)
def rollout_keys(run_id: RunId, session: SessionDep, principal: PrincipalDep) -> wire.RolloutKeys:
    return runs.rollout_keys(session, principal, run_id)


@router.get(
    "/runs/{run_id}/rollouts/{example_id}/{rollout_index}",
    response_model=wire.StoredRollout,
    responses=_ERRORS,
)
def get_rollout(
    run_id: RunId,
    example_id: Annotated[int, FastAPIPath(ge=0, le=2**31 - 1)],
    rollout_index: Annotated[int, FastAPIPath(ge=0, le=10**6)],
    session: SessionDep,
    principal: PrincipalDep,
) -> wire.StoredRollout:
    return runs.get_rollout(session, principal, run_id, example_id, rollout_index)


@router.post("/runs/{run_id}/finalize", response_model=wire.EvalRunInfo, responses=_ERRORS)
def finalize_run(run_id: RunId, hub: HubDep, principal: WriterDep) -> wire.EvalRunInfo:
    return runs.finalize_run(hub, principal, run_id)
