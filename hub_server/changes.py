"""The database's change counter, read per request so every worker sees a change the moment it commits.

Each change that alters what anonymous readers may see (publish, yank, visibility, delete) bumps
``hub_state.index_generation`` in its own transaction. A worker's in-memory caches are valid only for
the counter value they were built under, so each request that may be answered from a cache first reads
the counter: no per-process TTL, no window in which a worker serves a page made private elsewhere.

Reading the counter once per request would cost a query per request, so concurrent requests share
reads: a request waits for a read that *started after it arrived* (one may be queued behind the read in
flight), which keeps the guarantee while one read answers every request that arrived during the last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from hub_server.db import Database
from hub_server.simple_index import IndexCache, read_generation


class ChangeCounter:
    """``await counter.latest()``: the counter's value as of some moment after the call began."""

    def __init__(self, read: Callable[[], int]) -> None:
        self._read = read
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active: asyncio.Future[int] | None = None  # a read in flight
        self._queued: asyncio.Future[int] | None = None  # the next read, not started yet

    @classmethod
    def of(cls, db: Database) -> ChangeCounter:
        def read() -> int:
            with db.read() as session:
                return read_generation(session)

        return cls(read)

    async def latest(self) -> int:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (tests start several): forget the old one's futures
            self._loop, self._active, self._queued = loop, None, None
        if self._queued is None:
            self._queued = asyncio.ensure_future(self._run(self._active))
        # shield: one cancelled request must not cancel the read others are waiting for
        return await asyncio.shield(self._queued)

    async def _run(self, previous: asyncio.Future[int] | None) -> int:
        if previous is not None:
            await asyncio.wait([previous])
        me, self._queued = self._queued, None  # from now on newcomers queue behind this read
        self._active = me
        try:
            return await run_in_threadpool(self._read)
        finally:
            if self._active is me:
                self._active = None


class FreshIndex:
    """ASGI middleware: before any ``/simple/`` request, bring this worker's index cache up to the
    database's counter (outside ``FastPath``, so cached answers are never older than the request)."""

    def __init__(self, app: ASGIApp, *, index: IndexCache, counter: ChangeCounter) -> None:
        self.app = app
        self.index = index
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/simple/"):
            self.index.observe(await self.counter.latest())
        await self.app(scope, receive, send)
