"""What crosses between the hub and its clients, defined once and imported by both sides.

- the JSON bodies of ``/api/v1`` that clients read: the hub declares these classes as its response models
  and ``HubClient`` parses with them, so the two cannot drift apart;
- the error form: ``{"detail": ...}`` bodies, and ``HubClientError`` for a refused or failed request;
- the client config file, which ``vf-hub login`` (in ``hub_server``) writes and ``HubClient`` reads.

Models ignore unknown fields, so a newer hub may add some without breaking older clients;
``tests/hub/test_wire_contract.py`` checks that real hub responses round-trip through them unchanged.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Literal

import platformdirs
import tomli_w
from pydantic import BaseModel, ConfigDict, Field

FileKind = Literal["bdist_wheel", "sdist"]
Visibility = Literal["public", "private"]
SortKey = Literal["downloads", "stars", "updated", "name"]


class HubClientError(Exception):
    """A refused or failed hub request; ``status_code`` is None when the hub could not be reached."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


# --- response bodies ------------------------------------------------------------------------------------
class WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Problem(WireModel):
    """Every JSON error of the hub."""

    detail: str


class HubFile(WireModel):
    filename: str
    kind: FileKind
    sha256: str
    size: int
    url: str = Field(description="Download path, relative to the hub root.")
    uploaded_at: datetime


class VersionInfo(WireModel):
    version: str
    summary: str
    yanked: bool
    yanked_reason: str
    requires_python: str | None
    dependencies: list[str]
    content_hash: str
    created_at: datetime
    files: list[HubFile]


class VersionDetail(VersionInfo):
    """One version with its README; also the answer to a publish."""

    environment: str
    readme: str
    readme_content_type: str
    uploader: str | None


class EnvironmentSummary(WireModel):
    owner: str
    name: str
    full_name: str
    module: str
    description: str
    tags: list[str]
    visibility: Visibility
    latest_version: str | None
    downloads: int
    stars: int
    created_at: datetime
    updated_at: datetime


class EnvironmentDetail(EnvironmentSummary):
    versions: list[VersionInfo]
    install_command: str


class SearchPage(WireModel):
    items: list[EnvironmentSummary]
    total: int
    page: int
    per_page: int


class ResolvedVersion(WireModel):
    owner: str
    name: str
    full_name: str
    module: str
    version: str
    yanked: bool
    content_hash: str
    requires_python: str | None
    dependencies: list[str]
    files: list[HubFile]
    index_path: str = Field(description="The simple index, relative to the hub root.")

    def file(self, kind: FileKind) -> HubFile | None:
        return next((f for f in self.files if f.kind == kind), None)


class WhoAmI(WireModel):
    username: str
    is_admin: bool
    scopes: list[str]
    namespaces: list[str]


def problem_detail(body: str) -> str:
    """The message of an error body; FastAPI's validation errors (a list) are joined, other bodies kept."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    detail = data.get("detail", body) if isinstance(data, dict) else body
    if isinstance(detail, list):
        return "; ".join(str(d.get("msg", d)) for d in detail if isinstance(d, dict))
    return str(detail)


# --- the client config file -------------------------------------------------------------------------------
def config_path() -> Path:
    override = os.environ.get("VF_HUB_CONFIG")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("verifiers-hub", appauthor=False)) / "config.toml"


def clean_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise HubClientError(f"hub URL {url!r} must start with http:// or https://")
    return url


def load_config_file() -> dict[str, str]:
    path = config_path()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise HubClientError(f"{path} is not valid TOML: {exc}") from None
    return {k: str(v) for k, v in data.items() if k in ("url", "token")}


def save_config(url: str, token: str) -> Path:
    """Write URL and token to the config file, readable by the user only (written atomically)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            tomli_w.dump({"url": clean_url(url), "token": token}, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
