"""An organisation's members and their roles: list, add, change the role, remove (``auth``'s matrix).

Every change is made either by a caller of the API or web UI (``actor``: its role in the organisation
decides) or, with ``actor=None``, by the hub's operator from the command line (``vf-hub org …``, which
works on the database directly). Either way an organisation never loses its last owner, and each change
bumps the catalogue generation, so cached principals (``principal_cache``) lose or gain the namespace
from the next request on.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import MANAGING_ROLES, ROLES, Principal, Role
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import Membership, Owner, User
from hub_server.services.errors import HubError
from hub_server.services.lookups import find_user


def check_role(role: str) -> Role:
    if role not in ROLES:
        raise HubError(422, f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    return role


def get_org(session: Session, org: str) -> Owner:
    row = session.scalar(select(Owner).where(Owner.name == org.lower(), Owner.kind == "org"))
    if row is None:
        raise HubError(404, f"organisation {org!r} does not exist")
    return row


def _user(session: Session, username: str) -> User:
    user = find_user(session, username)
    if user is None:
        raise HubError(404, f"user {username!r} does not exist")
    return user


def _membership(session: Session, org: Owner, user: User) -> Membership | None:
    return session.scalar(
        select(Membership).where(Membership.org_id == org.id, Membership.user_id == user.id)
    )


def _found(session: Session, org: str, username: str) -> tuple[Owner, User, Membership | None]:
    """The organisation, the user (404 for either when absent) and the user's membership, if any."""
    org_row, user = get_org(session, org), _user(session, username)
    return org_row, user, _membership(session, org_row, user)


def _member(session: Session, org: str, username: str) -> tuple[Owner, User, Membership]:
    org_row, user, membership = _found(session, org, username)
    if membership is None:
        raise HubError(404, f"{user.username} is not a member of {org_row.name}")
    return org_row, user, membership


def _role_of(session: Session, org: Owner, principal: Principal) -> str | None:
    """The caller's role in ``org`` (a hub admin's token counts as an owner's), or None."""
    if principal.has("admin"):
        return "owner"
    role = session.scalar(
        select(Membership.role).where(Membership.org_id == org.id, Membership.user_id == principal.user_id)
    )
    return role


def _check_change(
    session: Session, org: Owner, actor: Principal | None, target: User, old: str | None, new: str | None
) -> None:
    """Whether ``actor`` may move ``target`` from role ``old`` to ``new`` (None: not a member)."""
    if actor is None:
        return  # the operator, on the database
    if not actor.has("publish"):
        raise HubError(403, "this token lacks the publish scope; create one with `--scope publish`")
    mine = _role_of(session, org, actor)
    if mine is None:
        raise HubError(403, f"only owners and admins of {org.name} manage its members")
    if new is None and target.id == actor.user_id:
        return  # anyone may leave (the last owner is refused below)
    if mine not in MANAGING_ROLES:
        raise HubError(403, f"only owners and admins of {org.name} manage its members; you are a {mine}")
    if mine != "owner" and "owner" in (old, new):
        raise HubError(403, f"only owners of {org.name} add, remove or change its owners; you are an {mine}")


def _keep_an_owner(session: Session, org: Owner, old: str | None, new: str | None, username: str) -> None:
    if old != "owner" or new == "owner":
        return
    owners = session.scalar(
        select(func.count()).where(Membership.org_id == org.id, Membership.role == "owner")
    )
    if (owners or 0) <= 1:
        raise HubError(
            409,
            f"{username} is the last owner of {org.name}: make another member an owner first "
            f"(vf-hub org set-role {org.name} USER owner)",
        )


