"""What the hub does, independent of HTTP: the routers and the CLI call these.

Errors are ``HubError(status, detail)``; the app turns them into JSON ``{"detail": ...}`` responses.
Blocking (sync SQLAlchemy, archive checks): call from sync route handlers, which run in a thread pool.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from sqlalchemy import Select, delete, exists, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hub_server import schemas
from hub_server.auth import SCOPES, Principal, can_read, hash_token, new_token
from hub_server.context import Hub
from hub_server.models import (
    ApiToken,
    Environment,
    EnvironmentTag,
    EvalSummary,
    File,
    Membership,
    Owner,
    Star,
    User,
    utcnow,
)
from hub_server.models import (
    Version as VersionRow,
)
from hub_server.simple_index import bump_generation, file_url
from hub_server.validation import InspectedUpload, UploadError, inspect_upload, normalize_tags
from verifiers.hub.packaging import normalize_name, parse_env_spec

_OWNER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,37}[a-z0-9])?$")
# Owner names share the URL space of the web UI (/<owner>/<name>), so these stay free.
RESERVED_OWNERS = frozenset(
    {
        "api",
        "simple",
        "files",
        "static",
        "login",
        "logout",
        "docs",
        "redoc",
        "openapi.json",
        "healthz",
        "admin",
    }
)
_BLOB_GRACE = timedelta(hours=1)


class HubError(Exception):
    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


def not_found(what: str) -> HubError:
    return HubError(404, f"{what} not found (or not visible to you)")


# --- reading ------------------------------------------------------------------------------------------
def sorted_versions(env: Environment) -> list[VersionRow]:
    """Newest first (PEP 440 order)."""
    return sorted(env.versions, key=lambda v: Version(v.version), reverse=True)


def latest_version(env: Environment) -> VersionRow | None:
    versions = sorted_versions(env)
    live = [v for v in versions if not v.yanked]
    finals = [v for v in live if not Version(v.version).is_prerelease]
    best = finals or live or versions
    return best[0] if best else None


def file_out(env: Environment, f: File) -> schemas.FileOut:
    return schemas.FileOut(
        filename=f.filename,
        kind=f.kind,  # type: ignore[arg-type]
        sha256=f.sha256,
        size=f.size,
        url=file_url(env.name, f.filename),
        uploaded_at=f.created_at,
    )


def version_out(env: Environment, v: VersionRow) -> schemas.VersionOut:
    return schemas.VersionOut(
        version=v.version,
        summary=v.summary,
        yanked=v.yanked,
        yanked_reason=v.yanked_reason,
        requires_python=v.requires_python,
        dependencies=list(v.dependencies),
        content_hash=v.content_hash,
        created_at=v.created_at,
        files=[file_out(env, f) for f in v.files],
    )


def uploader_name(session: Session, v: VersionRow) -> str | None:
    if v.uploader_id is None:
        return None
    user = session.get(User, v.uploader_id)
    return user.username if user else None


def env_summary(env: Environment) -> schemas.EnvironmentSummary:
    latest = latest_version(env)
    return schemas.EnvironmentSummary(
        owner=env.owner.name,
        name=env.name,
        full_name=env.full_name,
        module=env.module,
        description=env.description,
        tags=[t.tag for t in env.tags],
        visibility=env.visibility,  # type: ignore[arg-type]
        latest_version=latest.version if latest else None,
        downloads=env.download_count,
        stars=env.star_count,
        created_at=env.created_at,
        updated_at=env.updated_at,
    )


def env_detail(env: Environment) -> schemas.EnvironmentDetail:
    return schemas.EnvironmentDetail(
        **env_summary(env).model_dump(),
        versions=[version_out(env, v) for v in sorted_versions(env)],
        install_command=f"vf-install {env.full_name}",
    )


def _visible_filter(stmt: Select[Any], principal: Principal | None) -> Select[Any]:
    if principal is not None and principal.has("admin"):
        return stmt
    if principal is not None and principal.has("read"):
        return stmt.where(
            or_(Environment.visibility == "public", Environment.owner_id.in_(principal.owner_ids))
        )
    return stmt.where(Environment.visibility == "public")


def get_environment(session: Session, principal: Principal | None, owner: str, name: str) -> Environment:
    """The environment ``owner/name`` if the caller may read it; otherwise 404 (never 403)."""
    env = session.scalar(
        select(Environment)
        .join(Owner)
        .where(Environment.name == normalize_name(name), Owner.name == owner.lower())
    )
    if env is None or not can_read(principal, env):
        raise not_found(f"environment {owner}/{name}")
    return env


def find_version(env: Environment, version: Version) -> VersionRow | None:
    """The row of ``version`` (PEP 440 equality, so ``0.1`` finds ``0.1.0``), if ``env`` has it."""
    return next((v for v in env.versions if Version(v.version) == version), None)


def get_version(env: Environment, version: str) -> VersionRow:
    try:
        wanted = Version(version)
    except ValueError:
        raise HubError(422, f"{version!r} is not a PEP 440 version") from None
    row = find_version(env, wanted)
    if row is None:
        raise not_found(f"version {version} of {env.full_name}")
    return row


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search(
    session: Session,
    principal: Principal | None,
    *,
    q: str = "",
    tags: Sequence[str] = (),
    owner: str | None = None,
    sort: str = "downloads",
    page: int = 1,
    per_page: int = 20,
) -> schemas.SearchPage:
    stmt = _visible_filter(select(Environment).join(Owner), principal)
    if q.strip():
        pattern = f"%{_escape_like(q.strip().lower())}%"
        stmt = stmt.where(
            or_(
                func.lower(Environment.name).like(pattern, escape="\\"),
                func.lower(Environment.description).like(pattern, escape="\\"),
                func.lower(Owner.name).like(pattern, escape="\\"),
            )
        )
    for tag in tags:
        stmt = stmt.where(
            exists().where(EnvironmentTag.environment_id == Environment.id, EnvironmentTag.tag == tag.lower())
        )
    if owner:
        stmt = stmt.where(Owner.name == owner.lower())
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    order: tuple[Any, ...] = {
        "downloads": (Environment.download_count.desc(), Environment.name),
        "stars": (Environment.star_count.desc(), Environment.name),
        "updated": (Environment.updated_at.desc(), Environment.name),
        "name": (Environment.name,),
    }[sort]
    rows: Sequence[Environment] = session.scalars(
        stmt.order_by(*order).offset((page - 1) * per_page).limit(per_page)
    ).all()
    return schemas.SearchPage(items=[env_summary(e) for e in rows], total=total, page=page, per_page=per_page)


def resolve(session: Session, principal: Principal | None, spec_text: str) -> tuple[Environment, VersionRow]:
    """Best version for ``[owner/]name[@specifier]``: highest match, yanked ones only when pinned with ==."""
    try:
        spec = parse_env_spec(spec_text)
    except ValueError as exc:
        raise HubError(422, str(exc)) from None
    env = session.scalar(select(Environment).where(Environment.name == spec.name))
    if env is None or not can_read(principal, env) or (spec.owner and spec.owner.lower() != env.owner.name):
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
        raise HubError(
            404, f"no version of {env.full_name} matches {spec.specifier or 'any'!r} (available: {hint})"
        )
    return env, by_version[max(matching)]


def resolve_out(env: Environment, v: VersionRow) -> schemas.ResolveOut:
    return schemas.ResolveOut(
        owner=env.owner.name,
        name=env.name,
        full_name=env.full_name,
        module=env.module,
        version=v.version,
        yanked=v.yanked,
        content_hash=v.content_hash,
        requires_python=v.requires_python,
        dependencies=list(v.dependencies),
        files=[file_out(env, f) for f in v.files],
        index_path="/simple/",
    )


# --- publishing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Upload:
    filename: str
    data: bytes


def _blob_key(name: str, version: str, filename: str, attempt: str) -> str:
    # Unique per attempt: a losing concurrent publish deletes only its own blobs. The leading
    # millisecond stamp lets `gc` leave blobs of publishes still in flight alone.
    return f"{name}/{version}/{attempt}/{filename}"


def _attempt_id() -> str:
    return f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"


def _owner_or_404(session: Session, owner: str) -> Owner:
    row = session.scalar(select(Owner).where(Owner.name == owner.lower()))
    if row is None:
        raise HubError(404, f"namespace {owner!r} does not exist")
    return row


def _check_publish_rights(principal: Principal | None, owner: Owner) -> None:
    if principal is None:
        raise HubError(401, "publishing needs a token with the publish scope (Authorization: Bearer <token>)")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope; create one with `--scope publish`")
    if not principal.can_publish_to(owner.id):
        raise HubError(403, f"you ({principal.username}) may not publish to the namespace {owner.name!r}")


def _name_taken(env: Environment | None, owner: Owner) -> None:
    if env is not None and env.owner_id != owner.id:
        raise HubError(
            409,
            f"the distribution name {env.name!r} belongs to another owner; distribution names are unique "
            "across the hub, so rename your package (e.g. prefix it with your namespace)",
        )


def precheck_publish(hub: Hub, principal: Principal | None, owner_name: str, env_name: str) -> None:
    """Cheap refusals before the upload is read: auth, namespace, name ownership."""
    with hub.db.read() as session:
        owner = _owner_or_404(session, owner_name)
        _check_publish_rights(principal, owner)
        env = session.scalar(select(Environment).where(Environment.name == normalize_name(env_name)))
        _name_taken(env, owner)


def publish(
    hub: Hub,
    principal: Principal | None,
    owner_name: str,
    env_name: str,
    wheel: Upload,
    sdist: Upload,
    *,
    visibility: str | None = None,
    content_hash: str | None = None,
) -> tuple[Environment, VersionRow]:
    precheck_publish(hub, principal, owner_name, env_name)
    assert principal is not None
    try:
        info = inspect_upload(
            expected_name=env_name,
            wheel_filename=wheel.filename,
            wheel_data=wheel.data,
            sdist_filename=sdist.filename,
            sdist_data=sdist.data,
            limits=hub.limits,
            declared_content_hash=content_hash,
        )
    except UploadError as exc:
        raise HubError(exc.status_code, exc.message) from None
    conflict = _publish_conflict(hub, info)  # refuse before writing any blob; the insert checks again
    if conflict is not None:
        raise conflict

    attempt = _attempt_id()
    keys = {
        f.filename: _blob_key(info.name, info.version, f.filename, attempt) for f in (info.wheel, info.sdist)
    }
    committed = False
    try:
        for f in (info.wheel, info.sdist):
            hub.blobs.put(keys[f.filename], f.data)
        env_id, version_id = _insert_version(hub, principal, owner_name, info, keys, visibility)
        committed = True
    finally:
        if not committed:  # any failure, including an interrupted request: leave nothing behind
            for key in keys.values():
                hub.blobs.delete(key)
    hub.index.clear()
    with hub.db.read() as session:
        env_row = session.get(Environment, env_id)
        ver_row = session.get(VersionRow, version_id)
        assert env_row is not None and ver_row is not None
        return env_row, ver_row


def _insert_version(
    hub: Hub,
    principal: Principal,
    owner_name: str,
    info: InspectedUpload,
    keys: dict[str, str],
    visibility: str | None,
) -> tuple[int, int]:
    # A concurrent first publish of the same name (another version) can win the environment row; the
    # second attempt then finds it and goes on. Any other constraint violation is a real conflict.
    for attempt in range(2):
        try:
            return _insert_once(hub, principal, owner_name, info, keys, visibility)
        except IntegrityError:
            conflict = _publish_conflict(hub, info)
            if conflict is not None:
                raise conflict from None
            if attempt == 1:
                raise
    raise AssertionError("unreachable")


def _publish_conflict(hub: Hub, info: InspectedUpload) -> HubError | None:
    with hub.db.read() as session:
        env = session.scalar(select(Environment).where(Environment.name == info.name))
        if env is not None and find_version(env, Version(info.version)) is not None:
            return HubError(
                409,
                f"{info.name} {info.version} already exists; versions are immutable, so bump the version "
                "(yank the old one if it is broken)",
            )
        files = session.scalars(
            select(File.filename).where(File.filename.in_([info.wheel.filename, info.sdist.filename]))
        ).all()
        if files:
            return HubError(409, f"a file named {files[0]} already exists on the hub")
    return None


def _insert_once(
    hub: Hub,
    principal: Principal,
    owner_name: str,
    info: InspectedUpload,
    keys: dict[str, str],
    visibility: str | None,
) -> tuple[int, int]:
    now = utcnow()
    with hub.db.write() as session:
        owner = _owner_or_404(session, owner_name)
        env = session.scalar(select(Environment).where(Environment.name == info.name))
        _name_taken(env, owner)
        if env is None:
            env = Environment(
                owner_id=owner.id,
                name=info.name,
                description=info.summary,
                visibility=visibility or hub.settings.default_visibility,
                created_at=now,
                updated_at=now,
                download_count=0,
                star_count=0,
            )
            env.tags = [EnvironmentTag(tag=t) for t in info.tags]
            session.add(env)
            session.flush()
        else:
            if visibility:
                env.visibility = visibility
            env.updated_at = now
            newest = max((Version(v.version) for v in env.versions), default=None)
            if newest is None or Version(info.version) > newest:
                env.description = info.summary
                _set_tags(session, env, info.tags)
        ver = VersionRow(
            environment_id=env.id,
            version=info.version,
            summary=info.summary,
            requires_python=info.requires_python,
            dependencies=info.dependencies,
            readme=info.readme,
            readme_content_type=info.readme_content_type,
            content_hash=info.content_hash,
            sdist_files=info.sdist_files,
            yanked=False,
            yanked_reason="",
            uploader_id=principal.user_id,
            created_at=now,
        )
        session.add(ver)
        session.flush()  # the (environment, version) unique constraint decides concurrent publishes
        for f in (info.wheel, info.sdist):
            meta = info.core_metadata if f.kind == "bdist_wheel" else None
            session.add(
                File(
                    version_id=ver.id,
                    filename=f.filename,
                    kind=f.kind,
                    sha256=f.sha256,
                    size=len(f.data),
                    blob_key=keys[f.filename],
                    core_metadata=meta.decode() if meta is not None else None,
                    core_metadata_sha256=hashlib.sha256(meta).hexdigest() if meta is not None else None,
                    created_at=now,
                )
            )
        bump_generation(session)
        session.flush()
        return env.id, ver.id


def _set_tags(session: Session, env: Environment, tags: list[str]) -> None:
    session.execute(delete(EnvironmentTag).where(EnvironmentTag.environment_id == env.id))
    session.expire(env, ["tags"])
    for t in tags:
        session.add(EnvironmentTag(environment_id=env.id, tag=t))


def _check_manage(principal: Principal | None, env: Environment) -> None:
    if principal is None:
        raise HubError(401, "this needs a token (Authorization: Bearer <token>)")
    if not principal.can_publish_to(env.owner_id):
        raise HubError(403, f"you may not change {env.full_name}; it needs a publish token of its owner")


def update_environment(
    hub: Hub, principal: Principal | None, owner: str, name: str, body: schemas.EnvironmentUpdate
) -> Environment:
    try:
        tags = normalize_tags(body.tags) if body.tags is not None else None
    except UploadError as exc:
        raise HubError(exc.status_code, exc.message) from None
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        _check_manage(principal, env)
        if body.description is not None:
            env.description = body.description
        if tags is not None:
            _set_tags(session, env, tags)
        if body.visibility is not None and body.visibility != env.visibility:
            env.visibility = body.visibility
            bump_generation(session)
        env.updated_at = utcnow()
        env_id = env.id
    hub.index.clear()
    with hub.db.read() as session:
        row = session.get(Environment, env_id)
        assert row is not None
        return row


def set_yanked(
    hub: Hub, principal: Principal | None, owner: str, name: str, version: str, yanked: bool, reason: str = ""
) -> schemas.VersionOut:
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        _check_manage(principal, env)
        ver = get_version(env, version)
        ver.yanked, ver.yanked_reason = yanked, (reason if yanked else "")
        bump_generation(session)
        out = version_out(env, ver)
    hub.index.clear()
    return out


def _require_admin(principal: Principal | None) -> Principal:
    if principal is None:
        raise HubError(401, "this needs an admin token")
    if not principal.has("admin"):
        raise HubError(403, "only hub admins with an admin-scoped token may delete")
    return principal


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
    if principal is None:
        raise HubError(401, "starring needs a token")
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        existing = session.scalar(
            select(Star).where(Star.user_id == principal.user_id, Star.environment_id == env.id)
        )
        if starred and existing is None:
            session.add(Star(user_id=principal.user_id, environment_id=env.id))
        elif not starred and existing is not None:
            session.delete(existing)
        session.flush()
        count = session.scalar(select(func.count()).where(Star.environment_id == env.id)) or 0
        env.star_count = count
        return schemas.StarOut(starred=starred, stars=count)


def record_download(hub: Hub, env_id: int) -> None:
    with hub.db.write() as session:
        session.execute(
            update(Environment)
            .where(Environment.id == env_id)
            .values(download_count=Environment.download_count + 1)
        )


# --- evals --------------------------------------------------------------------------------------------
def add_eval(
    hub: Hub, principal: Principal | None, owner: str, name: str, version: str, body: schemas.EvalIn
) -> schemas.EvalOut:
    if principal is None:
        raise HubError(401, "uploading an eval needs a token with the publish scope")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope")
    with hub.db.write() as session:
        env = get_environment(session, principal, owner, name)
        ver = get_version(env, version)
        row = EvalSummary(version_id=ver.id, uploader_id=principal.user_id, **body.model_dump())
        session.add(row)
        session.flush()
        return schemas.EvalOut(
            id=row.id,
            version=ver.version,
            uploader=principal.username,
            created_at=row.created_at,
            **body.model_dump(),
        )


def list_evals(session: Session, env: Environment) -> list[schemas.EvalOut]:
    rows = session.execute(
        select(EvalSummary, VersionRow.version, Owner.name)
        .join(VersionRow, EvalSummary.version_id == VersionRow.id)
        .outerjoin(User, EvalSummary.uploader_id == User.id)
        .outerjoin(Owner, User.owner_id == Owner.id)
        .where(VersionRow.environment_id == env.id)
        .order_by(EvalSummary.avg_reward.desc(), EvalSummary.created_at)
    ).all()
    return [
        schemas.EvalOut(
            id=e.id,
            version=version,
            uploader=uploader,
            created_at=e.created_at,
            model=e.model,
            avg_reward=e.avg_reward,
            num_examples=e.num_examples,
            rollouts_per_example=e.rollouts_per_example,
            pass_at_k=e.pass_at_k,
        )
        for e, version, uploader in rows
    ]


# --- users, organisations, tokens -----------------------------------------------------------------------
def find_user(session: Session, username: str) -> User | None:
    return session.scalar(select(User).join(Owner).where(Owner.name == username.lower()))


def _new_owner(session: Session, name: str, kind: str) -> Owner:
    name = name.lower()
    if not _OWNER_NAME.match(name) or name in RESERVED_OWNERS:
        raise HubError(
            422,
            f"invalid name {name!r}: use 1-39 characters a-z, 0-9 and '-', not starting or ending with '-'",
        )
    if session.scalar(select(Owner).where(Owner.name == name)) is not None:
        raise HubError(409, f"the name {name!r} is already taken")
    owner = Owner(name=name, kind=kind)
    session.add(owner)
    session.flush()
    return owner


def create_user(hub: Hub, username: str, *, email: str | None = None, admin: bool = False) -> User:
    with hub.db.write() as session:
        owner = _new_owner(session, username, "user")
        user = User(owner_id=owner.id, email=email, is_admin=admin)
        session.add(user)
        session.flush()
        session.refresh(user)
        return user


def create_org(hub: Hub, name: str, members: Sequence[str] = ()) -> Owner:
    with hub.db.write() as session:
        org = _new_owner(session, name, "org")
        for i, member in enumerate(members):
            user = find_user(session, member)
            if user is None:
                raise HubError(404, f"user {member!r} does not exist")
            session.add(Membership(org_id=org.id, user_id=user.id, role="owner" if i == 0 else "member"))
        return org


def add_member(hub: Hub, org: str, username: str, role: str = "member") -> None:
    with hub.db.write() as session:
        org_row = session.scalar(select(Owner).where(Owner.name == org.lower(), Owner.kind == "org"))
        user = find_user(session, username)
        if org_row is None or user is None:
            raise HubError(404, f"organisation {org!r} or user {username!r} does not exist")
        session.add(Membership(org_id=org_row.id, user_id=user.id, role=role))


def create_token(
    hub: Hub,
    username: str,
    *,
    scopes: Sequence[str] = ("read",),
    name: str = "",
    expires_in: timedelta | None = None,
    creator: Principal | None = None,
) -> tuple[str, ApiToken]:
    """A new token for ``username``. Via the API (``creator`` set) it can carry no more than the creator's."""
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise HubError(422, f"scopes must be some of {', '.join(SCOPES)}; got {list(scopes)}")
    if creator is not None and not all(creator.has(s) for s in scopes):
        raise HubError(403, "a token cannot grant scopes its creator's token lacks")
    with hub.db.write() as session:
        user = find_user(session, username)
        if user is None:
            raise HubError(404, f"user {username!r} does not exist")
        if "admin" in scopes and not user.is_admin:
            raise HubError(403, f"{username} is not a hub admin, so it cannot hold an admin-scoped token")
        token = new_token()
        row = ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[:12],
            name=name,
            scopes=sorted(set(scopes), key=SCOPES.index),
            expires_at=datetime.now(UTC) + expires_in if expires_in else None,
        )
        session.add(row)
        session.flush()
        session.refresh(row)
        return token, row


