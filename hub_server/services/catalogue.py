"""Reading the catalogue as a consumer does: search, resolve a spec to one version, fetch an artifact."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from sqlalchemy import BindParameter, Connection, Select, bindparam, delete, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import Principal
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import DownloadEvent, Environment, EnvironmentTag, File, Owner
from hub_server.services.errors import HubError, not_found
from hub_server.services.lookups import (
    ReadScope,
    read_scope,
    visible_bound,
    visible_environment_view,
    visible_filter,
    visible_params,
)
from hub_server.views import EnvironmentView, VersionView, environment_columns, load_environments
from verifiers.hub import wire
from verifiers.hub.packaging import normalize_name, parse_env_spec

#: Longest description in a search result (the detail endpoint has the whole text).
SUMMARY_LIMIT = 300
_METADATA_SUFFIX = ".metadata"  # PEP 658: <file URL>.metadata is the wheel's METADATA


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search(
    session: Session | Connection,
    principal: Principal | None,
    *,
    q: str = "",
    tags: Sequence[str] = (),
    owner: str | None = None,
    sort: str = "downloads",
    page: int = 1,
    per_page: int = 20,
) -> wire.SearchPage:
    params = visible_params(principal)
    text = q.strip()
    if text:
        params["pattern"] = f"%{_escape_like(text.lower())}%"
    params.update({f"tag_{i}": tag.lower() for i, tag in enumerate(tags)})
    if owner:
        params["owner"] = owner.lower()
    paged, counted = _search_statements(read_scope(principal), bool(text), len(tags), bool(owner), sort)
    # A summary needs each version's number and yank flag (for "latest"), not READMEs or files.
    rows = load_environments(
        session, paged, {**params, "offset": (page - 1) * per_page, "limit": per_page}, files=False
    )
    # When the whole result is on this page, no count query is needed.
    whole = page == 1 and len(rows) < per_page
    total = len(rows) if whole else session.execute(counted, params).scalar_one()
    return wire.SearchPage(
        items=[_capped(schemas.env_summary(e)) for e in rows], total=total, page=page, per_page=per_page
    )


@functools.lru_cache(maxsize=512)
def _search_statements(
    scope: ReadScope, with_text: bool, tag_count: int, with_owner: bool, sort: str
) -> tuple[Select[*tuple[Any, ...]], Select[int]]:
    """The search's page and its count, built once per shape; texts and paging are bound parameters."""
    stmt = visible_bound(environment_columns(), scope)
    if with_text:
        pattern: BindParameter[str] = bindparam("pattern")
        stmt = stmt.where(
            or_(
                func.lower(Environment.name).like(pattern, escape="\\"),
                func.lower(Environment.description).like(pattern, escape="\\"),
                func.lower(Owner.name).like(pattern, escape="\\"),
                exists().where(
                    EnvironmentTag.environment_id == Environment.id,
                    EnvironmentTag.tag.like(pattern, escape="\\"),  # tags are stored lowercase
                ),
            )
        )
    for i in range(tag_count):
        stmt = stmt.where(
            exists().where(
                EnvironmentTag.environment_id == Environment.id, EnvironmentTag.tag == bindparam(f"tag_{i}")
            )
        )
    if with_owner:
        stmt = stmt.where(Owner.name == bindparam("owner"))
    order: tuple[Any, ...] = {
        "downloads": (Environment.download_count.desc(), Environment.name),
        "stars": (Environment.star_count.desc(), Environment.name),
        "updated": (Environment.updated_at.desc(), Environment.name),
        "name": (Environment.name,),
    }[sort]
    paged = stmt.order_by(*order).offset(bindparam("offset")).limit(bindparam("limit"))
    return paged, select(func.count()).select_from(stmt.subquery())


def popular_tags(session: Session, principal: Principal | None, limit: int = 20) -> list[tuple[str, int]]:
    """The most used tags over the environments the caller may read, with their counts (the home page's filters)."""
    visible = visible_filter(select(Environment.id), principal).subquery()
    rows = session.execute(
        select(EnvironmentTag.tag, func.count())
        .where(EnvironmentTag.environment_id.in_(select(visible.c.id)))
        .group_by(EnvironmentTag.tag)
        .order_by(func.count().desc(), EnvironmentTag.tag)
        .limit(limit)
    ).all()
    return [(str(tag), int(n)) for tag, n in rows]


def _capped(item: wire.EnvironmentSummary) -> wire.EnvironmentSummary:
    # A listing shows summaries, not whole descriptions: a page of results stays small whatever was published.
    if len(item.description) <= SUMMARY_LIMIT:
        return item
    return item.model_copy(update={"description": item.description[: SUMMARY_LIMIT - 1].rstrip() + "…"})


