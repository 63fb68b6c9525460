"""What the account page lists: the caller's own environments (private ones included), those shared with
it, and its stars."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import Principal
from hub_server.models import Environment, Star
from hub_server.services.lookups import visible_filter
from hub_server.views import environment_columns, load_environments
from verifiers.hub import wire

#: Rows per list on the account page (the search page pages through the rest).
LIMIT = 200


def own_environments(session: Session, principal: Principal) -> list[wire.EnvironmentSummary]:
    """Environments in the caller's namespace and its organisations', newest activity first."""
    stmt = (
        visible_filter(environment_columns(), principal)
        .where(Environment.owner_id.in_(principal.owner_ids))
        .order_by(Environment.updated_at.desc(), Environment.name)
        .limit(LIMIT)
    )
    return [schemas.env_summary(e) for e in load_environments(session, stmt, files=False)]


def shared_environments(session: Session, principal: Principal) -> list[wire.EnvironmentSummary]:
    """Environments shared with the caller by a read grant (``services.sharing``), by name."""
    if not principal.granted_ids:
        return []
    stmt = (
        visible_filter(environment_columns(), principal)
        .where(Environment.id.in_(principal.granted_ids))
        .order_by(Environment.name)
        .limit(LIMIT)
    )
    return [schemas.env_summary(e) for e in load_environments(session, stmt, files=False)]


def starred_environments(session: Session, principal: Principal) -> list[wire.EnvironmentSummary]:
    """Environments the caller starred that it may still read (a star on one made private since is hidden)."""
    stmt = (
        visible_filter(environment_columns(), principal)
        .join(Star, Star.environment_id == Environment.id)
        .where(Star.user_id == principal.user_id)
        .order_by(Star.created_at.desc())
        .limit(LIMIT)
    )
    return [schemas.env_summary(e) for e in load_environments(session, stmt, files=False)]


def has_starred(session: Session, principal: Principal | None, environment_id: int) -> bool:
    """Whether the caller starred the environment (the page's star button shows it)."""
    if principal is None:
        return False
    stmt = select(Star.id).where(Star.user_id == principal.user_id, Star.environment_id == environment_id)
    return session.scalar(stmt) is not None
