"""The upstream fall-through: ``/simple/<name>/`` for a name the hub does not own, relayed from another index.

Like a devpi or Artifactory "virtual" index, the hub answers for PyPI (``VF_HUB_UPSTREAM_INDEX``) so that
``pip install --index-url HUB/simple/ my-env`` finds the environment's dependencies too. Rules:

- only names with no environment row at all reach this module (the router decides); a name the hub owns,
  public or private, is never looked up upstream, so nobody can shadow it (dependency confusion);
- the upstream page is fetched as PEP 691 JSON when the upstream speaks it, else PEP 503 HTML, and
  re-rendered in whichever form the client negotiated; file URLs are made absolute (PEP 503 allows
  relative ones), so clients download from the upstream directly;
- the PEP 629 major version must be 1; a different one is an upstream failure;
- a 404/410 upstream is a 404 here; any other failure is ``UpstreamError`` (the router's 502), never an
  empty page that would make a resolver believe the project has no files;
- pages (and misses) are cached for ``VF_HUB_UPSTREAM_TTL_SECONDS``, concurrent misses share one fetch; the client's credentials are never
  forwarded upstream.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from html.parser import HTMLParser
from time import monotonic
from typing import Any
from urllib.parse import urldefrag, urljoin

import ada_url
import httpx
import orjson

from hub_server.simple_index import HTML_V1, JSON_V1, TEXT_HTML, IndexFile, render_files

# Prefer JSON (less to parse, more fields), accept the HTML forms every index serves.
_ACCEPT = f"{JSON_V1}, {HTML_V1};q=0.2, {TEXT_HTML};q=0.1"
_MAX_ENTRIES = 10_000
_HEADERS = {"User-Agent": "verifiers-hub (upstream fall-through)"}


class UpstreamError(Exception):
    """The upstream index failed in a way that must not look like "no such project"."""


@dataclass(frozen=True)
class UpstreamPage:
    name: str
    html: bytes
    json: bytes

    def body(self, media: str) -> bytes:
        return self.json if media == JSON_V1 else self.html


def _major_ok(version: object) -> bool:
    return isinstance(version, str) and version.split(".", 1)[0] == "1"


def _web_url(url: str) -> str | None:
    """``url`` as a browser serialises it (WHATWG) when it is an http(s) URL, else None: a relayed
    ``javascript:``, ``data:`` or ``file:`` link (in any spelling) is dropped, never shown on a page."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return None
    return parsed.href if parsed.protocol in ("http:", "https:") else None


