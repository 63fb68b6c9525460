"""The FastAPI application factory. Nothing is built at import time: call ``create_app()``.

For ``uvicorn --factory hub_server.app:create_app`` the settings come from ``VF_HUB_*`` variables.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub_server import migrate
from hub_server.context import Hub
from hub_server.routers import api, simple, web
from hub_server.services.errors import HubError
from hub_server.settings import HubSettings
from hub_server.simple_index import FastPath

log = logging.getLogger("hub_server")
HERE = Path(__file__).parent
_SMALL_BODY = 1024 * 1024
_MACHINE_PREFIXES = ("/api/", "/simple/", "/files/")


class RequestGuard:
    """Cheap checks before routing: NUL characters (PostgreSQL text cannot hold them) and body size.

    Oversize bodies get 413, by Content-Length up front or while streaming.
    """

    def __init__(self, app: ASGIApp, *, publish_limit: int) -> None:
        self.app = app
        self.publish_limit = publish_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            await _send_json(send, 400, "NUL characters are not allowed in URLs")
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        is_publish = (
            scope["method"] == "POST"
            and path.startswith("/api/v1/environments/")
            and path.endswith("/versions")
        )
        limit = self.publish_limit if is_publish else _SMALL_BODY
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                await _send_json(send, 413, f"request body larger than {limit} bytes; the hub refuses it")
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise HTTPException(413, f"request body larger than {limit} bytes")
            return message

        await self.app(scope, limited, send)


async def _send_json(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _check_schema(hub: Hub) -> None:
    current = migrate.current_revision(hub.db)
    head = migrate.head_revision(hub.db.url)
    if current != head:
        raise RuntimeError(
            f"the hub database is at revision {current or 'none'}, the code expects {head}; "
            "run `vf-hub db upgrade` (vf-hub serve does it unless VF_HUB_AUTO_MIGRATE=0)"
        )


async def _poll_generation(hub: Hub) -> None:
    while True:
        await asyncio.sleep(hub.settings.cache_poll_seconds)
        try:
            await run_in_threadpool(hub.index.check_generation)
        except SQLAlchemyError as exc:  # a DB hiccup must not kill the poller
            log.warning("index cache poll failed: %s", exc)


def create_app(settings: HubSettings | None = None) -> FastAPI:
    settings = settings or HubSettings()
    hub = Hub.from_settings(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(_check_schema, hub)
        await run_in_threadpool(hub.index.check_generation)
        poller = asyncio.create_task(_poll_generation(hub))
        try:
            yield
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
            if hub.upstream is not None:
                await hub.upstream.aclose()
            hub.db.dispose()

    app = FastAPI(
        title="verifiers Environments Hub",
        version=importlib.metadata.version("verifiers-sdk"),  # the distribution both packages ship in
        description="Registry of verifiers environment packages: JSON API, PEP 503/691 simple index, web UI.",
        lifespan=lifespan,
    )
    app.state.hub = hub
    app.state.templates = Jinja2Templates(directory=HERE / "templates")

    @app.exception_handler(HubError)
    async def _hub_error(request: Request, exc: HubError) -> Response:
        headers = (
            {"WWW-Authenticate": 'Bearer, Basic realm="verifiers-hub"'} if exc.status_code == 401 else None
        )
        if request.url.path.startswith(_MACHINE_PREFIXES):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
        return web.render_error(request, exc.status_code, exc.detail)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    app.include_router(api.router)
    app.include_router(simple.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(web.router)  # last: its /{owner}/{name} pattern would shadow the rest
    app.add_middleware(RequestGuard, publish_limit=settings.max_request_size)
    app.add_middleware(FastPath, index=hub.index)  # outermost: cached index pages skip everything else
    return app
