"""Eval summaries of a version: uploaded by publishers of that environment, listed as its leaderboard."""

from __future__ import annotations

import math
import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import Principal
from hub_server.context import Hub
from hub_server.models import Environment, EvalSummary, Owner, User, Version as VersionRow
from hub_server.services.errors import HubError
from hub_server.services.lookups import get_environment, get_version

#: Rewards are weighted sums of reward functions, so not always in [0, 1]; beyond this they are bugs.
REWARD_LIMIT = 1e6
_K = re.compile(r"^[1-9][0-9]{0,5}$")
#: The leaderboard is a page, not the whole history.
MAX_EVALS = 100


def check_eval(body: schemas.EvalIn) -> None:
    """Refuse values no real eval produces: non-finite or huge rewards, pass@k outside [0, 1] or bad k."""
    if not math.isfinite(body.avg_reward) or abs(body.avg_reward) > REWARD_LIMIT:
        raise HubError(422, f"avg_reward must be a finite number within ±{REWARD_LIMIT:g}")
    for k, value in body.pass_at_k.items():
        if not _K.match(k):
            raise HubError(
                422, f"pass_at_k keys are values of k (positive integers like '1', '8'); got {k!r}"
            )
        if int(k) > body.rollouts_per_example:
            raise HubError(
                422,
                f"pass@{k} needs at least {k} rollouts per example; this eval has {body.rollouts_per_example}",
            )
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise HubError(422, f"pass@{k} is a probability, so within [0, 1]; got {value!r}")


def add_eval(
    hub: Hub, principal: Principal | None, owner: str, name: str, version: str, body: schemas.EvalIn
) -> schemas.EvalOut:
    if principal is None:
        raise HubError(401, "uploading an eval needs a token with the publish scope")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope")
    check_eval(body)
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        # Results live under the environment, so only those who may publish it may write them.
        if not principal.can_publish_to(env.owner_id):
            raise HubError(403, f"only publishers of {env.full_name}'s namespace may upload its eval results")
        ver = get_version(env, version)
        row = EvalSummary(version_id=ver.id, uploader_id=principal.user_id, **body.model_dump())
        session.add(row)
        session.flush()
        return schemas.eval_out(row, ver.version, principal.username)


def list_evals(session: Session, env: Environment, *, limit: int = MAX_EVALS) -> list[schemas.EvalOut]:
    """Best average reward first, at most ``limit`` rows."""
    rows = session.execute(
        select(EvalSummary, VersionRow.version, Owner.name)
        .join(VersionRow, EvalSummary.version_id == VersionRow.id)
        .outerjoin(User, EvalSummary.uploader_id == User.id)
        .outerjoin(Owner, User.owner_id == Owner.id)
        .where(VersionRow.environment_id == env.id)
        .order_by(EvalSummary.avg_reward.desc(), EvalSummary.created_at, EvalSummary.id)
        .limit(min(max(limit, 1), MAX_EVALS))
    ).all()
    return [schemas.eval_out(e, version, uploader) for e, version, uploader in rows]
