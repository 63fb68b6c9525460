"""The SDK's data contracts (DESIGN.md 3.2–3.4) as code.

Inside the hot path rollouts are plain dicts (``State``) serialised with orjson; the pydantic models here
are the documented schema of what crosses a boundary — a ``results.jsonl`` row, ``metadata.json``, an env
server response — and are what readers validate against (``RolloutResult.model_validate(row)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from verifiers.errors import ErrorCategory

#: One chat message in OpenAI form: ``{"role": ..., "content": ..., "tool_calls"?: [...], ...}``.
ChatMessage: TypeAlias = dict[str, Any]
Messages: TypeAlias = list[ChatMessage]
#: A dataset row after normalisation (contract 3.2).
Row: TypeAlias = dict[str, Any]


class SamplingArgs(TypedDict, total=False):
    """Request parameters of a model call, as sent (the OpenAI chat/completions names).

    Server-specific parameters (vLLM's ``top_k``, ``min_p``, ``repetition_penalty``,
    ``return_token_ids`` …) go in ``extra_body``, which is merged into the request body as the ``openai``
    SDK does. Keys outside this list are still sent as they are (the type only documents the known ones).
    """

    max_tokens: int
    max_completion_tokens: int
    temperature: float
    top_p: float
    n: int
    stop: str | list[str]
    seed: int
    presence_penalty: float
    frequency_penalty: float
    logit_bias: dict[str, float]
    logprobs: bool | int
    top_logprobs: int
    reasoning_effort: str
    response_format: dict[str, Any]
    tool_choice: str | dict[str, Any]
    parallel_tool_calls: bool
    user: str
    extra_body: dict[str, Any]


MessageType = Literal["chat", "completion"]

#: What a model request asks an OpenAI-compatible (vLLM) server to return about tokens
#: (``verifiers.clients.sampling.token_request_args`` turns it into request fields):
#:
#: - ``"none"``: nothing extra (whatever the server sends anyway is still recorded);
#: - ``"token_ids"``: vLLM's ``return_token_ids`` (→ ``prompt_token_ids`` and each choice's ``token_ids``);
#: - ``"logprobs"``: ``logprobs`` with vLLM's ``return_tokens_as_token_ids`` (→ per-token logprobs whose
#:   tokens read ``token_id:<n>``; no prompt ids);
#: - ``"both"``: all three fields — prompt ids, completion ids and logprobs, what a trainer needs.
ReturnTokens = Literal["none", "token_ids", "logprobs", "both"]


class State(dict[str, Any]):
    """Everything one rollout knows, as a dict so environments and reward functions can add keys.

    Well-known keys (always present once a rollout has started): ``example_id``, ``rollout_index``,
    ``task``, ``prompt``, ``completion``, ``answer``, ``info``, ``turns``, ``trajectory``, ``usage``, ``timing``,
    ``error``, ``stop_condition``, ``is_truncated``, ``reward``, ``metrics``.
    """

    __slots__ = ()

    @property
    def errored(self) -> bool:
        return self.get("error") is not None

    def stop(self, condition: str) -> None:
        """Ask the rollout loop to end after the current step, recording why."""
        self["stop_condition"] = condition


@dataclass(slots=True)
class ModelResponse:
    """One model call's outcome, already decoded from the server's JSON."""

    #: The assistant message (chat) or ``{"role": "assistant", "content": text}`` (completions).
    message: ChatMessage
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    #: Which endpoint served it (for logs and round-robin tests).
    endpoint: str | None = None

    @property
    def text(self) -> str:
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    def turn_record(self) -> dict[str, Any]:
        """The per-call entry of a rollout's ``turns`` list (contract 3.3)."""
        return {
            "prompt_ids": self.prompt_ids,
            "completion_ids": self.completion_ids,
            "completion_logprobs": self.completion_logprobs,
            "finish_reason": self.finish_reason,
        }


# --- boundary schemas ------------------------------------------------------------------------------
class ErrorInfo(BaseModel):
    category: ErrorCategory
    type: str
    message: str


class TurnInfo(BaseModel):
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    finish_reason: str | None = None


class TrajectoryStep(BaseModel):
    """One model call of a rollout, as a trainer sees it (``RolloutResult.trajectory``).

    Lists are aligned: ``len(prompt_mask) == len(prompt_ids)``; ``completion_mask`` and (when the server
    gave them) ``completion_logprobs`` have ``len(completion_ids)`` entries. A mask entry is 1 for a token
    the loss may train on and 0 for one it must not: prompt tokens are 0, the model's sampled tokens 1.

    ``extends_previous`` says whether this call's ``prompt_ids`` start with the previous step's
    ``prompt_ids + completion_ids`` token for token (always ``False`` on the first step). When every step
    extends the last, the rollout is one **interleaved** sequence (``verifiers.trajectory.token_samples``);
    otherwise its steps are **branching** samples.

    ``is_truncated``: the completion was cut (the server stopped at ``max_tokens``, or ``max_seq_len``
    cut it); ``overlong_prompt``: the prompt alone exceeded ``max_seq_len`` (its ids are cut to it and the
    completion is empty).
    """

    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float] | None = None
    finish_reason: str | None = None
    is_truncated: bool = False
    overlong_prompt: bool = False
    extends_previous: bool = False


