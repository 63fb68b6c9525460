"""The database's change counters, read per request so every worker sees a change the moment it commits.

Each change that alters the simple index (publish, yank, visibility, delete) bumps
``hub_state.index_generation`` in its own transaction; each change that alters a JSON API answer (those,
plus descriptions, tags, stars and counted downloads) bumps ``hub_state.catalogue_generation``. A worker's
in-memory caches are valid only for the counter value they were built under, so each request that may be
answered from a cache first reads the counters: no per-process TTL, no window in which a worker serves a
page made private elsewhere.

Reading the counter once per request would cost a query per request, so concurrent requests share
reads: a request waits for a read that *started after it arrived* (one may be queued behind the read in
flight), which keeps the guarantee while one read answers every request that arrived during the last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Connection, or_, select, update
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from hub_server.db import Database
from hub_server.models import CATALOGUE_GENERATION, INDEX_GENERATION, HubState
from hub_server.simple_index import IndexCache


@dataclass(frozen=True, slots=True)
class Generations:
    """Both counters, read in one query."""

    index: int
    catalogue: int


# Built once: building a select costs about what running it costs, and a statement object seen the
# first time has its result columns matched to the compiled cache's again (see ``views``).
_GENERATIONS = select(HubState.key, HubState.value).where(
    or_(HubState.key == INDEX_GENERATION, HubState.key == CATALOGUE_GENERATION)
)


def read_generations(session: Session | Connection) -> Generations:
    rows = session.execute(_GENERATIONS)
    values: dict[str, int] = {key: value for key, value in rows}
    return Generations(values.get(INDEX_GENERATION, 0), values.get(CATALOGUE_GENERATION, 0))


def bump_catalogue(session: Session) -> None:
    """Call inside a write transaction that changes a JSON API answer but not the simple index
    (``simple_index.bump_generation`` bumps both)."""
    session.execute(
        update(HubState).where(HubState.key == CATALOGUE_GENERATION).values(value=HubState.value + 1)
    )


class ChangeCounter:
    """``await counter.latest()``: the counters' values as of some moment after the call began."""

    def __init__(self, read: Callable[[], Generations]) -> None:
        self._read = read
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active: asyncio.Future[Generations] | None = None  # a read in flight
        self._queued: asyncio.Future[Generations] | None = None  # the next read, not started yet

    @classmethod
    def of(cls, db: Database) -> ChangeCounter:
        def read() -> Generations:
            with db.hot(snapshot=False) as conn:  # one statement: no transaction needed
                return read_generations(conn)

        return cls(read)

    async def latest(self) -> Generations:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (tests start several): forget the old one's futures
            self._loop, self._active, self._queued = loop, None, None
        if self._queued is None:
            self._queued = asyncio.ensure_future(self._run(self._active))
        # shield: one cancelled request must not cancel the read others are waiting for
        return await asyncio.shield(self._queued)

    async def _run(self, previous: asyncio.Future[Generations] | None) -> Generations:
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
            self.index.observe((await self.counter.latest()).index)
        await self.app(scope, receive, send)