def _hashes(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def _core_metadata(value: object) -> dict[str, str] | None:
    if value is True:
        return {}
    if isinstance(value, dict):
        return _hashes(value)
    return None


def _files_from_json(doc: Any, base: str) -> tuple[list[str], list[IndexFile]]:
    if not isinstance(doc, dict) or not _major_ok((doc.get("meta") or {}).get("api-version")):
        raise UpstreamError("the upstream JSON page is not a PEP 691 v1 document")
    files: list[IndexFile] = []
    for item in doc.get("files") or []:
        if not isinstance(item, dict) or not isinstance(item.get("filename"), str):
            continue
        url = _web_url(urljoin(base, str(item.get("url", ""))))
        if url is None:
            continue
        yanked = item.get("yanked", False)
        size = item.get("size")
        upload = item.get("upload-time")
        files.append(
            IndexFile(
                filename=item["filename"],
                url=url,
                hashes=_hashes(item.get("hashes")),
                requires_python=item.get("requires-python") or None,
                yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
                core_metadata=_core_metadata(item.get("core-metadata", item.get("dist-info-metadata"))),
                size=size if isinstance(size, int) else None,
                upload_time=upload if isinstance(upload, str) else None,
            )
        )
    versions = [v for v in doc.get("versions") or [] if isinstance(v, str)]
    return versions, files


class _AnchorParser(HTMLParser):
    """Collects PEP 503 anchors (attributes and text) and the PEP 629 repository version."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self.repository_version: str | None = None
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []
        elif tag == "meta":
            a = dict(attrs)
            if a.get("name") == "pypi:repository-version":
                self.repository_version = a.get("content")

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _files_from_html(text: str, base: str) -> list[IndexFile]:
    parser = _AnchorParser()
    parser.feed(text)
    parser.close()
    if parser.repository_version is not None and not _major_ok(parser.repository_version):
        raise UpstreamError(f"the upstream page has repository version {parser.repository_version}")
    files: list[IndexFile] = []
    for attrs, label in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        joined, fragment = urldefrag(urljoin(base, href))
        url = _web_url(joined)
        if url is None:
            continue
        algo, sep, value = fragment.partition("=")
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        core: dict[str, str] | None = None
        if meta is not None:
            m_algo, m_sep, m_value = meta.partition("=")
            core = {m_algo: m_value} if m_sep else ({} if meta.lower() == "true" else None)
        files.append(
            IndexFile(
                filename=label or url.rsplit("/", 1)[-1],
                url=url,
                hashes={algo: value} if sep else {},
                requires_python=attrs.get("data-requires-python") or None,
                yanked=(attrs.get("data-yanked") or "") if "data-yanked" in attrs else None,
                core_metadata=core,
            )
        )
    return files


def redact(url: str) -> str:
    """``url`` without credentials, for messages."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


class Upstream:
    """Fetches, converts and caches upstream project pages. Create it in the app; close it on shutdown."""

    def __init__(
        self,
        base_url: str,
        *,
        ttl: float,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url
        self.ttl = ttl
        self._timeout = timeout
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._cache: dict[str, tuple[float, UpstreamPage | None]] = {}
        # One fetch per name at a time: concurrent misses (uv resolves in parallel) wait for the same answer.
        self._inflight: dict[str, asyncio.Task[UpstreamPage | None]] = {}

    def _http(self) -> httpx.AsyncClient:
        # Made on first use, inside the serving event loop (an AsyncClient belongs to one loop).
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                follow_redirects=True,
                transport=self._transport,
                headers=_HEADERS,
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def page(self, name: str) -> UpstreamPage | None:
        """The upstream page of the normalised ``name``; None if upstream has no such project."""
        now = monotonic()
        cached = self._cache.get(name)
        if cached is not None and cached[0] > now:
            return cached[1]
        task = self._inflight.get(name)
        if task is None:
            task = asyncio.ensure_future(self._fetch(name))
            self._inflight[name] = task
            task.add_done_callback(lambda _: self._inflight.pop(name, None))
        page = await asyncio.shield(task)  # a cancelled client must not cancel the others' fetch
        self._remember(name, page, now)
        return page

    def _remember(self, name: str, page: UpstreamPage | None, now: float) -> None:
        if self.ttl > 0:
            if len(self._cache) >= _MAX_ENTRIES:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= _MAX_ENTRIES:
                    self._cache = {}
            self._cache[name] = (now + self.ttl, page)

    def serves(self, name: str) -> bool:
        """Whether the upstream has a project page for the normalised ``name`` (blocking: for the publish
        path, which runs in worker threads; answers come from and go to the same TTL cache as pages).
        ``UpstreamError`` when the upstream cannot say."""
        now = monotonic()
        cached = self._cache.get(name)
        if cached is not None and cached[0] > now:
            return cached[1] is not None
        url = urljoin(self.base_url, f"{name}/")
        # MockTransport (tests) is sync and async; any other async-only transport means: the default one.
        transport = self._transport if isinstance(self._transport, httpx.BaseTransport) else None
        try:
            with httpx.Client(
                timeout=self._timeout, follow_redirects=True, transport=transport, headers=_HEADERS
            ) as client:
                response = client.get(url, headers={"Accept": _ACCEPT})
        except httpx.HTTPError as exc:
            raise UpstreamError(f"the upstream index {redact(url)} could not be reached: {exc!r}") from None
        page = _page_from(name, response, redact(url))
        self._remember(name, page, now)
        return page is not None

    async def _fetch(self, name: str) -> UpstreamPage | None:
        url = urljoin(self.base_url, f"{name}/")
        where = redact(url)
        try:
            response = await self._http().get(url, headers={"Accept": _ACCEPT})
        except httpx.HTTPError as exc:
            raise UpstreamError(f"the upstream index {where} could not be reached: {exc!r}") from None
        return _page_from(name, response, where)


def _page_from(name: str, response: httpx.Response, where: str) -> UpstreamPage | None:
    """The page of one upstream answer, None for 404/410; ``UpstreamError`` for anything else."""
    if response.status_code in (404, 410):
        return None
    if response.status_code != 200:
        raise UpstreamError(f"the upstream index {where} answered HTTP {response.status_code}")
    base = str(response.url)
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    try:
        if media == JSON_V1:
            versions, files = _files_from_json(orjson.loads(response.content), base)
        elif media in (HTML_V1, TEXT_HTML):
            versions, files = [], _files_from_html(response.text, base)
        else:
            raise UpstreamError(f"the upstream index {where} answered with content type {media!r}")
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UpstreamError(f"the upstream index {where} sent an unreadable page: {exc}") from None
    html_, json_ = render_files(name, versions, files)
    return UpstreamPage(name, html_, json_)
