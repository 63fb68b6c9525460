"""Database rows → response bodies: the one place that decides how a row looks on the wire."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from hub_server.models import ApiToken, Environment, EvalSummary, File, Version as VersionRow
from hub_server.releases import latest_among, sorted_versions
from hub_server.schemas.bodies import EvalOut, TokenOut
from hub_server.simple_index import file_url
from hub_server.views import EnvironmentView, FileView, VersionView
from verifiers.hub import wire

M = TypeVar("M", bound=BaseModel)
#: An ORM row or its plain copy from ``hub_server.views``: both look the same on the wire.
EnvRow = Environment | EnvironmentView
VersionLikeRow = VersionRow | VersionView
FileRow = File | FileView


def _fields(model: type[BaseModel], row: object, **computed: Any) -> dict[str, Any]:
    """``model``'s fields as a dict: those given in ``computed``, the rest read from the row's attribute
    of that name (in the model's field order)."""
    return {name: computed[name] if name in computed else getattr(row, name) for name in model.model_fields}


def _from_row(model: type[M], row: object, **computed: Any) -> M:
    """``model`` with each field not given in ``computed`` read from the row's attribute of that name."""
    return model.model_validate(_fields(model, row, **computed))


# The answers with nested parts are validated once, from nested dicts: one call into pydantic-core
# per answer instead of one per version and file (and no second validation of a dumped summary).
def _file(env: EnvRow, f: FileRow) -> dict[str, Any]:
    return _fields(wire.HubFile, f, url=file_url(env.name, f.filename), uploaded_at=f.created_at)


def _files(env: EnvRow, v: VersionLikeRow) -> list[dict[str, Any]]:
    return [_file(env, f) for f in v.files]


def _version(env: EnvRow, v: VersionLikeRow) -> dict[str, Any]:
    return _fields(wire.VersionInfo, v, files=_files(env, v))


def file_out(env: EnvRow, f: FileRow) -> wire.HubFile:
    return wire.HubFile.model_validate(_file(env, f))


def version_out(env: EnvRow, v: VersionLikeRow) -> wire.VersionInfo:
    return wire.VersionInfo.model_validate(_version(env, v))


def version_detail(env: Environment, v: VersionRow, uploader: str | None) -> wire.VersionDetail:
    return _from_row(
        wire.VersionDetail, v, files=_files(env, v), environment=env.full_name, uploader=uploader
    )


def _summary(
    env: EnvRow, newest_first: list[VersionLikeRow], model: type[BaseModel], **more: Any
) -> dict[str, Any]:
    latest = latest_among(newest_first)
    return _fields(
        model,
        env,
        owner=env.owner.name,
        tags=[t.tag for t in env.tags],
        latest_version=latest.version if latest else None,
        downloads=env.download_count,
        stars=env.star_count,
        **more,
    )


def _newest_first(env: EnvRow) -> list[VersionLikeRow]:
    if isinstance(env, EnvironmentView):
        return list(sorted_versions(env))
    return list(sorted_versions(env))


def env_summary(env: EnvRow) -> wire.EnvironmentSummary:
    return wire.EnvironmentSummary.model_validate(_summary(env, _newest_first(env), wire.EnvironmentSummary))


def env_detail(env: EnvRow) -> wire.EnvironmentDetail:
    versions = _newest_first(env)  # sorted once, for "latest" and the list
    body = _summary(
        env,
        versions,
        wire.EnvironmentDetail,
        versions=[_version(env, v) for v in versions],
        install_command=f"vf-install {env.full_name}",
    )
    return wire.EnvironmentDetail.model_validate(body)


def resolve_out(env: EnvRow, v: VersionLikeRow) -> wire.ResolvedVersion:
    return _from_row(
        wire.ResolvedVersion,
        v,
        owner=env.owner.name,
        name=env.name,
        full_name=env.full_name,
        module=env.module,
        files=_files(env, v),
        index_path="/simple/",
    )


def eval_out(row: EvalSummary, version: str, uploader: str | None) -> EvalOut:
    return _from_row(EvalOut, row, version=version, uploader=uploader)


def token_out(row: ApiToken) -> TokenOut:
    return _from_row(TokenOut, row)
