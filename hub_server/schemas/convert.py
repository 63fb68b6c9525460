"""Database rows → response bodies: the one place that decides how a row looks on the wire."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from hub_server.models import ApiToken, Environment, EvalSummary, File, Version as VersionRow
from hub_server.releases import latest_version, sorted_versions
from hub_server.schemas.bodies import EvalOut, TokenOut
from hub_server.simple_index import file_url
from hub_server.views import EnvironmentView, FileView, VersionView
from verifiers.hub import wire

M = TypeVar("M", bound=BaseModel)
#: An ORM row or its plain copy from ``hub_server.views``: both look the same on the wire.
EnvRow = Environment | EnvironmentView
VersionLikeRow = VersionRow | VersionView
FileRow = File | FileView


def _from_row(model: type[M], row: object, **computed: Any) -> M:
    """``model`` with each field not given in ``computed`` read from the row's attribute of that name."""
    copied = {name: getattr(row, name) for name in model.model_fields if name not in computed}
    return model.model_validate({**copied, **computed})


def file_out(env: EnvRow, f: FileRow) -> wire.HubFile:
    return _from_row(wire.HubFile, f, url=file_url(env.name, f.filename), uploaded_at=f.created_at)


def _files(env: EnvRow, v: VersionLikeRow) -> list[wire.HubFile]:
    return [file_out(env, f) for f in v.files]


def version_out(env: EnvRow, v: VersionLikeRow) -> wire.VersionInfo:
    return _from_row(wire.VersionInfo, v, files=_files(env, v))


def version_detail(env: Environment, v: VersionRow, uploader: str | None) -> wire.VersionDetail:
    return _from_row(
        wire.VersionDetail, v, files=_files(env, v), environment=env.full_name, uploader=uploader
    )


def env_summary(env: EnvRow) -> wire.EnvironmentSummary:
    latest = latest_version(env)
    return _from_row(
        wire.EnvironmentSummary,
        env,
        owner=env.owner.name,
        tags=[t.tag for t in env.tags],
        latest_version=latest.version if latest else None,
        downloads=env.download_count,
        stars=env.star_count,
    )


def _newest_first(env: EnvRow) -> list[VersionLikeRow]:
    if isinstance(env, EnvironmentView):
        return list(sorted_versions(env))
    return list(sorted_versions(env))


def env_detail(env: EnvRow) -> wire.EnvironmentDetail:
    return wire.EnvironmentDetail(
        **env_summary(env).model_dump(),
        versions=[version_out(env, v) for v in _newest_first(env)],
        install_command=f"vf-install {env.full_name}",
    )


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
