"""Web sessions: one per browser sign-in, on top of the API token the user signed in with.

The cookie holds a random session id (``auth.new_session_id``); only its sha256 is stored. So each
sign-in has its own cookie and CSRF form token (``csrf.form_token``), a stolen cookie is not the API
token, and logging out ends the session here, not just in the browser. A session lives at most
``MAX_AGE`` and never longer than its token; revoking or expiring the token ends it
(``auth.check_session`` checks the token on each use).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, update
from sqlalchemy.orm import Session

from hub_server.auth import hash_token, is_session_id, new_session_id
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import ApiToken, WebSession, utcnow
from hub_server.services.errors import HubError

MAX_AGE = timedelta(days=30)


@dataclass(frozen=True, slots=True)
class Started:
    """A new session's id (the cookie's value, shown nowhere else) and when it ends."""

    session_id: str
    expires_at: datetime


def start_session(hub: Hub, token_id: int) -> Started:
    """A new session for the (already authenticated) API token ``token_id``."""
    now = utcnow()
    with hub.db.write() as session:
        token = session.get(ApiToken, token_id)
        if token is None or token.revoked_at is not None:
            raise HubError(401, "this token was revoked; create a new one with `vf-hub token create`")
        expires_at = now + MAX_AGE
        if token.expires_at is not None:
            expires_at = min(expires_at, token.expires_at)
        # Sessions that are over are of no further use: each sign-in clears its token's.
        session.execute(
            delete(WebSession).where(
                WebSession.token_id == token_id,
                or_(WebSession.ended_at.is_not(None), WebSession.expires_at <= now),
            )
        )
        session_id = new_session_id()
        session.add(WebSession(secret_hash=hash_token(session_id), token_id=token_id, expires_at=expires_at))
        return Started(session_id, expires_at)


def end_session(hub: Hub, session_id: str) -> None:
    """Log out: the session's id signs nobody in from now on (an unknown or ended one is left as is)."""
    if not is_session_id(session_id):
        return
    with hub.db.write() as session:
        ended = session.execute(
            update(WebSession)
            .where(WebSession.secret_hash == hash_token(session_id), WebSession.ended_at.is_(None))
            .values(ended_at=utcnow())
        )
        if ended.rowcount:  # type: ignore[attr-defined]
            bump_catalogue(session)  # workers forget the principal they cached for it (PrincipalCache)


def end_token_sessions(session: Session, token_ids: list[int]) -> None:
    """Inside the transaction that revokes ``token_ids``: their sessions end with them. (The lookup
    checks the token too; this keeps the table honest about which sessions are live.)"""
    session.execute(
        update(WebSession)
        .where(WebSession.token_id.in_(token_ids), WebSession.ended_at.is_(None))
        .values(ended_at=utcnow())
    )
