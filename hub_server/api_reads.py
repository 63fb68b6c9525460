"""The hot JSON reads (environment detail, search, resolve) answered without FastAPI's routing.

Profiling the uncached reads under load showed a large share of the event loop's time in Starlette's
and FastAPI's per-request machinery (middleware stack, route matching, dependency solving, parameter
validation) rather than in the hub. ``ApiReads`` answers GETs of these three routes directly: it parses
the query with Starlette's own ``QueryParams``, checks it against the same limits the routes declare,
and calls the same blocking answer functions as the routes (``routers.api``), so the bytes are the
same. A request it is not sure about (a parameter out of range or repeated, a ``HEAD``) goes on to
the FastAPI route unchanged, which then gives today's answer, including its 422 body.

A request with a token takes the token's principal from ``principal_cache`` when this worker checked
it under the current catalogue generation, saving the token and membership queries, and then the
answer this worker made under that generation for a caller who may read the same environments, if
any (``PrincipalCache.answers``); a token whose last use is due to be recorded takes the query path,
which records it.

The blocking part runs on at most ``HOT_THREADS`` threads at a time. Under load, more threads only
contend for the GIL (pysqlite gives it up on every row it steps), starve the event loop and finish in
no particular order: on SQLite at 64 connections (benchmarks/hub_api.py, miss mix) two threads
answered a third more requests than sixteen, with a p99 a third lower, and more than four. A waiting
hot read holds a token of the app's thread limiter, as it did before it had its own limiter, so the
connection budget of ``db.split_pool`` holds. (Taking that token only once a hot thread is free
measured a quarter fewer answers: the change-counter reads then run back to back beside the hot
threads instead of each answering a batch of requests.)
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import cast, get_args

import anyio.to_thread
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hub_server.api_cache import CachedAnswer, is_cached_route
from hub_server.auth import needs_touch
from hub_server.changes import ChangeCounter
from hub_server.context import Hub
from hub_server.deps import hub_error_json, request_token
from hub_server.principal_cache import PrincipalCache
from hub_server.routers.api import Caller, detail_answer, resolve_answer, search_answer
from hub_server.services.errors import HubError
from hub_server.services.lookups import visibility_key
from verifiers.hub import wire

_DETAIL_PREFIX = "/api/v1/environments/"
_DIGITS = re.compile(r"[1-9][0-9]{0,5}")  # what the int parameters surely accept
_SORT_KEYS: frozenset[str] = frozenset(get_args(wire.SortKey))
# The limits the routes declare (routers/api.py); outside them the route answers (with its 422).
_SEARCH_KEYS = ("q", "owner", "sort", "page", "per_page")
_MAX_Q, _MAX_TAGS, _MAX_OWNER, _MAX_PAGE, _MAX_PER_PAGE, _MAX_SPEC = 200, 10, 64, 10_000, 100, 300


_Answer = Callable[[Hub, Caller], Response]
#: Threads answering hot reads at once (see the module's docstring).
HOT_THREADS = 2


class _Fallback(Exception):
    """Let the FastAPI route answer this request."""


def _int(value: str | None, default: int, high: int) -> int:
    if value is None:
        return default
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= high:
        raise _Fallback
    return int(value)


def _single(params: QueryParams, key: str) -> str | None:
    values = params.getlist(key)
    if len(values) > 1:
        raise _Fallback
    return values[0] if values else None


class ApiReads:
    """ASGI middleware: GETs of detail, search and resolve answered in one worker-thread hop."""

    def __init__(self, app: ASGIApp, *, hub: Hub, counter: ChangeCounter, principals: PrincipalCache) -> None:
        self.app = app
        self.hub = hub
        self.counter = counter
        self.principals = principals
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limiter: anyio.CapacityLimiter | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope.get("root_path")
            and is_cached_route(scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        try:
            call = self._call(scope["path"], QueryParams(scope["query_string"]))
        except _Fallback:
            await self.app(scope, receive, send)
            return
        response: Response
        url = (scope["path"], scope["query_string"])
        try:
            caller = Caller(request_token(Request(scope)))
            generation = None
            if caller.token:
                # read after the request arrived: a token revoked before then is never taken from memory
                generation = (await self.counter.latest()).catalogue
                self.principals.observe(generation)
                caller.known = self.principals.get(caller.token)
                if caller.known is not None and not needs_touch(caller.known.last_used_at):
                    kept = self.principals.answers.get((visibility_key(caller.known.principal), *url))
                    if kept is not None:
                        await kept.send(send)
                        return
            try:
                response = await self._run(call, caller)
            finally:
                if generation is not None and caller.token and caller.checked is not None:
                    self.principals.put(generation, caller.token, caller.checked)
            if generation is not None and caller.checked is not None and response.status_code == 200:
                self.principals.answers.put(
                    generation,
                    (visibility_key(caller.checked.principal), *url),
                    CachedAnswer(tuple(response.raw_headers), bytes(response.body)),
                )
        except HubError as exc:  # as the app's HubError handler answers a machine path
            response = hub_error_json(exc)
        await response(scope, receive, send)

    async def _run(self, call: _Answer, caller: Caller) -> Response:
        loop = asyncio.get_running_loop()
        if self._limiter is None or loop is not self._loop:  # tests start several event loops
            self._loop, self._limiter = loop, anyio.CapacityLimiter(HOT_THREADS)
        # A token of the app's thread limiter first, as any blocking call takes (so the threads never
        # need more connections than the pool has), then a turn on one of the HOT_THREADS.
        async with anyio.to_thread.current_default_thread_limiter():
            return await anyio.to_thread.run_sync(call, self.hub, caller, limiter=self._limiter)

    def _call(self, path: str, params: QueryParams) -> _Answer:
        if path.startswith(_DETAIL_PREFIX):
            owner, name = path[len(_DETAIL_PREFIX) :].split("/")
            return lambda hub, caller: detail_answer(hub, caller, owner, name)
        if path.endswith("/resolve"):
            spec = _single(params, "spec")
            if spec is None or not 1 <= len(spec) <= _MAX_SPEC:
                raise _Fallback
            return lambda hub, caller: resolve_answer(hub, caller, spec)
        return _search(params)


def _search(params: QueryParams) -> _Answer:
    q, owner, sort, page, per_page = (_single(params, key) for key in _SEARCH_KEYS)
    tags = tuple(params.getlist("tag"))
    if (
        len(q or "") > _MAX_Q
        or len(tags) > _MAX_TAGS
        or len(owner or "") > _MAX_OWNER
        or (sort is not None and sort not in _SORT_KEYS)
    ):
        raise _Fallback
    page_n, per_page_n = _int(page, 1, _MAX_PAGE), _int(per_page, 20, _MAX_PER_PAGE)
    sort_key = cast(wire.SortKey, sort if sort is not None else "downloads")
    return lambda hub, caller: search_answer(
        hub, caller, q=q or "", tags=tags, owner=owner, sort=sort_key, page=page_n, per_page=per_page_n
    )
