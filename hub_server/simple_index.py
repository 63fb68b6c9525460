"""The PEP 503 / 691 simple index: rendering, content negotiation and the in-memory page cache.

Pages are rendered once per change and kept as bytes. Every change that alters the index bumps
``hub_state.index_generation`` in its own transaction and clears this worker's cache after commit; other
workers notice the new generation within ``cache_poll_seconds``. A render only enters the cache if no
clear happened while it read the database (the ``epoch`` check), so a read that raced a publish can
never pin a stale page.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from packaging.version import InvalidVersion, Version
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from hub_server.auth import COOKIE_NAME, Principal, can_read
from hub_server.db import Database
from hub_server.models import CATALOGUE_GENERATION, INDEX_GENERATION, Environment, HubState

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
TEXT_HTML = "text/html"
API_VERSION = "1.1"  # PEP 700: adds versions, size and upload-time
_SUPPORTED = (JSON_V1, HTML_V1, TEXT_HTML)
_FORMATS = {"json": JSON_V1, "html": HTML_V1}
_MAX_NEGATIVE = 10_000
_COOKIE_MARK = f"{COOKIE_NAME}=".encode()
#: Index pages are data for installers, never a document to run: a browser that opens one gets no script,
#: no plugin, no frame and no form (``sandbox``), whatever a relayed link says.
CSP = "default-src 'none'; sandbox; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
# The Content-Type header the routes send for each media type (Starlette adds the charset to text/*).
_CONTENT_TYPE = {m: (f"{m}; charset=utf-8" if m.startswith("text/") else m).encode() for m in _SUPPORTED}


def negotiate(accept: str | None, fmt: str | None = None) -> str | None:
    """Media type to answer with, from ``?format=json|html`` or the Accept header; None means 406."""
    if fmt:
        return _FORMATS.get(fmt)
    if not accept:
        return TEXT_HTML
    best: tuple[float, int, str] | None = None
    for rank, item in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.lower()
        if q <= 0:
            continue
        if media in ("*/*", "text/*"):
            choice = TEXT_HTML
        elif media == "application/*":
            choice = JSON_V1
        elif media in _SUPPORTED:
            choice = media
        else:
            continue
        # Highest q wins; ties go to the earlier entry (the client's stated order).
        if best is None or (q, -rank) > best[:2]:
            best = (q, -rank, choice)
    return best[2] if best else None


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _version_key(v: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(v))
    except InvalidVersion:  # never stored, but sorting must not fail on old data
        return (0, v)


@dataclass(frozen=True)
class ProjectPage:
    name: str
    environment_id: int
    owner_id: int
    visibility: str
    html: bytes
    json: bytes

    def body(self, media: str) -> bytes:
        """The page in the negotiated media type."""
        return self.json if media == JSON_V1 else self.html


@dataclass(frozen=True)
class ProjectEntry:
    name: str
    environment_id: int
    owner_id: int
    visibility: str


def file_url(project: str, filename: str) -> str:
    return f"/files/{project}/{filename}"


@dataclass(frozen=True)
class IndexFile:
    """One file link of a project page, whoever serves the file (the hub, the SDK build, an upstream)."""

    filename: str
    url: str
    hashes: dict[str, str]
    requires_python: str | None = None
    #: None: not yanked; otherwise the reason, possibly empty (PEP 592).
    yanked: str | None = None
    #: PEP 658/714 core metadata: its hashes, ``{}`` when present without a hash, None when absent.
    core_metadata: dict[str, str] | None = None
    size: int | None = None
    upload_time: str | None = None


def render_files(name: str, versions: list[str], files: list[IndexFile]) -> tuple[bytes, bytes]:
    """A project page as PEP 503 HTML and PEP 691 JSON, with PEP 592/658/700/714 fields where known."""
    # PEP 700 makes `size` mandatory from API 1.1 on; a relayed page without sizes stays 1.0.
    full = all(f.size is not None for f in files)
    version = API_VERSION if full else "1.0"
    links: list[str] = []
    entries: list[dict[str, object]] = []
    for f in files:
        href = f.url
        digest = f.hashes.get("sha256")
        if digest is not None:
            href += f"#sha256={digest}"
        elif f.hashes:
            algo, value = next(iter(f.hashes.items()))
            href += f"#{algo}={value}"
        attrs = [f'href="{html.escape(href)}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        if f.core_metadata is not None:
            meta = next((f"{a}={v}" for a, v in f.core_metadata.items()), "true")
            # PEP 714 name plus the PEP 658 one older pips look for.
            attrs.append(f'data-core-metadata="{html.escape(meta)}"')
            attrs.append(f'data-dist-info-metadata="{html.escape(meta)}"')
        if f.yanked is not None:
            attrs.append(f'data-yanked="{html.escape(f.yanked)}"')
        links.append(f"<a {' '.join(attrs)}>{html.escape(f.filename)}</a><br>")
        entry: dict[str, object] = {
            "filename": f.filename,
            "url": f.url,
            "hashes": f.hashes,
            "requires-python": f.requires_python,
            "yanked": (f.yanked or True) if f.yanked is not None else False,
        }
        if f.size is not None:
            entry["size"] = f.size
        if f.upload_time is not None:
            entry["upload-time"] = f.upload_time
        if f.core_metadata is not None:
            entry["core-metadata"] = f.core_metadata or True
            entry["dist-info-metadata"] = f.core_metadata or True
        entries.append(entry)
    title = html.escape(name)
    body = (
        "<!DOCTYPE html>\n<html><head>"
        f'<meta name="pypi:repository-version" content="{version}">'
        f"<title>Links for {title}</title></head>\n<body><h1>Links for {title}</h1>\n"
        + "\n".join(links)
        + "\n</body></html>\n"
    )
    doc: dict[str, object] = {"meta": {"api-version": version}, "name": name}
    if full:
        doc["versions"] = versions
    doc["files"] = entries
    return body.encode(), orjson.dumps(doc)


def render_project(env: Environment) -> ProjectPage:
    versions = sorted(env.versions, key=lambda v: _version_key(v.version))
    files = [
        IndexFile(
            filename=f.filename,
            url=file_url(env.name, f.filename),
            hashes={"sha256": f.sha256},
            requires_python=ver.requires_python,
            yanked=ver.yanked_reason if ver.yanked else None,
            core_metadata={"sha256": f.core_metadata_sha256} if f.core_metadata_sha256 else None,
            size=f.size,
            upload_time=_ts(f.created_at),
        )
        for ver in versions
        for f in sorted(ver.files, key=lambda f: f.filename)
    ]
    html_, json_ = render_files(env.name, [v.version for v in versions], files)
    return ProjectPage(env.name, env.id, env.owner_id, env.visibility, html_, json_)


def render_root(names: list[str]) -> tuple[bytes, bytes]:
    links = "\n".join(f'<a href="/simple/{html.escape(n)}/">{html.escape(n)}</a><br>' for n in names)
    body = (
        "<!DOCTYPE html>\n<html><head>"
        f'<meta name="pypi:repository-version" content="{API_VERSION}">'
        f"<title>Simple index</title></head>\n<body>\n{links}\n</body></html>\n"
    )
    doc = {"meta": {"api-version": API_VERSION}, "projects": [{"name": n} for n in names]}
    return body.encode(), orjson.dumps(doc)


@dataclass(frozen=True)
class RootListing:
    entries: tuple[ProjectEntry, ...]
    #: Names the hub serves itself (the SDK): listed for everyone, whatever the database holds.
    served: frozenset[str]
    public_html: bytes
    public_json: bytes

    def for_principal(self, principal: Principal | None) -> tuple[bytes, bytes]:
        if principal is None:
            return self.public_html, self.public_json
        return render_root(sorted(self.served.union(e.name for e in self.entries if can_read(principal, e))))


class IndexCache:
    """Rendered pages keyed by normalised project name, plus the root listing.

    ``served`` are the names the hub answers itself (``verifiers-sdk``): the root lists them too.
    """

    def __init__(self, db: Database, served: frozenset[str] = frozenset()) -> None:
        self._db = db
        self._served = served
        self._lock = threading.Lock()
        self._pages: dict[str, ProjectPage | None] = {}
        self._root: RootListing | None = None
        self._epoch = 0
        self._generation: int | None = None

    # --- fast, lock-free reads (dict lookups are atomic) ------------------------------------------
    def cached_page(self, name: str) -> tuple[bool, ProjectPage | None]:
        """(hit, page): a hit with ``None`` is a cached "no such project"."""
        try:
            return True, self._pages[name]
        except KeyError:
            return False, None

    @property
    def cached_root(self) -> RootListing | None:
        return self._root

    # --- loads (blocking: run them in a worker thread) --------------------------------------------
    def load_page(self, name: str) -> ProjectPage | None:
        epoch = self._epoch
        with self._db.read() as session:
            env = session.scalar(select(Environment).where(Environment.name == name))
            page = render_project(env) if env is not None else None
        with self._lock:
            if epoch == self._epoch:
                if page is None and len(self._pages) >= _MAX_NEGATIVE:
                    self._pages = {k: v for k, v in self._pages.items() if v is not None}
                self._pages[name] = page
        return page

    def load_root(self) -> RootListing:
        epoch = self._epoch
        with self._db.read() as session:
            rows = session.execute(
                select(
                    Environment.name, Environment.id, Environment.owner_id, Environment.visibility
                ).order_by(Environment.name)
            ).all()
        entries = tuple(ProjectEntry(n, i, o, v) for n, i, o, v in rows)
        html_, json_ = render_root(
            sorted(self._served.union(e.name for e in entries if e.visibility == "public"))
        )
        listing = RootListing(entries, self._served, html_, json_)
        with self._lock:
            if epoch == self._epoch:
                self._root = listing
        return listing

    # --- invalidation -----------------------------------------------------------------------------
    def clear(self) -> None:
        with self._lock:
            self._epoch += 1
            self._pages = {}
            self._root = None

    def check_generation(self) -> bool:
        """Clear if another worker changed the index; True if it did."""
        with self._db.read() as session:
            gen = read_generation(session)
        return self.observe(gen)

    def observe(self, gen: int) -> bool:
        """Clear if ``gen`` (the database's counter, read by the caller) differs from the cache's."""
        with self._lock:
            if gen == self._generation:
                return False
            self._epoch += 1
            self._pages = {}
            self._root = None
            self._generation = gen
            return True


def read_generation(session: Session) -> int:
    return session.scalar(select(HubState.value).where(HubState.key == INDEX_GENERATION)) or 0


def bump_generation(session: Session) -> None:
    """Call inside the write transaction that changes the index (which changes the catalogue too)."""
    session.execute(
        update(HubState)
        .where(HubState.key.in_((INDEX_GENERATION, CATALOGUE_GENERATION)))
        .values(value=HubState.value + 1)
    )


class FastPath:
    """ASGI middleware that answers anonymous simple-index GETs from the cache, before any routing.

    Only the common case is handled here: no credentials, no query string, page already cached and
    public. Everything else (auth, misses, redirects, private pages, 406) falls through to the FastAPI
    routes, which produce the same bytes the slow way.
    """

    def __init__(self, app: ASGIApp, *, index: IndexCache) -> None:
        self.app = app
        self.index = index
        self._media: dict[bytes | None, str | None] = {}

    def _negotiate(self, accept: bytes | None) -> str | None:
        try:
            return self._media[accept]
        except KeyError:
            media = negotiate(accept.decode("latin-1") if accept is not None else None)
            if len(self._media) < 1024:  # clients send few distinct Accept values; bound it anyway
                self._media[accept] = media
            return media

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"].startswith("/simple/")
            and scope["method"] in ("GET", "HEAD")
            and not scope["query_string"]
        ):
            body = self._cached_body(scope)
            if body is not None:
                content, media = body
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-type", _CONTENT_TYPE[media]),
                            (b"content-length", str(len(content)).encode()),
                            (b"vary", b"Accept, Authorization"),
                            (b"cache-control", b"public, no-cache"),
                            (b"content-security-policy", CSP.encode()),
                            (b"x-content-type-options", b"nosniff"),
                        ],
                    }
                )
                await send(
                    {"type": "http.response.body", "body": content if scope["method"] == "GET" else b""}
                )
                return
        await self.app(scope, receive, send)

    def _cached_body(self, scope: Scope) -> tuple[bytes, str] | None:
        accept: bytes | None = None
        for key, value in scope["headers"]:
            if key == b"authorization" or (key == b"cookie" and _COOKIE_MARK in value):
                return None
            if key == b"accept":
                accept = value
        media = self._negotiate(accept)
        if media is None:
            return None
        path: str = scope["path"]
        if path == "/simple/":
            root = self.index.cached_root
            if root is None:
                return None
            return (root.public_json if media == JSON_V1 else root.public_html), media
        hit, page = self.index.cached_page(path[8:-1]) if path.endswith("/") else (False, None)
        if not hit or page is None or page.visibility != "public":
            return None
        return page.body(media), media
