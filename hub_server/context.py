"""The per-app state: settings, database, blob store and index cache. Built by ``create_app``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from hub_server.auth import (
    AuthError,
    Principal,
    TokenCheck,
    check_credential,
    check_session,
    check_token,
    needs_touch,
)
from hub_server.blobs import BlobStore, LocalBlobStore
from hub_server.db import Database
from hub_server.models import ApiToken, utcnow
from hub_server.sdk_dist import SDK_NAME, SdkDist
from hub_server.settings import HubSettings
from hub_server.simple_index import IndexCache
from hub_server.smoke_checks import SmokeChecks
from hub_server.upstream import Upstream
from hub_server.validation import Limits

log = logging.getLogger("hub_server")
_smoke_lock = threading.Lock()


@dataclass
class Hub:
    settings: HubSettings
    db: Database
    blobs: BlobStore
    index: IndexCache
    #: The index /simple/ falls through to for names the hub does not own; None when disabled.
    upstream: Upstream | None = None
    #: The SDK's own wheel and sdist, served under its reserved name.
    sdk: SdkDist | None = None
    #: The publish-time smoke checks' worker pool (``hub_server.smoke_checks``), made on first publish.
    smoke: SmokeChecks | None = None

    def smoke_checks(self) -> SmokeChecks:
        """The smoke checks' pool, made on first use (never at start-up)."""
        with _smoke_lock:
            if self.smoke is None:
                self.smoke = SmokeChecks(self.settings, self.db, self.blobs)
            return self.smoke

    @classmethod
    def from_settings(cls, settings: HubSettings) -> Hub:
        db = Database(settings.resolved_database_url)
        upstream_url = settings.resolved_upstream_index
        return cls(
            settings=settings,
            db=db,
            blobs=LocalBlobStore(settings.resolved_blob_dir),
            index=IndexCache(db, served=frozenset({SDK_NAME})),
            upstream=Upstream(
                upstream_url, ttl=settings.upstream_ttl_seconds, timeout=settings.upstream_timeout_seconds
            )
            if upstream_url
            else None,
            sdk=SdkDist(settings.resolved_sdk_cache_dir, settings.sdk_dist_dir),
        )

    @property
    def limits(self) -> Limits:
        s = self.settings
        return Limits(s.max_file_size, s.max_unpacked_size, s.max_archive_members, s.max_readme_size)

    def principal(self, token: str) -> Principal:
        """Authenticate a raw API token (blocking). Raises ``AuthError``."""
        return self._checked(check_token, token)

    def caller(self, credential: str) -> Principal:
        """Authenticate what ``deps.request_token`` found: an API token, or the cookie's web session id
        (blocking). Raises ``AuthError`` (``SessionEnded`` for a session that is no longer live)."""
        return self._checked(check_credential, credential)

    def web_principal(self, session_id: str) -> Principal:
        """The principal of a live web session (blocking; for the cookie only). Raises ``SessionEnded``."""
        return self._checked(check_session, session_id)

    def _checked(self, check: Callable[[Session, str], TokenCheck], credential: str) -> Principal:
        with self.db.read() as session:
            result = check(session, credential)
        self.touch(result.principal, result.last_used_at)  # after the session: one connection at a time
        return result.principal

    def touch(self, principal: Principal, last_used: datetime | None) -> None:
        """Record the token's use if the stored time is stale (blocking; call with no session open,
        so a thread never holds two pooled connections)."""
        if not needs_touch(last_used):
            return
        # Best effort: an audit timestamp must never fail a request.
        try:
            with self.db.write() as session:
                session.execute(
                    update(ApiToken).where(ApiToken.id == principal.token_id).values(last_used_at=utcnow())
                )
        except SQLAlchemyError as exc:
            log.warning("could not record the last use of token %s: %s", principal.token_id, exc)


__all__ = ["AuthError", "Hub"]
