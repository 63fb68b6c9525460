"""Read grants: a private environment shared with one user (``vf-hub env share OWNER/NAME USER``).

A grant lets its user read the environment everywhere a reader can (``lookups.visible_filter`` and
``auth.can_read``: API, both index forms, files, pages, search and its counts, its public eval runs) and
nothing more. Owners and admins of the environment's namespace give, list and revoke grants
(``auth``'s matrix). Each change bumps the catalogue generation in its own transaction, so every worker's
cached principals and signed-in answers (``principal_cache``: keyed by what a caller may read) are
dropped before the next request: a revoked grant reads 404 from the next request on.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, aliased

from hub_server.auth import Principal
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import Environment, Owner, ReadGrant, User, utcnow
from hub_server.services.environments import check_manage
from hub_server.services.errors import HubError
from hub_server.services.lookups import find_user, get_environment
from verifiers.hub import wire


def _managed(session: Session, principal: Principal | None, owner: str, name: str, what: str) -> Environment:
    env = get_environment(session, principal, owner, name)  # 404 unless the caller may read it
    check_manage(principal, env, what)
    return env


def _grantee(session: Session, username: str) -> User:
    user = find_user(session, username)
    if user is not None:
        return user
    kind = session.scalar(select(Owner.kind).where(Owner.name == username.lower()))
    if kind == "org":
        raise HubError(
            422,
            f"{username} is an organisation: a read grant is for one user; share with its members one by "
            "one, or publish the environment under the organisation",
        )
    raise HubError(404, f"user {username!r} does not exist")


def _grants(session: Session, env: Environment, user_id: int | None = None) -> list[wire.ReadGrantInfo]:
    grantee, granter = aliased(User), aliased(User)
    grantee_owner, granter_owner = aliased(Owner), aliased(Owner)
    stmt = (
        select(grantee_owner.name, granter_owner.name, ReadGrant.created_at)
        .join(grantee, grantee.id == ReadGrant.user_id)
        .join(grantee_owner, grantee_owner.id == grantee.owner_id)
        .outerjoin(granter, granter.id == ReadGrant.granted_by)
        .outerjoin(granter_owner, granter_owner.id == granter.owner_id)
        .where(ReadGrant.environment_id == env.id)
        .order_by(grantee_owner.name)
    )
    if user_id is not None:
        stmt = stmt.where(ReadGrant.user_id == user_id)
    return [
        wire.ReadGrantInfo(environment=env.full_name, username=u, granted_by=by, created_at=at)
        for u, by, at in session.execute(stmt)
    ]


def list_grants(
    session: Session, principal: Principal | None, owner: str, name: str
) -> list[wire.ReadGrantInfo]:
    """The users ``owner/name`` is shared with, by name (owners and admins of its namespace)."""
    env = _managed(session, principal, owner, name, "list the read grants of")
    return _grants(session, env)


def share(hub: Hub, principal: Principal | None, owner: str, name: str, username: str) -> wire.ReadGrantInfo:
    """Let ``username`` read ``owner/name``; sharing again changes nothing (one ``INSERT … ON CONFLICT DO
    NOTHING``, so two concurrent shares never answer 500)."""
    with hub.db.write() as session:
        env = _managed(session, principal, owner, name, "share")
        user = _grantee(session, username)
        insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
        assert principal is not None
        added = session.execute(
            insert(ReadGrant)
            .values(environment_id=env.id, user_id=user.id, granted_by=principal.user_id, created_at=utcnow())
            .on_conflict_do_nothing()
            .returning(ReadGrant.id)
        ).first()
        if added is not None:
            bump_catalogue(session)  # the user's cached principals and answers gain the environment
        (grant,) = _grants(session, env, user.id)
        return grant


def unshare(hub: Hub, principal: Principal | None, owner: str, name: str, username: str) -> None:
    """Revoke ``username``'s grant on ``owner/name`` (404 if it has none); effective from the next request."""
    with hub.db.write() as session:
        env = _managed(session, principal, owner, name, "unshare")
        user = _grantee(session, username)
        removed = session.execute(
            delete(ReadGrant)
            .where(ReadGrant.environment_id == env.id, ReadGrant.user_id == user.id)
            .returning(ReadGrant.id)
        ).all()
        if not removed:
            raise HubError(404, f"{env.full_name} is not shared with {user.username}")
        bump_catalogue(session)  # every worker drops the principals and answers that included it
