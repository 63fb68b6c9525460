"""Eval summaries of a version: uploaded by publishers, listed as the environment's leaderboard."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import Principal
from hub_server.context import Hub
from hub_server.models import Environment, EvalSummary, Owner, User, Version as VersionRow
from hub_server.services.errors import HubError
from hub_server.services.lookups import get_environment, get_version


def add_eval(
    hub: Hub, principal: Principal | None, owner: str, name: str, version: str, body: schemas.EvalIn
) -> schemas.EvalOut:
    if principal is None:
        raise HubError(401, "uploading an eval needs a token with the publish scope")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope")
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        ver = get_version(env, version)
        row = EvalSummary(version_id=ver.id, uploader_id=principal.user_id, **body.model_dump())
        session.add(row)
        session.flush()
        return schemas.eval_out(row, ver.version, principal.username)


def list_evals(session: Session, env: Environment) -> list[schemas.EvalOut]:
    """Best average reward first."""
    rows = session.execute(
        select(EvalSummary, VersionRow.version, Owner.name)
        .join(VersionRow, EvalSummary.version_id == VersionRow.id)
        .outerjoin(User, EvalSummary.uploader_id == User.id)
        .outerjoin(Owner, User.owner_id == Owner.id)
        .where(VersionRow.environment_id == env.id)
        .order_by(EvalSummary.avg_reward.desc(), EvalSummary.created_at)
    ).all()
    return [schemas.eval_out(e, version, uploader) for e, version, uploader in rows]