def revoke_token(hub: Hub, token_id: int, *, principal: Principal | None = None) -> None:
    with hub.db.write() as session:
        row = session.get(ApiToken, token_id)
        if row is None or (
            principal is not None and row.user_id != principal.user_id and not principal.has("admin")
        ):
            raise HubError(404, f"token {token_id} not found")
        if row.revoked_at is None:
            row.revoked_at = utcnow()


def list_tokens(session: Session, user_id: int) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)))


def token_out(row: ApiToken) -> schemas.TokenOut:
    return schemas.TokenOut(
        id=row.id,
        name=row.name,
        prefix=row.prefix,
        scopes=list(row.scopes),
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )


def whoami(session: Session, principal: Principal) -> schemas.WhoAmI:
    names = session.scalars(select(Owner.name).where(Owner.id.in_(principal.owner_ids)).order_by(Owner.name))
    return schemas.WhoAmI(
        username=principal.username,
        is_admin=principal.is_admin,
        scopes=sorted(principal.scopes, key=SCOPES.index),
        namespaces=list(names),
    )


# --- maintenance -----------------------------------------------------------------------------------------
def collect_garbage(hub: Hub, *, grace: timedelta = _BLOB_GRACE) -> list[str]:
    """Delete blobs no file row references (left by a crash mid-publish). Young blobs are kept."""
    with hub.db.read() as session:
        referenced = set(session.scalars(select(File.blob_key)))
    cutoff_ms = (time.time() - grace.total_seconds()) * 1000
    removed: list[str] = []
    for key in list(hub.blobs.iter_keys()):
        if key in referenced:
            continue
        parts = key.split("/")
        stamp = parts[2].split("-", 1)[0] if len(parts) == 4 else ""
        if stamp.isdigit() and int(stamp) > cutoff_ms:
            continue
        hub.blobs.delete(key)
        removed.append(key)
    return removed
