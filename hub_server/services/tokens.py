"""API tokens: created, listed, revoked; only hashes are stored.

A token minted over the API by another token (its parent) holds no more scopes than the parent and
expires no later; revoking a token revokes every token minted from it, transitively.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.auth import SCOPES, Principal, hash_token, new_token
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import ApiToken, utcnow
from hub_server.services.errors import HubError
from hub_server.services.lookups import find_user
from hub_server.services.web_sessions import end_token_sessions


def create_token(
    hub: Hub,
    username: str,
    *,
    scopes: Sequence[str] = ("read",),
    name: str = "",
    expires_in: timedelta | None = None,
    creator: Principal | None = None,
) -> tuple[str, ApiToken]:
    """A new token for ``username``. Via the API (``creator`` set) it can carry no more than the creator's."""
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise HubError(422, f"scopes must be some of {', '.join(SCOPES)}; got {list(scopes)}")
    if creator is not None and not all(creator.has(s) for s in scopes):
        raise HubError(403, "a token cannot grant scopes its creator's token lacks")
    expires_at = datetime.now(UTC) + expires_in if expires_in else None
    with hub.db.write() as session:
        if creator is not None:
            parent = session.get(ApiToken, creator.token_id)
            if parent is None or parent.revoked_at is not None:
                raise HubError(401, "the token making this request was revoked")
            if parent.expires_at is not None:
                if expires_at is not None and expires_at > parent.expires_at:
                    raise HubError(
                        403,
                        f"a token cannot outlive the token that creates it (which expires {parent.expires_at:%Y-%m-%d %H:%M} UTC)",
                    )
                expires_at = expires_at or parent.expires_at
        user = find_user(session, username)
        if user is None:
            raise HubError(404, f"user {username!r} does not exist")
        if "admin" in scopes and not user.is_admin:
            raise HubError(403, f"{username} is not a hub admin, so it cannot hold an admin-scoped token")
        token = new_token()
        row = ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[:12],
            name=name,
            scopes=sorted(set(scopes), key=SCOPES.index),
            expires_at=expires_at,
            parent_id=creator.token_id if creator is not None else None,
        )
        session.add(row)
        session.flush()
        session.refresh(row)
        return token, row


def revoke_token(hub: Hub, token_id: int, *, principal: Principal | None = None) -> None:
    with hub.db.write() as session:
        row = session.get(ApiToken, token_id)
        if row is None or (
            principal is not None and row.user_id != principal.user_id and not principal.has("admin")
        ):
            raise HubError(404, f"token {token_id} not found")
        now = utcnow()
        # Breadth-first over the tokens minted from this one: a leaked parent takes its children with it.
        frontier = [row.id]
        revoked = [row.id]
        if row.revoked_at is None:
            row.revoked_at = now
        while frontier:
            children = session.scalars(select(ApiToken).where(ApiToken.parent_id.in_(frontier))).all()
            for child in children:
                if child.revoked_at is None:
                    child.revoked_at = now
            frontier = [c.id for c in children]
            revoked += frontier
        end_token_sessions(session, revoked)  # the browsers signed in with them are signed out
        bump_catalogue(session)  # workers forget the principals they cached (api_reads.PrincipalCache)


def list_tokens(session: Session, user_id: int) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)))
