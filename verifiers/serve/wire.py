"""The HTTP API's bodies (docs/training.md, "Env server"): request and response schemas, and the two
encodings — JSON by default, msgpack when the request's ``Content-Type`` / ``Accept`` is
``application/msgpack``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifiers._extras import install_command
from verifiers.types import ReturnTokens

JSON = "application/json"
MSGPACK = "application/msgpack"
NDJSON = "application/x-ndjson"

Split = Literal["train", "eval"]

#: Bounds of one rollouts request (HTTP 422 beyond them; the ZMQ protocol answers an error): a group of
#: a million rollouts, or a million ids, would hold the server's memory and event loop. A trainer with a
#: larger batch sends several requests.
MAX_ROLLOUTS_PER_EXAMPLE = 1024
MAX_EXAMPLES_PER_REQUEST = 10_000
MAX_ROLLOUTS_PER_REQUEST = 32_768
#: Largest request body or ZMQ message: 10,000 rows of a few KiB each fit, and parsing it stays short.
MAX_BODY = 64 * 1024**2


class RolloutsRequest(BaseModel):
    """``POST /rollouts``: which examples, how many rollouts each, and which model to ask."""

    model_config = ConfigDict(extra="forbid")

    #: Example ids of ``split`` (as ``GET /dataset`` lists them), or whole rows (contract 3.2).
    example_ids: list[int] | None = Field(None, max_length=MAX_EXAMPLES_PER_REQUEST)
    rows: list[dict[str, Any]] | None = Field(None, max_length=MAX_EXAMPLES_PER_REQUEST)
    split: Split = "eval"
    rollouts_per_example: int = Field(1, ge=1, le=MAX_ROLLOUTS_PER_EXAMPLE)
    model: str
    #: The OpenAI-compatible endpoint(s) (replicas of one model), e.g. ``http://host:8000/v1``.
    base_url: str | list[str]
    #: Name of the environment variable of the *server's* process holding the API key (never the key).
    api_key_var: str | None = "OPENAI_API_KEY"
    sampling_args: dict[str, Any] = Field(default_factory=dict)
    #: A rollout whose next prompt no longer fits ends as truncated (token-level rollouts).
    max_seq_len: int | None = Field(None, ge=1)
    #: What to ask the endpoint for about tokens (``verifiers.types.ReturnTokens``); ``"both"`` gives a
    #: trainer prompt ids, completion ids and logprobs from a vLLM server.
    return_tokens: ReturnTokens = "none"
    #: Per-request HTTP client settings.
    timeout: float | None = Field(None, gt=0)
    max_retries: int = Field(3, ge=0)

    @model_validator(mode="after")
    def _one_source(self) -> RolloutsRequest:
        if (self.example_ids is None) == (self.rows is None):
            raise ValueError("give exactly one of example_ids or rows")
        total = len(self.example_ids or self.rows or []) * self.rollouts_per_example
        if total > MAX_ROLLOUTS_PER_REQUEST:
            raise ValueError(
                f"{total} rollouts in one request; at most {MAX_ROLLOUTS_PER_REQUEST} (examples × "
                "rollouts_per_example): split the batch into several requests"
            )
        return self


class DatasetPage(BaseModel):
    split: Split
    total: int
    offset: int
    rows: list[dict[str, Any]]


class ServerInfo(BaseModel):
    env_id: str
    env_version: str
    env_content_hash: str
    env_args: dict[str, Any]
    #: Rows per split (a split the environment lacks serves the other's rows, as ``Environment.rows``).
    dataset_sizes: dict[str, int]
    #: The rubric has group reward functions: rollouts of one example must be scored together.
    requires_group_scoring: bool
    workers: int
    max_concurrent: int
    #: ``--max-seq-len``: the token budget of rollouts whose request names none (``None``: unbounded).
    max_seq_len: int | None = None
    #: ``--score-rollouts`` (default) or ``--no-score-rollouts``: whether reference-protocol rollouts are scored.
    score_rollouts: bool = True
    #: Live state, for operators and tests: worker process ids, groups running, restarts after crashes.
    worker_pids: list[int] = Field(default_factory=list)
    in_flight_groups: int = 0
    worker_restarts: int = 0


def _msgpack() -> Any:
    try:
        import msgpack
    except ImportError as exc:  # the `serve` extra
        raise RuntimeError(f"msgpack bodies need the [serve] extra: {install_command('serve')}") from exc
    return msgpack


def wants_msgpack(content_type: str | None) -> bool:
    return bool(content_type) and MSGPACK in str(content_type)


def encode(value: Any, content_type: str = JSON) -> bytes:
    if content_type == MSGPACK:
        return bytes(_msgpack().packb(value, use_bin_type=True))
    return orjson.dumps(value)


def decode(body: bytes, content_type: str | None) -> Any:
    if wants_msgpack(content_type):
        return _msgpack().unpackb(body, raw=False)
    return orjson.loads(body) if body else {}


def as_dict(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)


__all__ = [
    "JSON",
    "MAX_BODY",
    "MAX_EXAMPLES_PER_REQUEST",
    "MAX_ROLLOUTS_PER_EXAMPLE",
    "MAX_ROLLOUTS_PER_REQUEST",
    "MSGPACK",
    "NDJSON",
    "DatasetPage",
    "RolloutsRequest",
    "ServerInfo",
    "Split",
    "as_dict",
    "decode",
    "encode",
    "wants_msgpack",
]
