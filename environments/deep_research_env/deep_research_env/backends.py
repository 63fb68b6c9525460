"""Where searches and pages come from: the local BM25 corpus (offline) or Serper + the real web (online).

Both backends answer ``search(query, k) -> list[Hit]`` and ``fetch(url) -> Page``. What the model got
wrong (an unknown URL, a page that cannot be read) raises ``ResearchToolError``, which the model reads
back; a search service that keeps failing raises ``SearchUnavailableError`` (category ``infra``), which
stops the rollout: a broken search API is not a wrong answer.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import httpx

import verifiers as vf
from deep_research_env.corpus import Page, html_title, html_to_text, pdf_to_text
from deep_research_env.index import BM25Index, Hit
from verifiers.errors import InfraError

SERPER_URL = "https://google.serper.dev/search"
DEFAULT_CACHE_TTL = 7 * 24 * 3600.0


class ResearchToolError(vf.ToolCallError):
    """A tool call the model can fix (bad regex, unknown URL, index out of range ...): shown to it as
    ``Error: <message>``."""


class SearchUnavailableError(InfraError):
    """The search API failed after every retry (or refused the key): the rollout stops as an infra error."""


class Backend(Protocol):
    name: str

    async def search(self, query: str, k: int) -> list[Hit]: ...

    async def fetch(self, url: str) -> Page: ...

    async def aclose(self) -> None: ...


# --- offline -------------------------------------------------------------------------------------------
class LocalBackend:
    """Search and read an in-memory BM25 index (the bundled encyclopedia or a user's corpus)."""

    name = "local"

    def __init__(self, index: BM25Index) -> None:
        self.index = index

    async def search(self, query: str, k: int) -> list[Hit]:
        return self.index.search(query, k)  # sub-millisecond: a worker thread would cost more

    async def fetch(self, url: str) -> Page:
        page = self.index.get(url.strip())
        if page is None:
            raise ResearchToolError(
                f"unknown URL {url!r}: the offline corpus has no such page; use a URL exactly as a "
                "search result gave it (e.g. local://wiki/...)"
            )
        return page

    async def aclose(self) -> None:
        return None


# --- disk cache ----------------------------------------------------------------------------------------
class DiskCache:
    """JSON values on disk, keyed by (kind, key), valid for ``ttl`` seconds (0 disables the cache).

    One file per entry, written to a temporary name and renamed, so concurrent runs sharing a cache
    directory never read half a file.
    """

    def __init__(self, directory: str | Path | None, ttl: float = DEFAULT_CACHE_TTL) -> None:
        if directory is None:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            directory = base / "deep-research-env"
        self.directory = Path(directory).expanduser()
        self.ttl = ttl
        self.hits = 0

    def _path(self, kind: str, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        return self.directory / kind / digest[:2] / f"{digest}.json"

    def get(self, kind: str, key: str) -> Any | None:
        if self.ttl <= 0:
            return None
        path = self._path(kind, key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if time.time() - float(entry.get("stored_at", 0)) > self.ttl or entry.get("key") != key:
            return None
        self.hits += 1
        return entry["value"]

    def put(self, kind: str, key: str, value: Any) -> None:
        if self.ttl <= 0:
            return
        path = self._path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"key": key, "stored_at": time.time(), "value": value}, f)
        os.replace(tmp, path)


class _Clients:
    """One ``httpx.AsyncClient`` per event loop (a client must not be shared across loops)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    def get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop or entry[1].is_closed:
            entry = (loop, httpx.AsyncClient(**self._options))
            self._clients[id(loop)] = entry
        return entry[1]

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        for key, (owner, client) in list(self._clients.items()):
            if owner is loop:
                await client.aclose()
            del self._clients[key]


# --- the real web --------------------------------------------------------------------------------------
class PageFetcher:
    """Fetch a URL and turn it into text: HTML through trafilatura, PDF through pypdf, text as is.

    Bounded on every side: a per-request ``timeout``, at most ``max_bytes`` read (the rest is dropped
    and the page says so), at most ``max_redirects`` redirects. Pages are cached on disk by URL.
    """

    def __init__(
        self,
        cache: DiskCache,
        *,
        timeout: float = 15.0,
        max_bytes: int = 5_000_000,
        max_redirects: int = 5,
        user_agent: str = "deep-research-env/0.1",
    ) -> None:
        self.cache = cache
        self.max_bytes = max_bytes
        self._clients = _Clients(
            timeout=httpx.Timeout(timeout),
            follow_redirects=True,
            max_redirects=max_redirects,
            headers={
                "User-Agent": user_agent,
                "Accept": "text/html,application/pdf,text/plain;q=0.9,*/*;q=0.5",
            },
        )
        #: Pages actually downloaded (cache hits excluded).
        self.downloads = 0

    async def fetch(self, url: str) -> Page:
        url = url.strip()
        if not url.lower().startswith(("http://", "https://")):
            raise ResearchToolError(f"cannot open {url!r}: only http(s) URLs can be fetched")
        cached = self.cache.get("page", url)
        if cached is not None:
            return Page(**cached)
        data, ctype, truncated = await self._download(url)
        page = await asyncio.to_thread(self._to_page, url, data, ctype)
        if truncated:
            page = page.model_copy(
                update={
                    "text": page.text + f"\n[page cut at {self.max_bytes:,} bytes: the rest was not read]\n"
                }
            )
        self.cache.put("page", url, page.model_dump())
        return page

    async def _download(self, url: str) -> tuple[bytes, str, bool]:
        client = self._clients.get()
        try:
            async with client.stream("GET", url) as resp:
                if resp.status_code >= 400:
                    raise ResearchToolError(f"cannot open {url}: the server answered HTTP {resp.status_code}")
                chunks: list[bytes] = []
                size, truncated = 0, False
                async for chunk in resp.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > self.max_bytes:
                        truncated = True
                        break
                self.downloads += 1
                data = b"".join(chunks)[: self.max_bytes]
                return data, resp.headers.get("content-type", ""), truncated
        except httpx.TooManyRedirects:
            raise ResearchToolError(f"cannot open {url}: too many redirects") from None
        except httpx.TimeoutException:
            raise ResearchToolError(f"cannot open {url}: the server did not answer in time") from None
        except httpx.HTTPError as exc:  # DNS, refused connection, bad URL: that page is unreachable
            raise ResearchToolError(f"cannot open {url}: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _to_page(url: str, data: bytes, ctype: str) -> Page:
        kind = ctype.split(";")[0].strip().lower()
        if "pdf" in kind or data.startswith(b"%PDF"):
            try:
                title, text = pdf_to_text(data)
            except ImportError:
                raise
            except Exception as exc:  # a damaged PDF is the page's problem, not the run's
                raise ResearchToolError(f"cannot read the PDF at {url}: {exc}") from None
            return Page(
                url=url, title=title or url.rsplit("/", 1)[-1], text=text, content_type="application/pdf"
            )
        raw = data.decode(_charset(ctype) or "utf-8", errors="replace")
        if "html" in kind or (not kind and raw.lstrip()[:15].lower().startswith(("<!doctype", "<html"))):
            return Page(
                url=url, title=html_title(raw) or url, text=html_to_text(raw), content_type="text/html"
            )
        if kind.startswith("text/") or kind in ("application/json", "application/xml", ""):
            return Page(url=url, title=url, text=raw, content_type=kind or "text/plain")
        raise ResearchToolError(f"cannot read {url}: unsupported content type {kind!r}")

    async def aclose(self) -> None:
        await self._clients.aclose()


def _charset(ctype: str) -> str | None:
    for part in ctype.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return None


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


class SerperBackend:
    """Google results through the Serper API (``POST`` JSON ``{"q", "num"}`` with the ``X-API-KEY``
    header), pages through ``PageFetcher``. Results are cached on disk by (query, k).

    429 and 5xx answers and transport failures are retried ``max_retries`` times with exponential
    backoff (``Retry-After`` wins when given); then, or on a refused key, ``SearchUnavailableError``.
    """

    name = "serper"

    def __init__(
        self,
        *,
        api_key: str,
        cache: DiskCache,
        fetcher: PageFetcher | None = None,
        endpoint: str = SERPER_URL,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 20.0,
        timeout: float = 20.0,
    ) -> None:
        if not api_key:
            raise ValueError("the Serper backend needs an API key (set SERPER_API_KEY)")
        self.endpoint = endpoint
        self.cache = cache
        self.fetcher = fetcher or PageFetcher(cache)
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._clients = _Clients(timeout=httpx.Timeout(timeout), headers={"X-API-KEY": api_key})
        #: Search requests actually sent (cache hits excluded; retries included).
        self.requests = 0

    async def search(self, query: str, k: int) -> list[Hit]:
        key = json.dumps([query, k])
        cached = self.cache.get("search", key)
        if cached is not None:
            return [Hit(**h) for h in cached]
        payload = await self._post({"q": query, "num": max(10, k)})
        hits = []
        for item in (payload.get("organic") or [])[:k]:
            if isinstance(item, dict) and item.get("link"):
                hits.append(
                    Hit(str(item["link"]), str(item.get("title") or ""), str(item.get("snippet") or ""), 0.0)
                )
        self.cache.put("search", key, [_hit_dict(h) for h in hits])
        return hits

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        client = self._clients.get()
        problem = ""
        for attempt in range(self.max_retries + 1):
            delay: float | None = None
            try:
                self.requests += 1
                resp = await client.post(self.endpoint, json=body)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                    except ValueError:
                        problem = "the response was not JSON"
                    else:
                        if isinstance(data, dict):
                            return data
                        problem = "the response was not a JSON object"
                elif resp.status_code == 429 or resp.status_code >= 500:
                    problem = f"HTTP {resp.status_code}"
                    delay = _retry_after(resp)
                else:  # 401/403 (bad key), 400 (our request): retrying cannot help
                    raise SearchUnavailableError(
                        f"Serper refused the search request: HTTP {resp.status_code}: {resp.text[:200]}"
                    )
            if attempt < self.max_retries:
                wait = delay if delay is not None else self.backoff * 2**attempt
                await asyncio.sleep(min(wait, self.max_backoff))
        raise SearchUnavailableError(
            f"Serper search failed after {self.max_retries + 1} attempts (last: {problem})"
        )

    async def fetch(self, url: str) -> Page:
        return await self.fetcher.fetch(url)

    async def aclose(self) -> None:
        await self._clients.aclose()
        await self.fetcher.aclose()


def _hit_dict(hit: Hit) -> dict[str, Any]:
    return {"url": hit.url, "title": hit.title, "snippet": hit.snippet, "score": hit.score}
