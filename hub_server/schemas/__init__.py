"""The hub's own API shapes, and how database rows become response bodies.

``bodies``: request bodies and the responses only the hub defines; ``convert``: row → response. The
responses ``HubClient`` reads too are ``verifiers.hub.wire``'s models, which the routers name directly,
so a reader sees at once which answers are a contract with the client.
"""

from hub_server.schemas.bodies import (
    EnvironmentUpdate,
    EvalIn,
    EvalOut,
    MemberIn,
    MemberOut,
    Scope,
    SdistEntry,
    StarOut,
    Text,
    TokenCreate,
    TokenCreated,
    TokenOut,
    YankIn,
)
from hub_server.schemas.convert import (
    env_detail,
    env_summary,
    eval_out,
    file_out,
    resolve_out,
    token_out,
    version_detail,
    version_out,
)

__all__ = [
    "EnvironmentUpdate",
    "EvalIn",
    "EvalOut",
    "MemberIn",
    "MemberOut",
    "Scope",
    "SdistEntry",
    "StarOut",
    "Text",
    "TokenCreate",
    "TokenCreated",
    "TokenOut",
    "YankIn",
    "env_detail",
    "env_summary",
    "eval_out",
    "file_out",
    "resolve_out",
    "token_out",
    "version_detail",
    "version_out",
]
