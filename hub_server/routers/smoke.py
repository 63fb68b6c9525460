"""``GET /api/v1/environments/{owner}/{name}/versions/{version}/smoke-check``: a version's publish-time
smoke check (``hub_server.smoke_checks``), with its log. Private environments are a 404 for others, as everywhere."""

from __future__ import annotations

from fastapi import APIRouter

from hub_server import services
from hub_server.deps import HubDep, PrincipalDep, SessionDep
from hub_server.services.errors import HubError
from hub_server.smoke_checks import SmokeCheckOut, smoke_check_of

router = APIRouter(prefix="/api/v1", tags=["api"])


@router.get("/environments/{owner}/{name}/versions/{version}/smoke-check", response_model=SmokeCheckOut)
def get_smoke_check(
    owner: str, name: str, version: str, hub: HubDep, session: SessionDep, principal: PrincipalDep
) -> SmokeCheckOut:
    env = services.get_environment(session, principal, owner, name)
    ver = services.get_version(env, version)
    check = smoke_check_of(hub.db, ver.id, with_log=True)
    if check is None:
        raise HubError(404, f"no smoke check of {env.full_name} {ver.version} (published before checks ran)")
    return check