class TokenSample(BaseModel):
    """One training sequence made from a rollout's trajectory (``verifiers.trajectory.token_samples``):
    ``prompt_ids + completion_ids`` is the sequence, and ``completion_mask`` marks the tokens the loss
    trains on (the model's, 1) apart from the environment's tokens merged in between turns (0).
    ``completion_logprobs`` holds the inference logprob of each completion token (0.0 for environment
    tokens), or ``None`` when a merged step had none. ``steps`` lists the trajectory steps it covers."""

    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float] | None = None
    is_truncated: bool = False
    steps: list[int] = Field(default_factory=list)


class Usage(BaseModel):
    """Token usage: a client's running totals, a rollout's ``usage`` (kept in ``State`` as this model's
    dict, ``{"prompt_tokens": …, "completion_tokens": …}``, for speed) and a run's totals in metadata."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens


class TimingInfo(BaseModel):
    generation: float = 0.0
    scoring: float = 0.0
    total: float = 0.0


class RolloutResult(BaseModel):
    """One row of ``results.jsonl`` and one rollout of an env server response (contract 3.3)."""

    model_config = ConfigDict(extra="allow")

    example_id: int
    rollout_index: int
    task: str
    prompt: Messages | str
    completion: Messages | str
    answer: str
    info: dict[str, Any]
    reward: float | None
    metrics: dict[str, float]
    error: ErrorInfo | None
    stop_condition: str | None
    is_truncated: bool
    turns: list[TurnInfo]
    usage: Usage
    timing: TimingInfo
    env_id: str
    env_version: str
    #: Per model call that returned prompt and completion ids (empty otherwise, and in rows written
    #: before trajectories existed).
    trajectory: list[TrajectoryStep] = Field(default_factory=list)
    #: The rollout's advantage, when a trainer computed one (``verifiers.training``); ``None`` in evals.
    advantage: float | None = None


class RunCounts(BaseModel):
    planned: int = 0
    completed: int = 0
    scored: int = 0
    errored: dict[str, int] = Field(default_factory=dict)


RunStatus = Literal["running", "completed", "cancelled", "failed"]


class DatasetRecord(BaseModel):
    """Which data a run was evaluated on (``metadata.json``'s ``dataset``): a pinned Hugging Face dataset or a
    local file, the rows it held and a fingerprint of them, so two runs can be checked to have seen the same
    problems (``verifiers.data.benchmark``)."""

    #: The Hugging Face dataset id, or the local file's path for ``source="file"``.
    dataset: str
    source: Literal["hub", "file"] = "hub"
    #: The dataset commit loaded (``None`` for a local file).
    revision: str | None = None
    #: The dataset configs (subsets) loaded, in order (empty when the dataset has only its default).
    configs: list[str] = Field(default_factory=list)
    split: str | None = None
    #: Rows the environment took from the source (after its own selection, e.g. HLE's text-only rows).
    rows: int
    #: sha256 (hex) of those rows, each reduced to the dataset's own schema columns and written as canonical
    #: JSON, one per line, in source order: the same data gives the same value from the hub or a local copy.
    sha256: str
    #: The selection that took ``rows`` out of the source (``{"multimodal": false}``, a date window, …).
    selection: dict[str, Any] = Field(default_factory=dict)


class RunMetadata(BaseModel):
    """``metadata.json`` of a run directory (contract 3.4); rewritten as the run progresses."""

    env_id: str
    env_version: str
    env_content_hash: str
    sdk_version: str
    #: Unique per run directory, kept across resumes (the hub keys an uploaded run by it). ``None`` in
    #: directories written before it existed.
    run_id: str | None = None
    env_args: dict[str, Any] = Field(default_factory=dict)
    model: str
    base_url: str | list[str]
    #: What the requests sent (see ``run_eval``); per environment of a group when they differ.
    sampling_args: dict[str, Any] = Field(default_factory=dict)
    sampling_args_by_env: dict[str, dict[str, Any]] = Field(default_factory=dict)
    num_examples: int
    rollouts_per_example: int
    seed: int | None = None
    shuffle: bool = False
    started_at: str
    finished_at: str | None = None
    status: RunStatus = "running"
    counts: RunCounts = Field(default_factory=RunCounts)
    avg_reward: float | None = None
    std_reward: float | None = None
    avg_metrics: dict[str, float] = Field(default_factory=dict)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    #: Metrics defined over the whole run rather than averaged per rollout (HLE's calibration error), by the
    #: rubric's run-level metrics (``Rubric.add_run_metric``); a metric without enough rollouts is absent.
    run_metrics: dict[str, float] = Field(default_factory=dict)
    #: The data the run was evaluated on, for environments whose data is pinned (``verifiers.data.benchmark``).
    dataset: DatasetRecord | None = None
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)


__all__ = [
    "ChatMessage",
    "DatasetRecord",
    "ErrorInfo",
    "MessageType",
    "Messages",
    "ModelResponse",
    "ReturnTokens",
    "RolloutResult",
    "Row",
    "RunCounts",
    "RunMetadata",
    "RunStatus",
    "SamplingArgs",
    "State",
    "TimingInfo",
    "TokenSample",
    "TrajectoryStep",
    "TurnInfo",
    "Usage",
]