def resolve(
    session: Session | Connection, principal: Principal | None, spec_text: str
) -> tuple[EnvironmentView, VersionView]:
    """Best version for ``[owner/]name[@specifier]``: highest match, yanked ones only when pinned with ==."""
    try:
        spec = parse_env_spec(spec_text)
    except ValueError as exc:
        raise HubError(422, str(exc)) from None
    env = visible_environment_view(session, principal, spec.name)
    if env is None or (spec.owner and spec.owner.lower() != env.owner.name):
        raise not_found(f"environment {spec.owner + '/' if spec.owner else ''}{spec.name}")
    specifier = SpecifierSet(spec.specifier)
    pinned = [s for s in specifier if s.operator in ("==", "===") and "*" not in s.version]
    by_version = {Version(v.version): v for v in env.versions}
    candidates = [
        v for v, row in by_version.items() if not row.yanked or (pinned and len(list(specifier)) == 1)
    ]
    matching = list(specifier.filter(candidates))
    if not matching:
        live = sorted(v for v, row in by_version.items() if not row.yanked)
        hint = ", ".join(map(str, live[-10:])) or "none"
        message = f"no version of {env.full_name} matches {spec.specifier or 'any'!r} (available: {hint})"
        # A yanked version still installs when pinned exactly: say so, rather than "none".
        yanked = sorted(v for v in specifier.filter(by_version) if by_version[v].yanked)
        if yanked:
            newest = yanked[-1]
            message += (
                f"; {', '.join(map(str, yanked[-3:]))} {'is' if len(yanked) == 1 else 'are'} yanked, "
                f"and {env.full_name}@=={newest} still installs {'it' if len(yanked) == 1 else newest}"
            )
        raise HubError(404, message)
    return env, by_version[max(matching)]


@dataclass(frozen=True)
class Download:
    """What ``/files/`` needs to serve one artifact, read in one short transaction."""

    filename: str
    blob_key: str
    file_id: int
    environment_id: int
    private: bool
    #: The wheel's METADATA when ``<file>.metadata`` was asked for; None when the file itself was.
    core_metadata: str | None


def find_download(hub: Hub, principal: Principal | None, project: str, requested: str) -> Download:
    """The file ``requested`` of ``project`` (or its PEP 658 metadata), if the caller may read it."""
    want_metadata = requested.endswith(_METADATA_SUFFIX)
    filename = requested.removesuffix(_METADATA_SUFFIX)
    with hub.db.read() as session:
        # Visibility in the query: a private file costs what an absent one does.
        row = session.execute(
            visible_filter(select(File, Environment).join(File.version).join(Environment), principal).where(
                File.filename == filename, Environment.name == normalize_name(project)
            )
        ).first()
        if row is None:
            raise not_found(f"file {requested}")
        file, env = row
        if want_metadata and file.core_metadata is None:
            raise not_found(f"metadata of {filename}")
        return Download(
            filename=filename,
            blob_key=file.blob_key,
            file_id=file.id,
            environment_id=env.id,
            private=env.visibility == "private",
            core_metadata=file.core_metadata if want_metadata else None,
        )


def download_client(address: str | None, principal: Principal | None) -> str:
    """Who downloads, for counting: the user when a token came, else the client address; hashed."""
    who = f"user:{principal.user_id}" if principal is not None else f"addr:{address or '?'}"
    return hashlib.sha256(who.encode()).hexdigest()[:32]


def record_download(hub: Hub, download: Download, client: str) -> bool:
    """Count a download once per (file, client, UTC day); True if this one counted.

    A loop of GETs from one client adds at most one per file per day. Rows older than yesterday are
    pruned on the way, so the table holds about two days of distinct downloaders.
    """
    today = datetime.now(UTC).date()
    with hub.db.write() as session:
        insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
        # RETURNING says whether the row went in (rowcount is -1 for this statement on psycopg).
        inserted = session.execute(
            insert(DownloadEvent)
            .values(file_id=download.file_id, client=client, day=today)
            .on_conflict_do_nothing()
            .returning(DownloadEvent.file_id)
        ).first()
        counted = inserted is not None
        if counted:
            session.execute(
                update(Environment)
                .where(Environment.id == download.environment_id)
                .values(download_count=Environment.download_count + 1)
            )
            bump_catalogue(session)  # the count shows in the JSON API's cached answers
            session.execute(delete(DownloadEvent).where(DownloadEvent.day < today - timedelta(days=1)))
    return counted
