"""Loopback HTTP servers for the online backend's tests (a fake Serper API, a tiny web site)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def loopback(routes: list[tuple[str, str, Handler]]) -> AsyncIterator[str]:
    """Serve ``(method, path, handler)`` routes on a free 127.0.0.1 port; yields the base URL."""
    app = web.Application()
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
def serve() -> Callable[[list[tuple[str, str, Handler]]], AbstractAsyncContextManager[str]]:
    """``async with serve(routes) as base_url``: a loopback server for one test."""
    return loopback
