"""What crosses between the hub and its clients, defined once and imported by both sides.

- the JSON bodies of ``/api/v1`` that clients read: the hub declares these classes as its response models
  and ``HubClient`` parses with them, so the two cannot drift apart;
- the error form: ``{"detail": ...}`` bodies, and ``HubClientError`` for a refused or failed request;
- the client config file, which ``vf-hub login`` writes (``vf-hub logout`` removes its token) and
  ``HubClient`` reads.

Models ignore unknown fields, so a newer hub may add some without breaking older clients;
``tests/hub/test_wire_contract.py`` checks that real hub responses round-trip through them unchanged.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
import tomli_w
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

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


class ReadGrantInfo(WireModel):
    """One user a private environment is shared with (``vf-hub env share``): it may read and install it."""

    environment: str
    username: str
    granted_by: str | None
    created_at: datetime


# --- eval runs: uploaded as records (request bodies and answers) ------------------------------------------
#: Longest text the hub keeps per message field (content, reasoning, a tool call's arguments), in characters.
#: The client cuts longer text to this, ending in ``TRUNCATION_MARK``; the hub refuses anything longer.
MESSAGE_TEXT_LIMIT = 8192
TRUNCATION_MARK = " … [truncated]"
#: Most messages kept per prompt or completion (the client keeps the first and the last ones).
MESSAGES_LIMIT = 256
#: Most rollouts in one upload chunk (the request body is capped at 1 MiB as well).
CHUNK_LIMIT = 500
#: Rewards are weighted sums of reward functions, so not always in [0, 1]; beyond this they are bugs.
REWARD_LIMIT = 1e6
ErrorCategoryName = Literal["model", "infra", "env", "scoring"]
LeaderboardPick = Literal["best", "latest"]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


def _sane(value: float) -> float:
    if abs(value) > REWARD_LIMIT:
        raise ValueError(f"must be within ±{REWARD_LIMIT:g}")
    return value


Str = Annotated[str, AfterValidator(_no_nul)]
MessageText = Annotated[str, Field(max_length=MESSAGE_TEXT_LIMIT), AfterValidator(_no_nul)]
Score = Annotated[float, Field(allow_inf_nan=False), AfterValidator(_sane)]


class WireRequest(BaseModel):
    """A request body: unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCallRecord(WireRequest):
    id: Annotated[Str, Field(max_length=200)] = ""
    name: Annotated[Str, Field(max_length=200)] = ""
    arguments: MessageText = ""


class MessageRecord(WireRequest):
    """A chat message as the hub keeps it: text fields cut to ``MESSAGE_TEXT_LIMIT``."""

    role: Annotated[Str, Field(max_length=32)]
    content: MessageText | None = None
    reasoning_content: MessageText | None = None
    tool_calls: list[ToolCallRecord] = Field(default_factory=list, max_length=64)
    tool_call_id: Annotated[Str, Field(max_length=200)] | None = None
    name: Annotated[Str, Field(max_length=200)] | None = None


Conversation = Annotated[list[MessageRecord], Field(max_length=MESSAGES_LIMIT)] | MessageText


class ErrorRecord(WireRequest):
    category: ErrorCategoryName
    type: Annotated[Str, Field(max_length=200)]
    message: MessageText


class RolloutUsage(WireRequest):
    prompt_tokens: int = Field(default=0, ge=0, le=10**12)
    completion_tokens: int = Field(default=0, ge=0, le=10**12)


class RolloutTiming(WireRequest):
    generation: float = Field(default=0.0, ge=0, le=10**7, allow_inf_nan=False)
    scoring: float = Field(default=0.0, ge=0, le=10**7, allow_inf_nan=False)
    total: float = Field(default=0.0, ge=0, le=10**7, allow_inf_nan=False)