def list_members(session: Session, actor: Principal | None, org: str) -> list[schemas.MemberOut]:
    """Members with their roles, owners first; for the organisation's members (any role) and admins."""
    org_row = get_org(session, org)
    if actor is not None and _role_of(session, org_row, actor) is None:
        raise HubError(403, f"only members of {org_row.name} see its members")
    rows = session.execute(
        select(Owner.name, Membership.role)
        .join(User, User.id == Membership.user_id)
        .join(Owner, Owner.id == User.owner_id)
        .where(Membership.org_id == org_row.id)
    ).all()
    order: dict[str, int] = {role: i for i, role in enumerate(ROLES)}
    return [
        schemas.MemberOut(username=name, role=check_role(role))
        for name, role in sorted(rows, key=lambda r: (order.get(r[1], len(ROLES)), r[0]))
    ]


def add_member(
    hub: Hub, org: str, username: str, role: str = "member", *, actor: Principal | None = None
) -> schemas.MemberOut:
    """Add ``username`` to ``org`` with ``role``; 409 if it is a member already (``set_role`` changes that)."""
    checked = check_role(role)
    try:
        with hub.db.write() as session:
            org_row, user, existing = _found(session, org, username)
            _check_change(session, org_row, actor, user, None, role)
            if existing is not None:
                raise _already(org_row.name, user.username, existing.role)
            session.add(Membership(org_id=org_row.id, user_id=user.id, role=checked))
            session.flush()  # a concurrent add of the same member fails here, inside the try
            bump_catalogue(session)  # the member's cached principals gain a namespace
            return schemas.MemberOut(username=user.username, role=checked)
    except IntegrityError:
        with hub.db.read() as session:
            org_row, user, existing = _found(session, org, username)
        raise _already(org_row.name, user.username, existing.role if existing else role) from None


def _already(org: str, username: str, role: str) -> HubError:
    return HubError(
        409,
        f"{username} is already a member of {org} (role {role}); change the role with "
        f"`vf-hub org set-role {org} {username} ROLE`",
    )


def set_role(
    hub: Hub, org: str, username: str, role: str, *, actor: Principal | None = None
) -> schemas.MemberOut:
    """Change a member's role (404 for someone who is not a member)."""
    check_role(role)
    with hub.db.write() as session:
        return _change_role(session, actor, *_member(session, org, username), role)


def put_member(
    hub: Hub, org: str, username: str, role: str, *, actor: Principal | None = None
) -> schemas.MemberOut:
    """``PUT /orgs/{org}/members/{user}``: add ``username`` with ``role``, or give a member that role."""
    check_role(role)
    with hub.db.write() as session:
        org_row, user, membership = _found(session, org, username)
        if membership is not None:
            return _change_role(session, actor, org_row, user, membership, role)
    return add_member(hub, org, username, role, actor=actor)


def _change_role(
    session: Session, actor: Principal | None, org: Owner, user: User, membership: Membership, role: str
) -> schemas.MemberOut:
    checked = check_role(role)
    _check_change(session, org, actor, user, membership.role, checked)
    _keep_an_owner(session, org, membership.role, checked, user.username)
    if membership.role != checked:
        membership.role = checked
        bump_catalogue(session)  # what the member may manage changed
    return schemas.MemberOut(username=user.username, role=checked)


def remove_member(hub: Hub, org: str, username: str, *, actor: Principal | None = None) -> None:
    """Take ``username`` out of ``org``: its tokens lose the namespace from the next request on."""
    with hub.db.write() as session:
        org_row, user, membership = _member(session, org, username)
        _check_change(session, org_row, actor, user, membership.role, None)
        _keep_an_owner(session, org_row, membership.role, None, user.username)
        session.delete(membership)
        bump_catalogue(session)


def organisations_of(session: Session, principal: Principal) -> list[tuple[str, str]]:
    """(organisation, the caller's role there) for each of its organisations, by name (the account page)."""
    rows = session.execute(
        select(Owner.name, Membership.role)
        .join(Owner, Owner.id == Membership.org_id)
        .where(Membership.user_id == principal.user_id)
        .order_by(Owner.name)
    ).all()
    return [(name, role) for name, role in rows]
