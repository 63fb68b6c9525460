"""FastAPI dependencies: the app's ``Hub`` and the caller's ``Principal``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from hub_server.auth import COOKIE_NAME, AuthError, Principal, token_from_authorization
from hub_server.context import Hub
from hub_server.services.errors import HubError

SAFE_METHODS = frozenset({"GET", "HEAD"})


async def get_hub(request: Request) -> Hub:
    # async (like optional_principal): FastAPI would run a plain function in a worker thread
    hub: Hub = request.app.state.hub
    return hub


def request_token(request: Request) -> str | None:
    """Header credentials everywhere; the web session cookie only on safe methods (no CSRF surface)."""
    token = token_from_authorization(request.headers.get("authorization"))
    if token is None and request.method in SAFE_METHODS:
        token = request.cookies.get(COOKIE_NAME) or None
    return token


async def optional_principal(request: Request, hub: Annotated[Hub, Depends(get_hub)]) -> Principal | None:
    """The caller, or None when no credentials came; the token lookup (blocking) runs in a worker thread."""
    try:
        token = request_token(request)
        return await run_in_threadpool(hub.principal, token) if token else None
    except AuthError as exc:
        raise HubError(401, str(exc)) from None


def read_session(hub: Annotated[Hub, Depends(get_hub)]) -> Iterator[Session]:
    with hub.db.read() as session:
        yield session


HubDep = Annotated[Hub, Depends(get_hub)]
PrincipalDep = Annotated[Principal | None, Depends(optional_principal)]
SessionDep = Annotated[Session, Depends(read_session)]