class RolloutRecord(WireRequest):
    """One rollout of an uploaded run (contract 3.3 without token ids; text may be truncated)."""

    example_id: int = Field(ge=0, le=2**31 - 1)
    rollout_index: int = Field(ge=0, le=10**6)
    task: Annotated[Str, Field(max_length=200)] = ""
    prompt: Conversation = ""
    completion: Conversation = ""
    answer: MessageText = ""
    reward: Score | None = None
    metrics: dict[Annotated[Str, Field(max_length=100)], Score] = Field(default_factory=dict, max_length=64)
    error: ErrorRecord | None = None
    stop_condition: Annotated[Str, Field(max_length=200)] | None = None
    is_truncated: bool = False
    usage: RolloutUsage = Field(default_factory=RolloutUsage)
    timing: RolloutTiming = Field(default_factory=RolloutTiming)


class EvalRunCreate(WireRequest):
    """Start (or resume) the upload of a run. ``run_key`` is the client's id for the run: creating a run
    with the same key again answers the run already there, so an interrupted upload resumes."""

    run_key: str = Field(pattern=r"^[A-Za-z0-9_-]{8,64}$")
    version: Annotated[Str, Field(min_length=1, max_length=100)]
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    model: Annotated[Str, Field(min_length=1, max_length=200)]
    sampling_args: dict[str, Any] = Field(default_factory=dict, max_length=64)
    env_args: dict[str, Any] = Field(default_factory=dict, max_length=64)
    sdk_version: Annotated[Str, Field(max_length=64)] = ""
    num_examples: int = Field(ge=0, le=10**9)
    rollouts_per_example: int = Field(ge=1, le=10**6)
    #: The examples are a shuffled selection of the dataset (``vf-eval --shuffle``): their ids are dataset
    #: positions, any of them, at most ``num_examples`` distinct; otherwise ids are 0 .. num_examples - 1.
    shuffle: bool = False
    visibility: Visibility = "private"
    started_at: datetime | None = None
    finished_at: datetime | None = None


class EvalRunUpdate(WireRequest):
    """A change to an uploaded run: its visibility (public runs are on the leaderboard; private ones are
    seen only by those who may read the owner's private environments)."""

    visibility: Visibility


class RolloutChunk(WireRequest):
    rollouts: list[RolloutRecord] = Field(min_length=1, max_length=CHUNK_LIMIT)


class ChunkReceipt(WireModel):
    """``stored`` new rollouts, ``duplicates`` already there (same example and index), ``total`` now."""

    stored: int
    duplicates: int
    total: int


class RolloutKeys(WireModel):
    """The (example_id, rollout_index) pairs the hub already holds for a run (to resume an upload)."""

    keys: list[tuple[int, int]]


class EvalRunInfo(WireModel):
    id: int
    environment: str
    version: str
    content_hash: str
    model: str
    sampling_args: dict[str, Any]
    env_args: dict[str, Any]
    sdk_version: str
    visibility: Visibility
    status: Literal["uploading", "complete"]
    num_examples: int
    rollouts_per_example: int
    started_at: datetime | None
    finished_at: datetime | None
    uploader: str | None
    created_at: datetime
    finalized_at: datetime | None
    rollout_count: int
    scored_count: int
    avg_reward: float | None
    std_reward: float | None = Field(description="Standard deviation of the rewards (population).")
    reward_ci95: float | None = Field(
        description="Deprecated, kept for older clients: half-width of the normal-approximation interval. "
        "The interval shown everywhere is reward_ci_low..reward_ci_high."
    )
    reward_ci_low: float | None = Field(
        default=None,
        description="Lower end of the 95% interval of avg_reward (verifiers.hub.wire.reward_interval: "
        "Wilson's for a mean in [0, 1], the normal approximation otherwise).",
    )
    reward_ci_high: float | None = Field(default=None, description="Upper end of that interval.")
    pass_at_k: dict[str, float]
    avg_metrics: dict[str, float]
    error_counts: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    url: str = Field(description="The run's web page, relative to the hub root.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What makes the run's score say little, by code (RUN_WARNINGS): e.g. no_tool_calls.",
    )


