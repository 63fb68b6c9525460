"""JSON API under ``/api/v1``. Handlers are thin: parse, call ``services``, shape the response."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path as FastAPIPath, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel
from sqlalchemy import Connection
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile

from hub_server import schemas, services
from hub_server.auth import Principal, TokenCheck, needs_touch
from hub_server.context import Hub
from hub_server.deps import HubDep, PrincipalDep, SessionDep, WriterDep, check_in, request_token
from hub_server.models import utcnow
from hub_server.releases import sorted_versions
from hub_server.services import HubError, members, sharing
from verifiers.hub import wire

router = APIRouter(prefix="/api/v1", tags=["api"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": wire.Problem} for s in (401, 403, 404, 409, 413, 422)
}
_PUBLISH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["wheel", "sdist"],
                    "properties": {
                        "wheel": {"type": "string", "format": "binary", "description": "The .whl file."},
                        "sdist": {"type": "string", "format": "binary", "description": "The .tar.gz sdist."},
                        "visibility": {"type": "string", "enum": ["public", "private"]},
                        "content_hash": {
                            "type": "string",
                            "description": "The client's content hash; the upload is refused if the hub's differs.",
                        },
                    },
                }
            }
        },
    }
}
_FORM_FIELD_LIMIT = 64 * 1024
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _json(body: BaseModel) -> Response:
    """``body`` serialised once, in the calling worker thread.

    The hot read routes (detail, search, resolve) build their answer, serialise it and close their
    session in one worker-thread hop, instead of FastAPI validating the returned model against
    ``response_model`` again and serialising it in a second hop and closing the session in a third.
    ``response_model`` stays on those routes for the OpenAPI schema; the bytes are the same.
    """
    return Response(body.__pydantic_serializer__.to_json(body), media_type="application/json")


def _reader(request: Request) -> tuple[Hub, str | None]:
    """The hub and the caller's credentials, for the hot read routes: they authenticate in the same
    worker-thread hop as their queries (a bad token is still a 401 before any lookup)."""
    hub: Hub = request.app.state.hub
    return hub, request_token(request)


@dataclass
class Caller:
    """Who asks a hot read: a raw token to check in the request's session, or a check made earlier
    (``known``, from ``principal_cache``)."""

    token: str | None
    known: TokenCheck | None = None
    #: The check this request made or refreshed (set in the worker thread), for the caller's cache.
    checked: TokenCheck | None = None


def _answer(hub: Hub, caller: Caller, build: Callable[[Connection, Principal | None], BaseModel]) -> Response:
    """One blocking hop for a hot read: authenticate and query on one connection (``Database.hot``:
    Core statements, no ORM session unless a token must be checked), serialise, give the connection
    back, then record the token's use (a bad token is still a 401 before any lookup)."""
    check = caller.known
    try:
        with hub.db.hot() as conn:
            if check is None and caller.token:
                with Session(bind=conn) as session:
                    check = check_in(session, caller.token)
            return _json(build(conn, check.principal if check else None))
    finally:
        if check is not None and needs_touch(check.last_used_at):
            hub.touch(check.principal, check.last_used_at)
            check = replace(check, last_used_at=utcnow())
        caller.checked = check


def search_answer(
    hub: Hub,
    caller: Caller,
    *,
    q: str,
    tags: tuple[str, ...],
    owner: str | None,
    sort: wire.SortKey,
    page: int,
    per_page: int,
) -> Response:
    """``GET /environments`` with validated parameters (blocking; also used by ``api_reads``)."""
    return _answer(
        hub,
        caller,
        lambda session, principal: services.search(
            session, principal, q=q, tags=tags, owner=owner, sort=sort, page=page, per_page=per_page
        ),
    )


def detail_answer(hub: Hub, caller: Caller, owner: str, name: str) -> Response:
    """``GET /environments/{owner}/{name}`` (blocking; also used by ``api_reads``)."""
    return _answer(
        hub,
        caller,
        lambda session, principal: schemas.env_detail(
            services.get_environment_view(session, principal, owner, name)
        ),
    )


