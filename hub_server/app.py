"""The FastAPI application factory. Nothing is built at import time: call ``create_app()``.

For ``uvicorn --factory hub_server.app:create_app`` the settings come from ``VF_HUB_*`` variables.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub_server import migrate
from hub_server.api_cache import ApiCache, ApiFastPath
from hub_server.api_reads import ApiReads
from hub_server.changes import ChangeCounter, FreshIndex
from hub_server.context import Hub
from hub_server.db import plan_pool, split_pool
from hub_server.deps import hub_error_json
from hub_server.principal_cache import PrincipalCache
from hub_server.routers import api, evals, manage, pages, simple, smoke as smoke_router, web
from hub_server.services.errors import HubError
from hub_server.settings import HubSettings
from hub_server.simple_index import FastPath
from verifiers.hub import wire

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


def _size_pool(hub: Hub) -> None:
    """Fit this worker's pool to the database's connection limit (PoolSizeError if it cannot)."""
    s = hub.settings
    size = plan_pool(
        hub.db.url, workers=s.workers, pool_size=s.db_pool_size, reserved=s.db_reserved_connections
    )
    hub.db.resize(size)


def _json_safe_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    # The offending input can be NaN, Infinity or bytes, which JSON cannot carry (the default handler
    # then fails with a 500): say where and what, not the value.
    return [
        {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in errors
    ]


def create_app(settings: HubSettings | None = None) -> FastAPI:
    settings = settings or HubSettings()
    hub = Hub.from_settings(settings)
    counter = ChangeCounter.of(hub.db)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(_size_pool, hub)
        # Threads plus request sessions never need more connections than the pool has (see db.py).
        threads, sessions = split_pool(hub.db.pool_size)
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        app.state.session_slots = anyio.Semaphore(sessions)
        await run_in_threadpool(_check_schema, hub)
        await run_in_threadpool(hub.index.check_generation)
        try:
            yield
        finally:
            if hub.upstream is not None:
                await hub.upstream.aclose()
            if hub.smoke is not None:
                hub.smoke.shutdown()  # queued checks are dropped; a running one finishes in its thread
            hub.db.dispose()

    app = FastAPI(
        title="verifiers Environments Hub",
        version=importlib.metadata.version("verifiers-sdk"),  # the distribution both packages ship in
        description="Registry of verifiers environment packages: JSON API, PEP 503/691 simple index, web UI.",
        lifespan=lifespan,
        docs_url=None,  # /docs is the hub's own page (routers/pages.py): no CDN scripts, works offline
        redoc_url=None,
    )
    app.state.hub = hub
    app.state.templates = Jinja2Templates(directory=HERE / "templates")
    app.state.templates.env.globals["run_warnings"] = (
        wire.RUN_WARNINGS
    )  # the text behind a run's warning codes

    @app.exception_handler(HubError)
    async def _hub_error(request: Request, exc: HubError) -> Response:
        if request.url.path.startswith(_MACHINE_PREFIXES):
            return hub_error_json(exc)
        return web.render_error(request, exc.status_code, exc.detail)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        # Browsers get the error page (a clear 404 for an unknown address); machines keep JSON.
        browser = "text/html" in request.headers.get("accept", "")
        if request.url.path.startswith(_MACHINE_PREFIXES) or not browser:
            return await http_exception_handler(request, exc)
        return web.render_error(request, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return JSONResponse({"detail": _json_safe_errors(exc.errors())}, status_code=422)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    app.include_router(api.router)
    app.include_router(evals.router)
    app.include_router(smoke_router.router)
    app.include_router(simple.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(pages.router)  # before web: /account and /docs are not owners
    app.include_router(manage.router)  # before web: …/settings and /account/orgs/… are not environments
    app.include_router(web.router)  # last: its /{owner}/{name} pattern would shadow the rest
    # the hot JSON reads skip routing and validation (innermost: after the guard, under the cache)
    app.state.principals = PrincipalCache()
    app.add_middleware(ApiReads, hub=hub, counter=counter, principals=app.state.principals)
    app.add_middleware(RequestGuard, publish_limit=settings.max_request_size)
    app.add_middleware(FastPath, index=hub.index)  # cached index pages skip everything else
    # anonymous detail/search/resolve answers, keyed by the catalogue counter (reads it per request)
    app.state.api_cache = ApiCache()
    app.add_middleware(ApiFastPath, cache=app.state.api_cache, counter=counter)
    # outermost: bring the index cache to the database's change counter before anything reads it
    app.add_middleware(FreshIndex, index=hub.index, counter=counter)
    return app
