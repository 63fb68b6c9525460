"""FastAPI dependencies: the app's ``Hub`` and the caller's ``Principal``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
import anyio.to_thread
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from hub_server.auth import (
    COOKIE_NAME,
    AuthError,
    Principal,
    SessionEnded,
    TokenCheck,
    check_credential,
    is_session_id,
    token_from_authorization,
)
from hub_server.context import Hub
from hub_server.services.errors import HubError

SAFE_METHODS = frozenset({"GET", "HEAD"})


def hub_error_json(exc: HubError) -> JSONResponse:
    """A ``HubError`` as machine paths answer it: ``{"detail": ...}``, with the auth challenge on a 401."""
    headers = {"WWW-Authenticate": 'Bearer, Basic realm="verifiers-hub"'} if exc.status_code == 401 else None
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


async def get_hub(request: Request) -> Hub:
    # async (like optional_principal): FastAPI would run a plain function in a worker thread
    hub: Hub = request.app.state.hub
    return hub


def request_token(request: Request) -> str | None:
    """Header credentials everywhere; the web session cookie only on safe methods (no CSRF surface).

    The result is an API token or, only when it came from the cookie, a web session id (``vfs_``):
    a session id in a header is refused here, and a cookie holding anything else (an API token, as
    cookies did before web sessions) is ignored, so the two kinds of credential never stand in for
    each other downstream (``auth.check_credential`` tells them apart by the prefix)."""
    try:
        token = token_from_authorization(request.headers.get("authorization"))
    except AuthError as exc:  # malformed credentials are a 401 like any bad token, never a 500
        raise HubError(401, str(exc)) from None
    if token is None and request.method in SAFE_METHODS:
        cookie = request.cookies.get(COOKIE_NAME) or ""
        token = cookie if is_session_id(cookie) else None
    return token


def principal_for(hub: Hub, token: str | None) -> Principal | None:
    """The caller with credentials ``token`` (None for none, or for a web session that has ended: the
    browser is signed out); blocking; a bad token is a 401."""
    try:
        return hub.caller(token) if token else None
    except SessionEnded:
        return None
    except AuthError as exc:
        raise HubError(401, str(exc)) from None


def check_in(session: Session, token: str | None) -> TokenCheck | None:
    """Like ``principal_for`` but in the caller's session (no second connection, no second
    transaction); the check says when the token was last used, for ``Hub.touch`` once that session
    is closed."""
    if not token:
        return None
    try:
        return check_credential(session, token)
    except SessionEnded:
        return None
    except AuthError as exc:
        raise HubError(401, str(exc)) from None


async def optional_principal(request: Request, hub: Annotated[Hub, Depends(get_hub)]) -> Principal | None:
    """The caller, or None when no credentials came; the token lookup (blocking) runs in a worker thread."""
    token = request_token(request)
    return await run_in_threadpool(principal_for, hub, token) if token else None


async def required_principal(
    principal: Annotated[Principal | None, Depends(optional_principal)],
) -> Principal:
    """For writes: no credentials is a 401 before anything about the target is looked up, so an
    anonymous caller cannot tell an absent namespace or environment from a present one."""
    if principal is None:
        raise HubError(
            401, "this needs a token (Authorization: Bearer <token>); writes need the publish scope"
        )
    return principal


# Closing a session returns its connection; it gets threads of its own, so it never queues behind
# requests that are themselves waiting for a connection.
_CLOSERS = anyio.CapacityLimiter(8)


async def read_session(request: Request, hub: Annotated[Hub, Depends(get_hub)]) -> AsyncIterator[Session]:
    """A read session for one request, admitted by ``app.state.session_slots``.

    Such a session holds its connection from the handler's first query until after the response is
    serialised, which happens in another worker thread. Admitting at most ``session_slots`` of them,
    with the pool sized for those plus one connection per thread, means no thread ever waits for a
    connection that only a request waiting for a thread could give back (the pool deadlock).
    """
    slots: anyio.Semaphore = request.app.state.session_slots
    async with slots:
        session = hub.db.session()
        try:
            yield session
        finally:
            await anyio.to_thread.run_sync(session.close, limiter=_CLOSERS)


HubDep = Annotated[Hub, Depends(get_hub)]
PrincipalDep = Annotated[Principal | None, Depends(optional_principal)]
WriterDep = Annotated[Principal, Depends(required_principal)]
# scope="function": closed once the answer is serialised, not after a slow client has read it.
SessionDep = Annotated[Session, Depends(read_session, scope="function")]
