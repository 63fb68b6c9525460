"""Request bodies, and the responses no client library reads: pydantic v2, apart from the DB models.

The responses ``HubClient`` reads are shared with it and live in ``verifiers.hub.wire``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hub_server.auth import Role
from verifiers.hub.wire import Visibility


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


#: Text that goes into the database: PostgreSQL cannot store NUL characters.
Text = Annotated[str, AfterValidator(_no_nul)]
Scope = Literal["read", "publish", "admin"]


class EnvironmentUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: Text | None = Field(default=None, max_length=2000)
    tags: list[Text] | None = Field(default=None, max_length=20)
    visibility: Visibility | None = None


class YankIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Text = Field(default="", max_length=500)


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


class MemberIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role = "member"


class MemberOut(BaseModel):
    """An organisation's member and its role."""

    username: str
    role: Role
