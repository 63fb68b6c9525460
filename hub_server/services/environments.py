"""Changing what is published: description, tags and visibility, yanking, stars, and admin deletes."""

from __future__ import annotations

from html import escape

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import Principal
from hub_server.changes import bump_catalogue
from hub_server.context import Hub
from hub_server.models import Environment, EnvironmentTag, Star, Version, utcnow
from hub_server.readme import render_limited
from hub_server.services.errors import HubError
from hub_server.services.lookups import get_environment, get_version
from hub_server.simple_index import bump_generation
from hub_server.validation import UploadError, normalize_tags
from verifiers.hub import wire


def readme_html(hub: Hub, ver: Version) -> str:
    """The version's README as sanitised HTML: rendered once at publish and stored; a version published
    before that is rendered the same way (in the limited child) on its first view, then stored."""
    if ver.readme_html is not None:
        return ver.readme_html
    try:
        html = render_limited(ver.readme, ver.readme_content_type)
    except UploadError as exc:
        html = f"<p><em>{escape(exc.message)}</em></p>"
    with hub.db.write() as session:
        session.execute(update(Version).where(Version.id == ver.id).values(readme_html=html))
    return html


def replace_tags(session: Session, env: Environment, tags: list[str]) -> None:
    session.execute(delete(EnvironmentTag).where(EnvironmentTag.environment_id == env.id))
    session.expire(env, ["tags"])
    for t in tags:
        session.add(EnvironmentTag(environment_id=env.id, tag=t))


def _check_publish(principal: Principal | None, env: Environment) -> Principal:
    """Members' rights: description and tags (a publish changes them too)."""
    if principal is None:
        raise HubError(401, "this needs a token (Authorization: Bearer <token>)")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope; create one with `--scope publish`")
    if not principal.can_publish_to(env.owner_id):
        raise HubError(403, f"you may not change {env.full_name}; it needs a publish token of its namespace")
    return principal


def check_manage(principal: Principal | None, env: Environment, what: str) -> Principal:
    """Owners' and admins' rights (``auth``'s matrix): yank, visibility, read grants. ``what`` is the
    verb for the message ("yank", "change the visibility of", …)."""
    p = _check_publish(principal, env)
    if not p.can_manage(env.owner_id):
        raise HubError(
            403,
            f"only owners and admins of {env.owner.name} may {what} {env.full_name}; you are a member "
            "(ask one of its owners to make you an admin)",
        )
    return p


def _require_admin(principal: Principal | None) -> Principal:
    if principal is None:
        raise HubError(401, "this needs an admin token")
    if not principal.has("admin"):
        raise HubError(403, "only hub admins with an admin-scoped token may delete")
    return principal


def update_environment(
    hub: Hub, principal: Principal | None, owner: str, name: str, body: schemas.EnvironmentUpdate
) -> Environment:
    try:
        tags = normalize_tags(body.tags) if body.tags is not None else None
    except UploadError as exc:
        raise HubError(exc.status_code, exc.message) from None
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        _check_publish(principal, env)
        changes_visibility = body.visibility is not None and body.visibility != env.visibility
        if changes_visibility:
            check_manage(principal, env, "change the visibility of")
        if body.description is not None:
            env.description = body.description
        if tags is not None:
            replace_tags(session, env, tags)
        if changes_visibility:
            assert body.visibility is not None
            env.visibility = body.visibility
            bump_generation(session)
        else:
            bump_catalogue(session)  # description, tags, updated_at show in the JSON API
        env.updated_at = utcnow()
        env_id = env.id
    hub.index.clear()
    with hub.db.read() as session:
        row = session.get(Environment, env_id)
        assert row is not None
        return row


def set_yanked(
    hub: Hub, principal: Principal | None, owner: str, name: str, version: str, yanked: bool, reason: str = ""
) -> wire.VersionInfo:
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        check_manage(principal, env, "yank" if yanked else "unyank")
        ver = get_version(env, version)
        ver.yanked, ver.yanked_reason = yanked, (reason if yanked else "")
        bump_generation(session)
        out = schemas.version_out(env, ver)
    hub.index.clear()
    return out


def delete_environment(hub: Hub, principal: Principal | None, owner: str, name: str) -> None:
    _require_admin(principal)
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        keys = [f.blob_key for v in env.versions for f in v.files]
        session.delete(env)
        bump_generation(session)
    hub.index.clear()
    for key in keys:  # after commit: a crash here leaves only unreferenced blobs, which `gc` removes
        hub.blobs.delete(key)


def delete_version(hub: Hub, principal: Principal | None, owner: str, name: str, version: str) -> None:
    _require_admin(principal)
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        ver = get_version(env, version)
        keys = [f.blob_key for f in ver.files]
        session.delete(ver)
        bump_generation(session)
    hub.index.clear()
    for key in keys:
        hub.blobs.delete(key)


def set_star(hub: Hub, principal: Principal | None, owner: str, name: str, starred: bool) -> schemas.StarOut:
    """Star or unstar, idempotently under any concurrency: one ``INSERT … ON CONFLICT DO NOTHING`` or
    ``DELETE``, and the count moves by exactly the rows that statement changed (a select-then-insert
    let two concurrent PUTs of one user both insert, and the unique constraint answered 500)."""
    if principal is None:
        raise HubError(401, "starring needs a token")
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        if starred:
            insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
            changed = session.execute(
                insert(Star)
                .values(user_id=principal.user_id, environment_id=env.id, created_at=utcnow())
                .on_conflict_do_nothing()
                .returning(Star.id)
            ).all()
        else:
            changed = session.execute(
                delete(Star)
                .where(Star.user_id == principal.user_id, Star.environment_id == env.id)
                .returning(Star.id)
            ).all()
        if changed:
            step = len(changed) if starred else -len(changed)
            session.execute(
                update(Environment)
                .where(Environment.id == env.id)
                .values(star_count=Environment.star_count + step)
                .execution_options(synchronize_session=False)
            )
            bump_catalogue(session)
        count = session.scalar(select(Environment.star_count).where(Environment.id == env.id)) or 0
        return schemas.StarOut(starred=starred, stars=count)
