"""Publishing a version, one way: refuse early, check the upload, write blobs, insert rows, or clean up.

Blob keys are ``<name>/<version>/<attempt>/<filename>``, unique per attempt, so a losing concurrent publish
deletes only its own blobs; the attempt starts with a millisecond stamp so that ``collect_garbage`` leaves
the blobs of publishes still in flight alone.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from packaging.version import Version
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from hub_server.auth import Principal
from hub_server.context import Hub
from hub_server.models import Environment, EnvironmentTag, File, Owner, Version as VersionRow, utcnow
from hub_server.releases import find_version
from hub_server.services.environments import replace_tags
from hub_server.services.errors import HubError
from hub_server.services.lookups import environment_named, get_owner
from hub_server.services.names import (
    check_first_publish,
    check_holder,
    check_reserved,
    name_holder,
    name_taken,
)
from hub_server.simple_index import bump_generation
from hub_server.validation import InspectedUpload, UploadError, inspect_upload

_BLOB_GRACE = timedelta(hours=1)


@dataclass(frozen=True)
class Upload:
    filename: str
    data: bytes


@dataclass(frozen=True)
class _Attempt:
    """One checked upload on its way into the database."""

    principal: Principal
    owner_name: str
    info: InspectedUpload
    keys: dict[str, str]  # filename -> blob key
    visibility: str | None


def _attempt_id() -> str:
    return f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"


def _attempt_started_ms(key: str) -> int | None:
    parts = key.split("/")
    stamp = parts[2].split("-", 1)[0] if len(parts) == 4 else ""
    return int(stamp) if stamp.isdigit() else None


def _check_publish_rights(principal: Principal | None, owner: Owner) -> None:
    if principal is None:
        raise HubError(401, "publishing needs a token with the publish scope (Authorization: Bearer <token>)")
    if not principal.has("publish"):
        raise HubError(403, "this token lacks the publish scope; create one with `--scope publish`")
    if not principal.can_publish_to(owner.id):
        raise HubError(403, f"you ({principal.username}) may not publish to the namespace {owner.name!r}")


def precheck_publish(hub: Hub, principal: Principal | None, owner_name: str, env_name: str) -> None:
    """Refusals before the upload is read: auth, namespace, reserved names, name ownership (one answer
    whatever holds the name), and for a name new to the hub, whether the upstream index serves it
    (``services.names``)."""
    with hub.db.read() as session:
        owner = get_owner(session, owner_name)
        _check_publish_rights(principal, owner)
        check_reserved(env_name)  # the SDK and its dependency closure: 409
        holder = name_holder(session, env_name)
    check_holder(holder, env_name, owner)
    if not holder.published:
        check_first_publish(hub, env_name, owner, allowed=holder.owner_id == owner.id)


def _check_visibility_change(principal: Principal, env: Environment, visibility: str | None) -> None:
    # A publish that would change an existing environment's visibility needs the rights of a visibility
    # change (``auth``: owners and admins), or a member could make the namespace's private one public.
    if visibility and visibility != env.visibility and not principal.can_manage(env.owner_id):
        raise HubError(
            403,
            f"only owners and admins of {env.owner.name} may change the visibility of {env.full_name} "
            f"(it is {env.visibility}); publish without a visibility to keep it",
        )


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

    attempt_id = _attempt_id()
    keys = {
        f.filename: f"{info.name}/{info.version}/{attempt_id}/{f.filename}" for f in (info.wheel, info.sdist)
    }
    committed = False
    try:
        for f in (info.wheel, info.sdist):
            hub.blobs.put(keys[f.filename], f.data)
        env_id, version_id = _insert_version(hub, _Attempt(principal, owner_name, info, keys, visibility))
        committed = True
    finally:
        if not committed:  # any failure, including an interrupted request: leave nothing behind
            for key in keys.values():
                hub.blobs.delete(key)
    hub.index.clear()
    hub.smoke_checks().queue(version_id)  # in the background; it never fails the publish
    with hub.db.read() as session:
        env_row = session.get(Environment, env_id)
        ver_row = session.get(VersionRow, version_id)
        assert env_row is not None and ver_row is not None
        return env_row, ver_row


def _insert_version(hub: Hub, attempt: _Attempt) -> tuple[int, int]:
    # A concurrent first publish of the same name (another version) can win the environment row; the
    # second try then finds it and goes on. Any other constraint violation is a real conflict.
    for tries in range(2):
        try:
            return _insert_once(hub, attempt)
        except IntegrityError:
            conflict = _publish_conflict(hub, attempt.info)
            if conflict is not None:
                raise conflict from None
            if tries == 1:
                raise
    raise AssertionError("unreachable")


def _exists(info: InspectedUpload) -> HubError:
    return HubError(
        409,
        f"{info.name} {info.version} already exists (versions equal under PEP 440 count as one); versions "
        "are immutable, so bump the version (yank the old one if it is broken)",
    )


def _publish_conflict(hub: Hub, info: InspectedUpload) -> HubError | None:
    with hub.db.read() as session:
        env = environment_named(session, info.name)
        if env is not None and find_version(env, Version(info.version)) is not None:
            return _exists(info)
        files = session.scalars(
            select(File.filename).where(File.filename.in_([info.wheel.filename, info.sdist.filename]))
        ).all()
        if files:
            return HubError(409, f"a file named {files[0]} already exists on the hub")
    return None


def _insert_once(hub: Hub, attempt: _Attempt) -> tuple[int, int]:
    info, now = attempt.info, utcnow()
    with hub.db.write() as session:
        owner = get_owner(session, attempt.owner_name)
        env = environment_named(session, info.name)
        if env is not None and env.owner_id != owner.id:
            raise name_taken(info.name)
        if env is None:
            env = Environment(
                owner_id=owner.id,
                name=info.name,
                description=info.summary,
                visibility=attempt.visibility or hub.settings.default_visibility,
                created_at=now,
                updated_at=now,
                download_count=0,
                star_count=0,
            )
            env.tags = [EnvironmentTag(tag=t) for t in info.tags]
            session.add(env)
            session.flush()
        else:
            # Versions equal under PEP 440 (1.0, 1.0.0) are different strings, so the unique constraint
            # cannot see them: lock the environment row (PostgreSQL; SQLite writes are serial already)
            # and look again inside this transaction.
            session.execute(select(Environment.id).where(Environment.id == env.id).with_for_update())
            existing = session.scalars(select(VersionRow.version).where(VersionRow.environment_id == env.id))
            if any(Version(v) == Version(info.version) for v in existing):
                raise _exists(info)
            _check_visibility_change(attempt.principal, env, attempt.visibility)
            if attempt.visibility:
                env.visibility = attempt.visibility
            env.updated_at = now
            newest = max((Version(v.version) for v in env.versions), default=None)
            if newest is None or Version(info.version) > newest:
                env.description = info.summary
                replace_tags(session, env, info.tags)
        ver = VersionRow(
            environment_id=env.id,
            version=info.version,
            summary=info.summary,
            requires_python=info.requires_python,
            dependencies=info.dependencies,
            readme=info.readme,
            readme_content_type=info.readme_content_type,
            readme_html=info.readme_html,
            content_hash=info.content_hash,
            sdist_files=info.sdist_files,
            yanked=False,
            yanked_reason="",
            uploader_id=attempt.principal.user_id,
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
                    blob_key=attempt.keys[f.filename],
                    core_metadata=meta.decode() if meta is not None else None,
                    core_metadata_sha256=hashlib.sha256(meta).hexdigest() if meta is not None else None,
                    created_at=now,
                )
            )
        bump_generation(session)
        session.flush()
        return env.id, ver.id


def collect_garbage(hub: Hub, *, grace: timedelta = _BLOB_GRACE) -> list[str]:
    """Delete blobs no file row references (left by a crash mid-publish). Young blobs are kept."""
    with hub.db.read() as session:
        referenced = set(session.scalars(select(File.blob_key)))
    cutoff_ms = (time.time() - grace.total_seconds()) * 1000
    removed: list[str] = []
    for key in list(hub.blobs.iter_keys()):
        started = _attempt_started_ms(key)
        if key in referenced or (started is not None and started > cutoff_ms):
            continue
        hub.blobs.delete(key)
        removed.append(key)
    return removed