def resolve_answer(hub: Hub, caller: Caller, spec: str) -> Response:
    """``GET /resolve`` with a validated spec (blocking; also used by ``api_reads``)."""
    return _answer(
        hub,
        caller,
        lambda session, principal: schemas.resolve_out(*services.resolve(session, principal, spec)),
    )


def _principal_required(principal: Principal | None) -> Principal:
    if principal is None:
        raise HubError(401, "this needs a token (Authorization: Bearer <token>)")
    return principal


@router.get("/environments", response_model=wire.SearchPage)
async def list_environments(
    request: Request,
    q: Annotated[str, Query(max_length=200, description="Text in the name, description or owner.")] = "",
    tag: Annotated[
        list[str] | None, Query(max_length=10, description="Every given tag must be present.")
    ] = None,
    owner: Annotated[str | None, Query(max_length=64)] = None,
    sort: wire.SortKey = "downloads",
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
    per_page: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    hub, token = _reader(request)
    return await run_in_threadpool(
        search_answer,
        hub,
        Caller(token),
        q=q,
        tags=tuple(tag or ()),
        owner=owner,
        sort=sort,
        page=page,
        per_page=per_page,
    )


@router.get("/environments/{owner}/{name}", response_model=wire.EnvironmentDetail, responses=_ERRORS)
async def get_environment(owner: str, name: str, request: Request) -> Response:
    hub, token = _reader(request)
    return await run_in_threadpool(detail_answer, hub, Caller(token), owner, name)


@router.patch("/environments/{owner}/{name}", response_model=wire.EnvironmentDetail, responses=_ERRORS)
def update_environment(
    owner: str, name: str, body: schemas.EnvironmentUpdate, hub: HubDep, principal: WriterDep
) -> wire.EnvironmentDetail:
    return schemas.env_detail(services.update_environment(hub, principal, owner, name, body))


Username = Annotated[str, FastAPIPath(min_length=1, max_length=64)]


@router.get(
    "/environments/{owner}/{name}/grants",
    response_model=list[wire.ReadGrantInfo],
    responses=_ERRORS,
    summary="The users a private environment is shared with",
)
def list_grants(
    owner: str, name: str, session: SessionDep, principal: PrincipalDep
) -> list[wire.ReadGrantInfo]:
    return sharing.list_grants(session, principal, owner, name)


@router.put(
    "/environments/{owner}/{name}/grants/{username}",
    response_model=wire.ReadGrantInfo,
    responses=_ERRORS,
    summary="Share an environment with a user (a read grant; owners and admins of its namespace)",
)
def share(owner: str, name: str, username: Username, hub: HubDep, principal: WriterDep) -> wire.ReadGrantInfo:
    return sharing.share(hub, principal, owner, name, username)


@router.delete(
    "/environments/{owner}/{name}/grants/{username}",
    status_code=204,
    responses=_ERRORS,
    summary="Revoke a user's read grant (effective from the next request)",
)
def unshare(owner: str, name: str, username: Username, hub: HubDep, principal: WriterDep) -> Response:
    sharing.unshare(hub, principal, owner, name, username)
    return Response(status_code=204)


@router.get(
    "/orgs/{org}/members",
    response_model=list[schemas.MemberOut],
    responses=_ERRORS,
    summary="An organisation's members and their roles (its members only)",
)
def list_members(org: Username, session: SessionDep, principal: PrincipalDep) -> list[schemas.MemberOut]:
    return members.list_members(session, _principal_required(principal), org)


@router.put(
    "/orgs/{org}/members/{username}",
    response_model=schemas.MemberOut,
    responses=_ERRORS,
    summary="Add a member, or change a member's role (owners and admins; owners for owners)",
)
def put_member(
    org: Username, username: Username, body: schemas.MemberIn, hub: HubDep, principal: WriterDep
) -> schemas.MemberOut:
    return members.put_member(hub, org, username, body.role, actor=principal)


@router.delete(
    "/orgs/{org}/members/{username}",
    status_code=204,
    responses=_ERRORS,
    summary="Remove a member (or leave); never the last owner",
)
def remove_member(org: Username, username: Username, hub: HubDep, principal: WriterDep) -> Response:
    members.remove_member(hub, org, username, actor=principal)
    return Response(status_code=204)


@router.delete("/environments/{owner}/{name}", status_code=204, responses=_ERRORS)
def delete_environment(owner: str, name: str, hub: HubDep, principal: WriterDep) -> Response:
    services.delete_environment(hub, principal, owner, name)
    return Response(status_code=204)


@router.get("/environments/{owner}/{name}/versions", response_model=list[wire.VersionInfo], responses=_ERRORS)
def list_versions(
    owner: str, name: str, session: SessionDep, principal: PrincipalDep
) -> list[wire.VersionInfo]:
    env = services.get_environment(session, principal, owner, name)
    return [schemas.version_out(env, v) for v in sorted_versions(env)]


@router.post(
    "/environments/{owner}/{name}/versions",
    status_code=201,
    response_model=wire.VersionDetail,
    responses=_ERRORS,
    openapi_extra=_PUBLISH_BODY,
    summary="Publish a version (multipart: wheel + sdist)",
)
async def publish_version(
    owner: str, name: str, request: Request, hub: HubDep, principal: WriterDep
) -> wire.VersionDetail:
    # Refuse before reading a possibly large body when the caller may not publish here at all.
    await run_in_threadpool(services.precheck_publish, hub, principal, owner, name)
    form = await request.form(max_files=2, max_fields=4, max_part_size=_FORM_FIELD_LIMIT)
    try:
        wheel, sdist = form.get("wheel"), form.get("sdist")
        if not isinstance(wheel, UploadFile) or not isinstance(sdist, UploadFile):
            raise HubError(
                422,
                "send a multipart/form-data body with the wheel in field 'wheel' and the sdist in 'sdist'",
            )
        visibility = form.get("visibility")
        if visibility is not None and visibility not in ("public", "private"):
            raise HubError(422, "visibility must be 'public' or 'private'")
        content_hash = form.get("content_hash")
        if content_hash is not None and not (isinstance(content_hash, str) and _SHA256.match(content_hash)):
            raise HubError(422, "content_hash must be 64 lowercase hex digits (a sha256)")
        limit = hub.settings.max_file_size
        uploads = []
        for field, upload in (("wheel", wheel), ("sdist", sdist)):
            data = await upload.read(limit + 1)
            if len(data) > limit:
                raise HubError(413, f"the {field} is larger than {limit} bytes, the hub's max_file_size")
            uploads.append(services.Upload(filename=upload.filename or "", data=data))
    finally:
        await form.close()
    env, ver = await run_in_threadpool(
        services.publish,
        hub,
        principal,
        owner,
        name,
        uploads[0],
        uploads[1],
        visibility=visibility if isinstance(visibility, str) else None,
        content_hash=content_hash or None,
    )
    return schemas.version_detail(env, ver, principal.username if principal else None)


@router.get(
    "/environments/{owner}/{name}/versions/{version}", response_model=wire.VersionDetail, responses=_ERRORS
)
def get_version(
    owner: str, name: str, version: str, session: SessionDep, principal: PrincipalDep
) -> wire.VersionDetail:
    env = services.get_environment(session, principal, owner, name)
    ver = services.get_version(env, version)
    return schemas.version_detail(env, ver, services.uploader_name(session, ver))


@router.delete("/environments/{owner}/{name}/versions/{version}", status_code=204, responses=_ERRORS)
def delete_version(owner: str, name: str, version: str, hub: HubDep, principal: WriterDep) -> Response:
    services.delete_version(hub, principal, owner, name, version)
    return Response(status_code=204)


@router.post(
    "/environments/{owner}/{name}/versions/{version}/yank",
    response_model=wire.VersionInfo,
    responses=_ERRORS,
)
def yank(
    owner: str,
    name: str,
    version: str,
    hub: HubDep,
    principal: WriterDep,
    body: schemas.YankIn | None = None,
) -> wire.VersionInfo:
    return services.set_yanked(hub, principal, owner, name, version, True, body.reason if body else "")


@router.post(
    "/environments/{owner}/{name}/versions/{version}/unyank",
    response_model=wire.VersionInfo,
    responses=_ERRORS,
)
def unyank(owner: str, name: str, version: str, hub: HubDep, principal: WriterDep) -> wire.VersionInfo:
    return services.set_yanked(hub, principal, owner, name, version, False)


@router.get(
    "/environments/{owner}/{name}/versions/{version}/files",
    response_model=list[schemas.SdistEntry],
    responses=_ERRORS,
    summary="Files in the version's sdist",
)
def list_files(
    owner: str, name: str, version: str, session: SessionDep, principal: PrincipalDep
) -> list[schemas.SdistEntry]:
    env = services.get_environment(session, principal, owner, name)
    ver = services.get_version(env, version)
    return [schemas.SdistEntry.model_validate(f) for f in ver.sdist_files]


@router.get("/environments/{owner}/{name}/evals", response_model=list[schemas.EvalOut], responses=_ERRORS)
def list_evals(owner: str, name: str, session: SessionDep, principal: PrincipalDep) -> list[schemas.EvalOut]:
    return services.list_evals(session, services.get_environment(session, principal, owner, name))


@router.post(
    "/environments/{owner}/{name}/versions/{version}/evals",
    status_code=201,
    response_model=schemas.EvalOut,
    responses=_ERRORS,
    summary="Upload an eval summary (leaderboard entry)",
)
def add_eval(
    owner: str, name: str, version: str, body: schemas.EvalIn, hub: HubDep, principal: WriterDep
) -> schemas.EvalOut:
    return services.add_eval(hub, principal, owner, name, version, body)


@router.put("/environments/{owner}/{name}/star", response_model=schemas.StarOut, responses=_ERRORS)
def star(owner: str, name: str, hub: HubDep, principal: WriterDep) -> schemas.StarOut:
    return services.set_star(hub, principal, owner, name, True)


@router.delete("/environments/{owner}/{name}/star", response_model=schemas.StarOut, responses=_ERRORS)
def unstar(owner: str, name: str, hub: HubDep, principal: WriterDep) -> schemas.StarOut:
    return services.set_star(hub, principal, owner, name, False)


@router.get("/resolve", response_model=wire.ResolvedVersion, responses=_ERRORS)
async def resolve(
    request: Request,
    spec: Annotated[str, Query(min_length=1, max_length=300, description="[owner/]name[@PEP 440 specifier]")],
) -> Response:
    hub, token = _reader(request)
    return await run_in_threadpool(resolve_answer, hub, Caller(token), spec)


@router.get("/whoami", response_model=wire.WhoAmI, responses=_ERRORS)
def whoami(session: SessionDep, principal: PrincipalDep) -> wire.WhoAmI:
    return services.whoami(session, _principal_required(principal))


@router.get("/tokens", response_model=list[schemas.TokenOut], responses=_ERRORS)
def list_tokens(session: SessionDep, principal: PrincipalDep) -> list[schemas.TokenOut]:
    p = _principal_required(principal)
    return [schemas.token_out(t) for t in services.list_tokens(session, p.user_id)]


@router.post("/tokens", status_code=201, response_model=schemas.TokenCreated, responses=_ERRORS)
def create_token(body: schemas.TokenCreate, hub: HubDep, principal: WriterDep) -> schemas.TokenCreated:
    p = principal
    token, row = services.create_token(
        hub,
        p.username,
        scopes=body.scopes,
        name=body.name,
        expires_in=timedelta(days=body.expires_in_days) if body.expires_in_days else None,
        creator=p,
    )
    return schemas.TokenCreated(token=token, **schemas.token_out(row).model_dump())


@router.delete("/tokens/{token_id}", status_code=204, responses=_ERRORS)
def revoke_token(
    token_id: Annotated[int, FastAPIPath(ge=1, le=2**31 - 1)], hub: HubDep, principal: WriterDep
) -> Response:
    services.revoke_token(hub, token_id, principal=principal)
    return Response(status_code=204)