class EvalRunPage(WireModel):
    items: list[EvalRunInfo]
    total: int
    page: int
    per_page: int


class StoredRollout(WireModel):
    """A rollout as the hub answers it (what was uploaded)."""

    example_id: int
    rollout_index: int
    task: str
    prompt: list[dict[str, Any]] | str
    completion: list[dict[str, Any]] | str
    answer: str
    reward: float | None
    metrics: dict[str, float]
    error: dict[str, Any] | None
    stop_condition: str | None
    is_truncated: bool
    usage: dict[str, int]
    timing: dict[str, float]


class RolloutPage(WireModel):
    items: list[StoredRollout]
    total: int
    page: int
    per_page: int


class LeaderboardEntry(WireModel):
    model: str
    version: str
    run_id: int
    avg_reward: float | None
    reward_ci95: float | None = Field(
        description="Deprecated, kept for older clients: half-width of the normal-approximation interval."
    )
    reward_ci_low: float | None = Field(
        default=None,
        description="Lower end of the 95% interval of avg_reward (verifiers.hub.wire.reward_interval: "
        "Wilson's for a mean in [0, 1], the normal approximation otherwise).",
    )
    reward_ci_high: float | None = Field(default=None, description="Upper end of that interval.")
    reward_lower: float | None = Field(
        default=None,
        description="What entries are ranked by: reward_ci_low (kept under this name for older clients); "
        "null ranks last.",
    )
    pass_at_k: dict[str, float]
    rollout_count: int
    scored_count: int = 0
    date: datetime
    uploader: str | None
    warnings: list[str] = Field(default_factory=list, description="The run's warnings (RUN_WARNINGS codes).")


#: How the hub ranks leaderboard entries, as the pages and ``vf-hub info`` say it.
LEADERBOARD_RANKING = (
    "ranked by the lower end of the 95% interval of the mean reward (Wilson score interval, which treats "
    "rewards as lying in [0, 1]), so a run with few rollouts ranks low even when all of them scored"
)


class Leaderboard(WireModel):
    environment: str
    pick: LeaderboardPick
    entries: list[LeaderboardEntry]


# pass@k as every side reports it (run metadata, the hub's aggregates, the local viewer): one definition.
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate for one problem with ``n`` samples of which ``c`` are correct:
    ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021), computed as a stable product."""
    if k < 1 or n < k:
        raise ValueError(f"pass@k needs 1 <= k <= n (n={n}, k={k})")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


# The 95% interval of a mean reward as every side shows it (vf-eval's summary, push, vf-hub, the hub's pages,
# the leaderboard's ranking, a suite's table): one definition.
#: z for a two-sided 95% normal interval.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class RewardInterval:
    """A 95% interval of a mean reward: ``low``..``high`` and how it was computed."""

    low: float
    high: float
    #: ``"wilson"`` (the Wilson score interval: the mean lies in [0, 1]) or ``"normal"`` (another scale).
    method: Literal["wilson", "normal"]

    def text(self, digits: int = 3) -> str:
        return ci_text(self.low, self.high, digits)


def ci_text(low: float, high: float, digits: int = 3) -> str:
    """``95% CI [0.566, 1.000]``: an interval as every side shows it — labelled, never a bare ``±``."""
    return f"95% CI [{low:.{digits}f}, {high:.{digits}f}]"


def wilson_interval(mean: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a mean ``mean`` of ``n`` rewards in [0, 1].

    It takes the largest variance a reward in [0, 1] with that mean can have (a pass/fail reward's), so it
    stays honest where the sample's own spread says nothing: five rollouts at 1.0 get [0.566, 1], where a
    normal interval would have a width of 0."""
    if n < 1:
        raise ValueError(f"a Wilson interval needs at least one reward (n={n})")
    p = min(1.0, max(0.0, mean))
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    scale = 1 + z2 / n
    return max(0.0, (centre - margin) / scale), min(1.0, (centre + margin) / scale)


