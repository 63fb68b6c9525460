"""Finding rows by name, as every domain does: environments (visibility checked), versions, owners, users."""

from __future__ import annotations

import functools
from collections.abc import Collection, Hashable
from typing import Any, Literal, TypeVar

from packaging.version import Version
from sqlalchemy import BindParameter, Connection, Select, bindparam, or_, select
from sqlalchemy.orm import Session, defer, selectinload

from hub_server.auth import Principal
from hub_server.models import Environment, File, Owner, User, Version as VersionRow
from hub_server.releases import find_version
from hub_server.services.errors import HubError, not_found
from hub_server.views import EnvironmentView, environment_columns, load_environments
from verifiers.hub.packaging import normalize_name

_S = TypeVar("_S", bound="Select[*tuple[Any, ...]]")
#: What a caller may read: every environment; the public ones plus its namespaces' and those shared with
#: it; or the public ones.
ReadScope = Literal["all", "owners", "public"]


def read_scope(principal: Principal | None) -> ReadScope:
    if principal is not None and principal.has("admin"):
        return "all"
    if principal is not None and principal.has("read"):
        return "owners"
    return "public"


def visibility_key(principal: Principal | None) -> Hashable:
    """Equal for two callers exactly when ``visible_filter`` lets them read the same environments (a read
    grant given or revoked changes it, and bumps the catalogue generation the answers are kept under)."""
    scope = read_scope(principal)
    if scope == "owners" and principal is not None:
        return (scope, principal.owner_ids, principal.granted_ids)
    return scope


_Ids = Collection[int] | BindParameter[Any]


def _narrowed(stmt: _S, scope: ReadScope, owner_ids: _Ids, granted_ids: _Ids) -> _S:
    if scope == "all":
        return stmt
    if scope == "owners":
        return stmt.where(
            or_(
                Environment.visibility == "public",
                Environment.owner_id.in_(owner_ids),
                Environment.id.in_(granted_ids),
            )
        )
    return stmt.where(Environment.visibility == "public")


def visible_filter(stmt: _S, principal: Principal | None) -> _S:
    """``stmt`` over environments, narrowed to those ``principal`` may read."""
    if principal is None:
        return _narrowed(stmt, "public", (), ())
    return _narrowed(stmt, read_scope(principal), principal.owner_ids, principal.granted_ids)


def visible_bound(stmt: _S, scope: ReadScope) -> _S:
    """``visible_filter`` for a statement built once per scope: the namespaces and the granted
    environments are the bound parameters ``owner_ids`` and ``granted_ids`` (``visible_params`` gives
    their values)."""
    return _narrowed(
        stmt, scope, bindparam("owner_ids", expanding=True), bindparam("granted_ids", expanding=True)
    )


def visible_params(principal: Principal | None) -> dict[str, Any]:
    if principal is None or read_scope(principal) != "owners":
        return {}
    return {"owner_ids": sorted(principal.owner_ids), "granted_ids": sorted(principal.granted_ids)}


def _without_bulk(stmt: _S) -> _S:
    # READMEs (up to 512 KiB each), sdist listings and wheel METADATA are large and few answers need
    # them: load them when touched, not with every version of every environment.
    return stmt.options(
        selectinload(Environment.versions).options(
            defer(VersionRow.readme),
            defer(VersionRow.sdist_files),
            selectinload(VersionRow.files).defer(File.core_metadata),
        )
    )


def environment_named(session: Session, name: str) -> Environment | None:
    """The environment with distribution name ``name``, whoever owns it (names are unique hub-wide)."""
    return session.scalar(select(Environment).where(Environment.name == normalize_name(name)))


def visible_environment_named(session: Session, principal: Principal | None, name: str) -> Environment | None:
    """Like ``environment_named``, but None for an environment the caller may not read.

    Visibility is part of the query, so an invisible environment costs exactly what an absent one
    does (no row, no eager loads): the two cannot be told apart by timing or query count.
    """
    stmt = _without_bulk(visible_filter(select(Environment), principal))
    env: Environment | None = session.scalar(stmt.where(Environment.name == normalize_name(name)))
    return env


def get_environment(session: Session, principal: Principal | None, owner: str, name: str) -> Environment:
    """The environment ``owner/name`` if the caller may read it; otherwise 404 (never 403).

    Absent and invisible take the same path: visibility is filtered in SQL, before any row is loaded.
    """
    stmt = _without_bulk(visible_filter(select(Environment).join(Owner), principal))
    env: Environment | None = session.scalar(
        stmt.where(Environment.name == normalize_name(name), Owner.name == owner.lower())
    )
    if env is None:
        raise not_found(f"environment {owner}/{name}")
    return env


def visible_environment_view(
    session: Session | Connection, principal: Principal | None, name: str, owner: str | None = None
) -> EnvironmentView | None:
    """Like ``visible_environment_named`` (and ``owner``'s if given), as a plain ``EnvironmentView``
    with its tags, versions and files, read with Core selects. Visibility is in the first query, so
    an invisible environment costs what an absent one does."""
    params = {**visible_params(principal), "name": normalize_name(name)}
    if owner is not None:
        params["owner"] = owner.lower()
    stmt = _environment_by_name(read_scope(principal), owner is not None)
    envs = load_environments(session, stmt, params, files=True)
    return envs[0] if envs else None


@functools.cache
def _environment_by_name(scope: ReadScope, with_owner: bool) -> Select[*tuple[Any, ...]]:
    stmt = visible_bound(environment_columns(), scope).where(Environment.name == bindparam("name"))
    return stmt.where(Owner.name == bindparam("owner")) if with_owner else stmt


def get_environment_view(
    session: Session | Connection, principal: Principal | None, owner: str, name: str
) -> EnvironmentView:
    """``get_environment`` for answers that only read: the same 404, a plain ``EnvironmentView``."""
    env = visible_environment_view(session, principal, name, owner)
    if env is None:
        raise not_found(f"environment {owner}/{name}")
    return env


def get_version(env: Environment, version: str) -> VersionRow:
    try:
        wanted = Version(version)
    except ValueError:
        raise HubError(422, f"{version!r} is not a PEP 440 version") from None
    row = find_version(env, wanted)
    if row is None:
        raise not_found(f"version {version} of {env.full_name}")
    return row


def get_owner(session: Session, owner: str) -> Owner:
    row = session.scalar(select(Owner).where(Owner.name == owner.lower()))
    if row is None:
        raise HubError(404, f"namespace {owner!r} does not exist")
    return row


def find_user(session: Session, username: str) -> User | None:
    return session.scalar(select(User).join(Owner).where(Owner.name == username.lower()))


def uploader_name(session: Session, v: VersionRow) -> str | None:
    if v.uploader_id is None:
        return None
    user = session.get(User, v.uploader_id)
    return user.username if user else None
