"""Tokens, principals and permission rules (one place, used by the API, the index and the web UI).

Rules:
- scopes nest: ``admin`` ⊇ ``publish`` ⊇ ``read``; ``admin`` only counts for users flagged admin, and an
  admin token may do everything below in every namespace;
- roles (``ROLES``): a user owns its own namespace; in an organisation every member (any role) reads its
  private environments and runs, publishes (new environments too), edits descriptions and tags, and pushes
  eval runs and sets their visibility (``can_publish_to``); owners and admins also yank, change an
  environment's visibility, share it (read grants) and manage members (``can_manage``); owners alone
  add, remove or demote owners, and an organisation keeps one (``services.members``); deleting is for hub
  admins. docs/hub.md ("Roles and read grants") prints the whole matrix;
- a read grant (``services.sharing``) lets one user read one private environment, and its public eval
  runs, as if it were public (``can_read_environment``), and nothing more;
- a private environment the caller may not read is reported as *not found*, never as forbidden; one it
  may read but not change is a 403 saying which role it needs;
- a presented but invalid, expired or revoked token is a 401 even where no token is needed;
- the web session cookie holds a session id (``vfs_…``, one per sign-in, ``models.WebSession``), never an
  API token: a session id is refused as a token and a token in the cookie signs nobody in; an ended,
  expired or unknown session is simply signed out (the browser is sent to /login, not shown a 401).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol, get_args

from sqlalchemy import String, literal, select, union_all
from sqlalchemy.orm import Session

from hub_server.models import ApiToken, Membership, ReadGrant, User, WebSession, utcnow

TOKEN_PREFIX = "vfh_"
SCOPES = ("read", "publish", "admin")
COOKIE_NAME = "vf_hub_token"
#: What a web session id (the cookie's value) starts with; API tokens start with ``TOKEN_PREFIX``.
SESSION_PREFIX = "vfs_"
_RANK = {s: i for i, s in enumerate(SCOPES)}
#: An organisation member's role; ``ROLES`` lists them, most rights first (the matrix above).
Role = Literal["owner", "admin", "member"]
ROLES: tuple[Role, ...] = get_args(Role)
#: The roles that manage a namespace's environments and members.
MANAGING_ROLES = frozenset({"owner", "admin"})
_TOUCH_EVERY = timedelta(minutes=5)


class AuthError(Exception):
    """401: missing or bad credentials."""


class SessionEnded(AuthError):
    """The web session cookie names no live session: logged out, expired, its token revoked, or unknown."""


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_session_id() -> str:
    return SESSION_PREFIX + secrets.token_urlsafe(32)


def is_session_id(value: str) -> bool:
    return value.startswith(SESSION_PREFIX)


def hash_token(token: str) -> str:
    # Tokens carry 256 random bits, so a plain sha256 is as good as a slow KDF and keeps lookups O(1).
    return hashlib.sha256(token.encode()).hexdigest()


def token_from_authorization(header: str | None) -> str | None:
    """The token in ``Authorization: Bearer <t>`` or ``Basic base64(<any user>:<t>)`` (pip's form)."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    scheme, value = scheme.lower(), value.strip()
    if scheme == "bearer" and value:
        return _not_a_session(value)
    if scheme == "basic" and value:
        try:
            decoded = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise AuthError("malformed Basic credentials") from None
        _user, sep, password = decoded.partition(":")
        if not sep or not password:
            raise AuthError("Basic credentials must be <user>:<token> (e.g. __token__:<token>)")
        return _not_a_session(password)
    raise AuthError("unsupported Authorization scheme; use Bearer <token> or Basic __token__:<token>")


def _not_a_session(token: str) -> str:
    # A stolen cookie must not work as an API token (and downstream a ``vfs_`` value means the cookie).
    if is_session_id(token):
        raise AuthError(
            "that is a web session id, not an API token; create a token with `vf-hub token create`"
        )
    return token


@dataclass(frozen=True)
class Principal:
    user_id: int
    username: str
    is_admin: bool
    scopes: frozenset[str]
    token_id: int
    #: The user's own namespace and those of its organisations (any role).
    owner_ids: frozenset[int]
    #: Of those, the namespaces it manages: its own, and organisations where it is an owner or admin.
    managed_ids: frozenset[int]
    #: Environments shared with the user by a read grant.
    granted_ids: frozenset[int]

    def has(self, scope: str) -> bool:
        if scope == "admin":
            return self.is_admin and "admin" in self.scopes
        return any(_RANK[s] >= _RANK[scope] for s in self.scopes if s in _RANK)

    def can_read_owner(self, owner_id: int) -> bool:
        return self.has("read") and (owner_id in self.owner_ids or self.has("admin"))

    def can_read_environment(self, environment_id: int, owner_id: int) -> bool:
        """Whether it may read this private environment: its namespace's, or shared with it."""
        return self.can_read_owner(owner_id) or (self.has("read") and environment_id in self.granted_ids)

    def can_publish_to(self, owner_id: int) -> bool:
        return self.has("publish") and (owner_id in self.owner_ids or self.has("admin"))

    def can_manage(self, owner_id: int) -> bool:
        """Yank, change visibility, share; manage members (the matrix above: owners and admins)."""
        return self.has("publish") and (owner_id in self.managed_ids or self.has("admin"))


class Owned(Protocol):
    """An environment as the index caches it: its id, visibility and owner."""

    @property
    def environment_id(self) -> int: ...

    @property
    def visibility(self) -> str: ...

    @property
    def owner_id(self) -> int: ...


def can_read(principal: Principal | None, item: Owned) -> bool:
    if item.visibility == "public":
        return True
    return principal is not None and principal.can_read_environment(item.environment_id, item.owner_id)


@dataclass(frozen=True, slots=True)
class Access:
    """What a user's memberships and read grants give it (``Principal``'s namespaces and grants)."""

    owner_ids: frozenset[int]
    managed_ids: frozenset[int]
    granted_ids: frozenset[int]


_GRANT = "grant"  # the second column's value for a read grant's row in ``access_of``


def access_of(session: Session, user: User) -> Access:
    """The user's organisations (with roles) and read grants, in one query (a principal costs what it
    did before grants existed: the token, then this)."""
    rows = session.execute(
        union_all(
            select(Membership.org_id, Membership.role).where(Membership.user_id == user.id),
            select(ReadGrant.environment_id, literal(_GRANT, String)).where(ReadGrant.user_id == user.id),
        )
    ).all()
    orgs = [(i, role) for i, role in rows if role != _GRANT]
    return Access(
        owner_ids=frozenset([user.owner_id, *(i for i, _ in orgs)]),
        managed_ids=frozenset([user.owner_id, *(i for i, role in orgs if role in MANAGING_ROLES)]),
        granted_ids=frozenset(i for i, role in rows if role == _GRANT),
    )


@dataclass(frozen=True, slots=True)
class TokenCheck:
    """A valid token's principal, when it was last used and when it expires (None: never)."""

    principal: Principal
    last_used_at: datetime | None
    expires_at: datetime | None

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= datetime.now(UTC)


def check_token(session: Session, token: str) -> TokenCheck:
    """``AuthError`` if ``token`` is unknown, expired or revoked."""
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
    if row is None:
        raise AuthError("invalid token")
    _refuse_dead(row)
    return _token_check(session, row, row.expires_at)


def _refuse_dead(row: ApiToken) -> None:
    if row.revoked_at is not None:
        raise AuthError("this token was revoked; create a new one with `vf-hub token create`")
    if row.expires_at is not None and row.expires_at <= datetime.now(UTC):
        raise AuthError("this token has expired; create a new one with `vf-hub token create`")


def _token_check(session: Session, row: ApiToken, expires_at: datetime | None) -> TokenCheck:
    access = access_of(session, row.user)
    principal = Principal(
        user_id=row.user_id,
        username=row.user.username,
        is_admin=row.user.is_admin,
        scopes=frozenset(row.scopes),
        token_id=row.id,
        owner_ids=access.owner_ids,
        managed_ids=access.managed_ids,
        granted_ids=access.granted_ids,
    )
    return TokenCheck(principal, row.last_used_at, expires_at)


def check_session(session: Session, session_id: str) -> TokenCheck:
    """The principal of the API token a live web session signed in with; ``SessionEnded`` otherwise.

    The check expires with the session or its token, whichever comes first (``PrincipalCache`` checks it).
    """
    row = (
        session.scalar(select(WebSession).where(WebSession.secret_hash == hash_token(session_id)))
        if is_session_id(session_id)
        else None
    )
    if row is None or row.ended_at is not None or row.expires_at <= datetime.now(UTC):
        raise SessionEnded("this web session has ended; log in again")
    try:
        _refuse_dead(row.token)
    except AuthError as exc:
        raise SessionEnded(f"{exc}; log in again") from None
    limit = row.token.expires_at
    return _token_check(session, row.token, row.expires_at if limit is None else min(limit, row.expires_at))


def check_credential(session: Session, credential: str) -> TokenCheck:
    """``check_session`` for a session id (``deps.request_token`` takes those from the cookie only),
    else ``check_token``."""
    return (
        check_session(session, credential) if is_session_id(credential) else check_token(session, credential)
    )


def authenticate(session: Session, token: str) -> tuple[Principal, datetime | None]:
    """The principal behind API token ``token`` and when it was last used; ``AuthError`` if unknown,
    expired or revoked (a session id is unknown here: the login form takes API tokens only)."""
    check = check_token(session, token)
    return check.principal, check.last_used_at


def needs_touch(last_used_at: datetime | None) -> bool:
    return last_used_at is None or utcnow() - last_used_at > _TOUCH_EVERY