def reward_interval(mean: float | None, n: int, sd: float | None) -> RewardInterval | None:
    """The 95% interval of a mean reward over ``n`` scored rollouts whose (population) standard deviation
    is ``sd``: Wilson's when the mean lies in [0, 1] (rewards are taken to lie there), the normal
    approximation ``mean ± z·sd/√(n-1)`` otherwise. None without scored rollouts, or with a single
    rollout on another scale (no spread to go by)."""
    if mean is None or n < 1:
        return None
    if 0.0 <= mean <= 1.0:
        return RewardInterval(*wilson_interval(mean, n), "wilson")
    if sd is None or n < 2:
        return None
    half = Z95 * sd / math.sqrt(n - 1)
    return RewardInterval(mean - half, mean + half, "normal")


#: Why a run's score may say little about the environment, by the code runs and board entries carry.
RUN_WARNINGS: dict[str, str] = {
    "no_tool_calls": "the model never called a tool of this tool environment (vf-eval warned when the model "
    "could not call tools): its score says little about the environment",
}


def run_warnings(avg_metrics: Mapping[str, float], scored_count: int) -> list[str]:
    """The ``RUN_WARNINGS`` codes a run's own numbers show: ``no_tool_calls`` when a tool environment's
    rollouts (they count ``tool_calls``) were scored and not one called a tool."""
    out = []
    if scored_count > 0 and avg_metrics.get("tool_calls") == 0.0:
        out.append("no_tool_calls")
    return out


def interval_fields(mean: float | None, n: int, sd: float | None) -> dict[str, float | None]:
    """``reward_ci_low`` and ``reward_ci_high`` of an API body (``EvalRunInfo``, ``LeaderboardEntry``)."""
    interval = reward_interval(mean, n, sd)
    return {
        "reward_ci_low": interval.low if interval else None,
        "reward_ci_high": interval.high if interval else None,
    }


def describe_reward(mean: float | None, n: int, sd: float | None, digits: int = 3) -> str:
    """``mean 0.875, 95% CI [0.529, 0.978], sd 0.331``: the reward of a run, every number labelled."""
    if mean is None:
        return "mean –"
    parts = [f"mean {mean:.{digits}f}"]
    interval = reward_interval(mean, n, sd)
    if interval is not None:
        parts.append(interval.text(digits))
    if sd is not None:
        parts.append(f"sd {sd:.{digits}f}")
    return ", ".join(parts)


def ks_for(n: int) -> list[int]:
    """The k values reported for ``n`` rollouts per example: powers of two up to n, and n itself."""
    ks = [2**i for i in range(int(math.log2(n)) + 1)] if n >= 1 else []
    if n >= 1 and ks[-1] != n:
        ks.append(n)
    return ks


SmokeOutcome = Literal["passed", "failed", "skipped"]


class SmokeReport(WireModel):
    """The outcome of one smoke check of an environment wheel (``vf-smoke WHEEL --json`` prints it; the hub
    runs that command on every publish and stores it): install, ``load_environment()``, one rollout."""

    status: SmokeOutcome
    reason: str = ""
    log: str = ""
    duration_s: float = 0.0
    backend: str | None = None


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


def forget_token() -> tuple[Path, bool]:
    """Remove the stored token from the config file (the URL stays, as the default hub); returns the file
    and whether a token was there."""
    path = config_path()
    stored = load_config_file()
    if "token" not in stored:
        return path, False
    if "url" in stored:
        _write_config(path, {"url": stored["url"]})
    else:
        path.unlink(missing_ok=True)
    return path, True


def save_config(url: str, token: str) -> Path:
    """Write URL and token to the config file, readable by the user only (written atomically)."""
    path = config_path()
    _write_config(path, {"url": clean_url(url), "token": token})
    return path


def _write_config(path: Path, data: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            tomli_w.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
