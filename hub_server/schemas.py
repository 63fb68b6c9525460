"""Pydantic v2 models of the JSON API (request bodies and responses), kept apart from the DB models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


#: Text that goes into the database: PostgreSQL cannot store NUL characters.
Text = Annotated[str, AfterValidator(_no_nul)]
Visibility = Literal["public", "private"]
SortKey = Literal["downloads", "stars", "updated", "name"]
Scope = Literal["read", "publish", "admin"]


class Problem(BaseModel):
    detail: str


class FileOut(BaseModel):
    filename: str
    kind: Literal["bdist_wheel", "sdist"]
    sha256: str
    size: int
    url: str = Field(description="Download path, relative to the hub root.")
    uploaded_at: datetime


class VersionOut(BaseModel):
    version: str
    summary: str
    yanked: bool
    yanked_reason: str
    requires_python: str | None
    dependencies: list[str]
    content_hash: str
    created_at: datetime
    files: list[FileOut]


class VersionDetail(VersionOut):
    environment: str
    readme: str
    readme_content_type: str
    uploader: str | None


class EnvironmentSummary(BaseModel):
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
    versions: list[VersionOut]
    install_command: str


class SearchPage(BaseModel):
    items: list[EnvironmentSummary]
    total: int
    page: int
    per_page: int


class EnvironmentUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: Text | None = Field(default=None, max_length=2000)
    tags: list[Text] | None = Field(default=None, max_length=20)
    visibility: Visibility | None = None


class YankIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Text = Field(default="", max_length=500)


class ResolveOut(BaseModel):
    owner: str
    name: str
    full_name: str
    module: str
    version: str
    yanked: bool
    content_hash: str
    requires_python: str | None
    dependencies: list[str]
    files: list[FileOut]
    index_path: str = Field(description="The simple index, relative to the hub root.")


class SdistEntry(BaseModel):
    path: str
    size: int


class StarOut(BaseModel):
    starred: bool
    stars: int


class EvalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Text = Field(min_length=1, max_length=200)
    avg_reward: float = Field(allow_inf_nan=False)
    num_examples: int = Field(ge=0, le=10**9)
    rollouts_per_example: int = Field(ge=1, le=10**6)
    pass_at_k: dict[Annotated[Text, Field(max_length=16)], Annotated[float, Field(allow_inf_nan=False)]] = (
        Field(default_factory=dict, max_length=64)
    )


class EvalOut(EvalIn):
    id: int
    version: str
    uploader: str | None
    created_at: datetime


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Text = Field(default="", max_length=100)
    scopes: list[Scope] = Field(default_factory=lambda: list[Scope](["read"]), min_length=1, max_length=3)
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)


class TokenOut(BaseModel):
    id: int
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="Shown once; only its hash is stored.")


class WhoAmI(BaseModel):
    username: str
    is_admin: bool
    scopes: list[str]
    namespaces: list[str]
