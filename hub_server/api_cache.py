"""Anonymous answers of the hot JSON reads (environment detail, search, resolve), replayed from memory.

The first anonymous GET of a URL goes through the FastAPI route; its 200 answer (status, headers and
body, exactly as sent) is kept under the catalogue generation the request read before it started
(``changes.ChangeCounter``). Later anonymous GETs of the same URL under the same generation get those
bytes back from ``ApiFastPath`` without routing, validation or a thread hop. Any change a JSON answer
shows bumps the generation in its own transaction, and every request reads the counter after it
arrived, so no worker answers from a cache older than the request.

This middleware caches anonymous requests only: what they may see (public environments) is the same for
all of them. A request with credentials (an ``Authorization`` header or the web session cookie) goes on
to ``api_reads``, which checks the token on every request and replays answers kept for callers who may
read exactly the same environments (``PrincipalCache.answers``, a separate ``ApiCache``, so one user's
entries never evict the anonymous ones). Only 200s are kept: a 404 for an absent environment and one
for an invisible environment take the same (uncached) path.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub_server.auth import COOKIE_NAME
from hub_server.changes import ChangeCounter

_PREFIX = "/api/v1/"
_COOKIE_MARK = f"{COOKIE_NAME}=".encode()
#: Bounds: distinct URLs (search texts are the caller's choice), bytes per answer, bytes in all.
MAX_ENTRIES = 2048
MAX_BODY = 1024 * 1024
MAX_BYTES = 32 * 1024 * 1024


def is_cached_route(path: str) -> bool:
    """``/api/v1/environments`` (search), ``/api/v1/environments/{owner}/{name}`` (detail), ``/api/v1/resolve``."""
    if not path.startswith(_PREFIX):
        return False
    rest = path[len(_PREFIX) :]
    if rest in ("environments", "resolve"):
        return True
    parts = rest.split("/")
    return len(parts) == 3 and parts[0] == "environments" and all(parts[1:])


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    async def send(self, send: Send) -> None:
        """The 200 exactly as it was first sent."""
        await send({"type": "http.response.start", "status": 200, "headers": list(self.headers)})
        await send({"type": "http.response.body", "body": self.body})


class ApiCache:
    """Answers keyed by (path, query string) (and, for signed-in callers, what they may read), valid
    for one catalogue generation; LRU within the bounds.

    Used from the event loop only (the middleware), so it needs no lock.
    """

    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.generation: int | None = None
        self._answers: OrderedDict[Hashable, CachedAnswer] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._answers)

    def observe(self, generation: int) -> None:
        """Forget everything if the catalogue changed since the answers were kept."""
        if generation != self.generation:
            self._answers.clear()
            self._bytes = 0
            self.generation = generation

    def get(self, key: Hashable) -> CachedAnswer | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, generation: int, key: Hashable, answer: CachedAnswer) -> None:
        # An answer made under an older generation than the cache now holds is dropped, never kept.
        if generation != self.generation or len(answer.body) > MAX_BODY:
            return
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old.body)
        self._answers[key] = answer
        self._bytes += len(answer.body)
        while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._answers.popitem(last=False)
            self._bytes -= len(evicted.body)


def _anonymous(scope: Scope) -> bool:
    for key, value in scope["headers"]:
        if key == b"authorization" or (key == b"cookie" and _COOKIE_MARK in value):
            return False
    return True


class ApiFastPath:
    """ASGI middleware: anonymous GETs of the cached routes answered from ``ApiCache``, filled on a miss."""

    def __init__(self, app: ASGIApp, *, cache: ApiCache, counter: ChangeCounter) -> None:
        self.app = app
        self.cache = cache
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and is_cached_route(scope["path"])
            and _anonymous(scope)
        ):
            await self.app(scope, receive, send)
            return
        generation = (await self.counter.latest()).catalogue
        self.cache.observe(generation)
        key = (scope["path"], scope["query_string"])
        answer = self.cache.get(key)
        if answer is not None:
            await answer.send(send)
            return
        await self.app(scope, receive, self._recorder(send, generation, key))

    def _recorder(self, send: Send, generation: int, key: tuple[str, bytes]) -> Send:
        status = 0
        headers: tuple[tuple[bytes, bytes], ...] = ()
        chunks: list[bytes] = []
        size = 0

        async def recording_send(message: Message) -> None:
            nonlocal status, headers, size
            await send(message)
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = tuple((bytes(k), bytes(v)) for k, v in message.get("headers", ()))
            elif message["type"] == "http.response.body" and status == 200 and size <= MAX_BODY:
                body = message.get("body", b"")
                chunks.append(body)
                size += len(body)
                if not message.get("more_body", False):
                    self.cache.put(generation, key, CachedAnswer(headers, b"".join(chunks)))

        return recording_send
