"""Plain read-only copies of catalogue rows, loaded with Core selects for the hot JSON reads.

Environment detail, search and resolve answer from these instead of ORM objects: no identity map, no
relationship loaders, a handful of flat queries, a fraction of the CPU per request. They have the
attributes of the ORM rows that ``schemas.convert`` and ``releases`` read (the ``*Like`` protocols),
so both kinds of row become the same JSON.

The hot reads execute statements built once (``functools.cache``) with bound parameters: building a
``select`` costs as much as running it on SQLite, and a new statement object that hits SQLAlchemy's
compiled cache has its result columns re-matched to the cached ones on every execution.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import BindParameter, Connection, Select, bindparam, func, select
from sqlalchemy.orm import Session

from hub_server.models import Environment, EnvironmentTag, File, Owner, Version
from verifiers.hub.packaging import module_name


class VersionLike(Protocol):
    @property
    def version(self) -> str: ...
    @property
    def yanked(self) -> bool: ...


V_co = TypeVar("V_co", bound=VersionLike, covariant=True)
#: For functions over any ``HasVersions``: the kind of version row they take and give back.
V = TypeVar("V", bound=VersionLike)


class HasVersions(Protocol[V_co]):
    @property
    def versions(self) -> Sequence[V_co]: ...


@dataclass(slots=True)
class FileView:
    filename: str
    kind: str
    sha256: str
    size: int
    created_at: datetime


@dataclass(slots=True)
class VersionView:
    id: int
    version: str
    summary: str
    yanked: bool
    yanked_reason: str
    requires_python: str | None
    dependencies: list[str]
    content_hash: str
    created_at: datetime
    files: list[FileView] = field(default_factory=list)


@dataclass(slots=True)
class OwnerView:
    name: str


@dataclass(slots=True)
class TagView:
    tag: str


@dataclass(slots=True)
class EnvironmentView:
    id: int
    owner: OwnerView
    name: str
    description: str
    visibility: str
    created_at: datetime
    updated_at: datetime
    download_count: int
    star_count: int
    tags: list[TagView] = field(default_factory=list)
    versions: list[VersionView] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.owner.name}/{self.name}"

    @property
    def module(self) -> str:
        return module_name(self.name)


#: Separator of the aggregated tags: tags are a-z, 0-9, '.', '_' and '-' only (``validation.normalize_tags``).
_TAG_SEPARATOR = ","


def environment_columns() -> Select[*tuple[Any, ...]]:
    """``select`` of the columns an ``EnvironmentView`` holds, environments joined to their owners, with
    the environment's tags aggregated into one string (``tags``), so they need no query of their own."""
    tags = (
        select(func.aggregate_strings(EnvironmentTag.tag, _TAG_SEPARATOR))
        .where(EnvironmentTag.environment_id == Environment.id)
        .scalar_subquery()
    )
    return select(
        Environment.id,
        Owner.name.label("owner_name"),
        Environment.name,
        Environment.description,
        Environment.visibility,
        Environment.created_at,
        Environment.updated_at,
        Environment.download_count,
        Environment.star_count,
        tags.label("tags"),
    ).join_from(Environment, Owner, Environment.owner_id == Owner.id)


_VERSION_COLUMNS = (
    Version.environment_id,
    Version.id,
    Version.version,
    Version.summary,
    Version.yanked,
    Version.yanked_reason,
    Version.requires_python,
    Version.dependencies,
    Version.content_hash,
    Version.created_at,
)


@functools.cache
def _related(files: bool) -> Select[*tuple[Any, ...]]:
    """The versions of the environments whose ids are bound as ``ids``, each joined to its files if
    ``files`` (one row per file, or one with NULL file columns for a version without any)."""
    ids: BindParameter[int] = bindparam("ids", expanding=True)
    if not files:
        return select(*_VERSION_COLUMNS).where(Version.environment_id.in_(ids)).order_by(Version.id)
    return (
        select(
            *_VERSION_COLUMNS,
            File.filename,
            File.kind,
            File.sha256,
            File.size,
            File.created_at.label("file_created_at"),
        )
        .outerjoin_from(Version, File, File.version_id == Version.id)
        .where(Version.environment_id.in_(ids))
        .order_by(Version.id, File.filename)
    )


def load_environments(
    source: Session | Connection,
    stmt: Select[*tuple[Any, ...]],
    params: Mapping[str, Any] | None = None,
    *,
    files: bool,
) -> list[EnvironmentView]:
    """The environments ``stmt`` (built on ``environment_columns``, run with ``params``) selects, in its
    order, with their tags and versions (no READMEs, sdist listings or metadata), and the versions'
    files if ``files``: two statements."""
    # Core execution on the session's connection (same transaction): these selects name columns, not
    # entities, so the ORM's result machinery would only add per-row cost.
    conn = source.connection() if isinstance(source, Session) else source
    envs = [
        EnvironmentView(
            id=r.id,
            owner=OwnerView(r.owner_name),
            name=r.name,
            description=r.description,
            visibility=r.visibility,
            created_at=r.created_at,
            updated_at=r.updated_at,
            download_count=r.download_count,
            star_count=r.star_count,
            # the aggregate's order is the database's; the ORM's relationship sorts tags by name
            tags=[TagView(t) for t in sorted(r.tags.split(_TAG_SEPARATOR))] if r.tags else [],
        )
        for r in conn.execute(stmt, params)
    ]
    if not envs:
        return envs
    by_id = {e.id: e for e in envs}
    last: VersionView | None = None
    for r in conn.execute(_related(files), {"ids": list(by_id)}):
        if last is None or last.id != r.id:  # rows come by version id, a version's files together
            last = VersionView(
                id=r.id,
                version=r.version,
                summary=r.summary,
                yanked=r.yanked,
                yanked_reason=r.yanked_reason,
                requires_python=r.requires_python,
                dependencies=r.dependencies,
                content_hash=r.content_hash,
                created_at=r.created_at,
            )
            by_id[r.environment_id].versions.append(last)
        if files and r.filename is not None:
            last.files.append(FileView(r.filename, r.kind, r.sha256, r.size, r.file_created_at))
    return envs
