"""Users and organisations: one namespace of owner names, shared with the web UI's URL space."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.auth import SCOPES, Principal
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import Membership, Owner, User
from hub_server.sdk_dist import SDK_NAME
from hub_server.services.errors import HubError
from hub_server.services.lookups import find_user
from verifiers.hub import wire

_OWNER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,37}[a-z0-9])?$")
# Owner names share the URL space of the web UI (/<owner>/<name>), so these stay free.
RESERVED_OWNERS = frozenset(
    {
        "api",
        "simple",
        "files",
        "static",
        "login",
        "logout",
        "account",
        "docs",
        "redoc",
        "openapi.json",
        "healthz",
        "admin",
    }
)

# Distribution names the hub itself serves on /simple/ (PEP 503-normalised): nobody may publish them
# (``services.names`` reserves the SDK's dependency closure as well).
RESERVED_DISTRIBUTIONS = frozenset({SDK_NAME})


def _new_owner(session: Session, name: str, kind: str) -> Owner:
    name = name.lower()
    if not _OWNER_NAME.match(name) or name in RESERVED_OWNERS:
        raise HubError(
            422,
            f"invalid name {name!r}: use 1-39 characters a-z, 0-9 and '-', not starting or ending with '-'",
        )
    if session.scalar(select(Owner).where(Owner.name == name)) is not None:
        raise HubError(409, f"the name {name!r} is already taken")
    owner = Owner(name=name, kind=kind)
    session.add(owner)
    session.flush()
    return owner


def create_user(hub: Hub, username: str, *, email: str | None = None, admin: bool = False) -> User:
    with hub.db.write() as session:
        owner = _new_owner(session, username, "user")
        user = User(owner_id=owner.id, email=email, is_admin=admin)
        session.add(user)
        session.flush()
        session.refresh(user)
        return user


def create_org(hub: Hub, name: str, members: Sequence[str] = ()) -> Owner:
    """A new organisation; the first of ``members`` becomes its owner, the others members
    (``services.members`` changes that later)."""
    named = [m.lower() for m in members]
    if len(set(named)) < len(named):
        twice = next(m for i, m in enumerate(named) if m in named[:i])
        raise HubError(422, f"{twice} is listed twice: give each member once")
    with hub.db.write() as session:
        org = _new_owner(session, name, "org")
        for i, member in enumerate(members):
            user = find_user(session, member)
            if user is None:
                raise HubError(404, f"user {member!r} does not exist")
            session.add(Membership(org_id=org.id, user_id=user.id, role="owner" if i == 0 else "member"))
        if members:
            bump_catalogue(session)  # the members' cached principals gain a namespace
        return org


def whoami(session: Session, principal: Principal) -> wire.WhoAmI:
    names = session.scalars(select(Owner.name).where(Owner.id.in_(principal.owner_ids)).order_by(Owner.name))
    return wire.WhoAmI(
        username=principal.username,
        is_admin=principal.is_admin,
        scopes=sorted(principal.scopes, key=SCOPES.index),
        namespaces=list(names),
    )
