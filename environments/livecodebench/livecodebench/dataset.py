"""LiveCodeBench's problems: ``livecodebench/code_generation_lite`` at a pinned revision, or a local file in
the same schema, cut to a contest-date window.

**Releases.** The dataset's loading script (``code_generation_lite.py``) picks files by ``version_tag``: the
repository holds one JSON-lines file per release's new problems (``test.jsonl`` for v1, ``test2.jsonl`` …
``test6.jsonl``), ``release_vN`` is the union of the first N, ``release_latest`` the union of all, ``vN`` the
N-th file alone and ``vA_vB`` the files A…B. Recent ``datasets`` versions no longer run loading scripts, so
the files are read directly (``datasets``' ``json`` builder) from the pinned commit. Row counts per release
are those LiveCodeBench's README gives (release_v6: 1,055 problems); the default source is checked
against them, and the default window (2024-08-01 – 2025-05-01, INTELLECT-3's and the LiveCodeBench v6
leaderboard's) against its 454 problems.

**Schema** (every field a string): ``question_title``, ``question_content``, ``platform`` (``leetcode``,
``atcoder``, ``codeforces``), ``question_id``, ``contest_id``, ``contest_date`` (ISO 8601), ``starter_code``
(empty for stdin/stdout problems), ``difficulty`` (``easy``, ``medium``, ``hard``), ``public_test_cases``,
``private_test_cases`` (see ``livecodebench.cases``) and ``metadata`` (JSON; ``func_name`` for LeetCode).

**Window.** A problem is kept when ``start_date <= contest_date <= end_date``, comparing date-times with the
bounds at midnight, as LiveCodeBench's runner does; ``None`` drops a bound.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

import verifiers as vf
from verifiers.types import DatasetRecord

DATASET = "livecodebench/code_generation_lite"
#: The dataset's commit on the Hugging Face Hub: release_v6 (test.jsonl … test6.jsonl) is complete there.
REVISION = "0fe84c3912ea0c4d4a78037083943e8f0c4dd505"
LATEST_VERSION = 6
#: Problems in ``release_vN`` (cumulative), from LiveCodeBench's README.
RELEASE_TOTALS: dict[int, int] = {1: 400, 2: 511, 3: 612, 4: 713, 5: 880, 6: 1055}
DEFAULT_RELEASE = "release_v6"
DEFAULT_START = "2024-08-01"
DEFAULT_END = "2025-05-01"
#: Problems of release_v6 in the default window (the count the v6 leaderboard and INTELLECT-3 report).
DEFAULT_WINDOW_ROWS = 454
FIELDS = (
    "question_title", "question_content", "platform", "question_id", "contest_id", "contest_date",
    "starter_code", "difficulty", "public_test_cases", "private_test_cases", "metadata",
)  # fmt: skip
HUB_INSTALL_HINT = "pip install 'livecodebench[hub]'"
#: ``source="sample"``: three problems written for this package (none is LiveCodeBench's) in the dataset's
#: schema and encoding, dated inside the default window: offline checks (vf-smoke, the hub's publish check).
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}

_RELEASE = re.compile(r"release_v(\d+)|release_latest|v(\d+)(?:_v(\d+))?")


# --- releases --------------------------------------------------------------------------------------
def release_versions(release: str) -> list[int]:
    """The versions (1 … 6) whose files make up ``release`` (``release_vN``, ``release_latest``, ``vN``,
    ``vA_vB``)."""
    match = _RELEASE.fullmatch(release)
    if match is None:
        raise ValueError(
            f"release must be release_v1 … release_v{LATEST_VERSION}, release_latest, vN or vA_vB, not {release!r}"
        )
    cumulative, first, last = match.groups()
    if release == "release_latest":
        versions = list(range(1, LATEST_VERSION + 1))
    elif cumulative is not None:
        versions = list(range(1, int(cumulative) + 1))
    else:
        versions = list(range(int(first), int(last or first) + 1))
    if not versions or versions[0] < 1 or versions[-1] > LATEST_VERSION:
        raise ValueError(f"release {release!r} names versions outside 1 … {LATEST_VERSION}")
    return versions


def release_files(release: str) -> list[str]:
    """The dataset's files that hold ``release``."""
    return ["test.jsonl" if v == 1 else f"test{v}.jsonl" for v in release_versions(release)]


def release_rows(release: str) -> int:
    """How many problems ``release`` has (from the per-release totals)."""
    versions = release_versions(release)
    return RELEASE_TOTALS[versions[-1]] - RELEASE_TOTALS.get(versions[0] - 1, 0)


def hub_data_files(release: str, revision: str = REVISION) -> list[str]:
    """The release's files at ``revision``, as ``hf://`` paths ``datasets`` reads."""
    return [f"hf://datasets/{DATASET}@{revision}/{name}" for name in release_files(release)]


def load_json_files(files: list[str]) -> Any:
    """JSON-lines files (``hf://`` paths or local ones) as one ``datasets.Dataset``."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(f"loading {DATASET} needs the `datasets` package: {HUB_INSTALL_HINT}") from exc
    return datasets.load_dataset("json", data_files=files, split="train")


# --- the window ------------------------------------------------------------------------------------
def _bound(value: str | date | None, name: str) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return datetime.strptime(str(value), "%Y-%m-%d").date()
    except ValueError:
        raise ValueError(
            f"{name} must be a date as YYYY-MM-DD (or null for no bound), not {value!r}"
        ) from None


def contest_datetime(value: Any) -> datetime:
    """A ``contest_date`` as a naive UTC date-time: ISO text (local files) or a timestamp (``datasets``
    infers one from the JSON files)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        raise ValueError(f"contest_date must be an ISO 8601 date-time, not {value!r}")
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


@dataclass(frozen=True)
class Window:
    """The contest dates a run covers (both ends included; ``None``: unbounded)."""

    start: date | None
    end: date | None

    @classmethod
    def parse(cls, start_date: str | date | None, end_date: str | date | None) -> Window:
        window = cls(_bound(start_date, "start_date"), _bound(end_date, "end_date"))
        if window.start and window.end and window.start > window.end:
            raise ValueError(f"start_date {window.start} is after end_date {window.end}")
        return window

    def contains(self, when: datetime) -> bool:
        if self.start is not None and when < datetime(self.start.year, self.start.month, self.start.day):
            return False
        return self.end is None or when <= datetime(self.end.year, self.end.month, self.end.day)

    def as_info(self) -> dict[str, str | None]:
        """What every result records: ``{"start_date", "end_date"}`` (ISO dates, ``None`` when open)."""
        return {
            "start_date": self.start.isoformat() if self.start else None,
            "end_date": self.end.isoformat() if self.end else None,
        }

    def __str__(self) -> str:
        return f"{self.start or '…'} – {self.end or '…'}"


# --- the schema ------------------------------------------------------------------------------------
class Problem(BaseModel):
    """One row of ``code_generation_lite`` (unknown extra fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    question_title: str
    question_content: str
    platform: Literal["leetcode", "codeforces", "atcoder"]
    question_id: str
    contest_id: str
    contest_date: datetime
    starter_code: str = ""
    difficulty: Literal["easy", "medium", "hard"]
    public_test_cases: str
    private_test_cases: str
    metadata: str = "{}"

    @field_validator("question_id", "contest_id", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    @field_validator("contest_date", mode="before")
    @classmethod
    def _date(cls, value: Any) -> datetime:
        return contest_datetime(value)

    @field_validator("starter_code", "metadata", mode="before")
    @classmethod
    def _empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @cached_property
    def func_name(self) -> str | None:
        """The LeetCode method the functional tests call (``metadata.func_name``), or ``None``."""
        try:
            meta = json.loads(self.metadata or "{}")
        except ValueError:
            raise ValueError(f"metadata is not JSON: {self.metadata[:80]!r}") from None
        name = meta.get("func_name") if isinstance(meta, dict) else None
        return str(name) if name else None


def row_label(index: int, question_id: Any) -> str:
    """How errors name a row: its position in the source and its question id."""
    return f"livecodebench row {index} (question_id {question_id!r})"


def parse_problem(record: Mapping[str, Any], index: int) -> Problem:
    """A source record as a ``Problem``; a record that does not fit the schema is an error naming it."""
    try:
        problem = Problem.model_validate(dict(record))
        problem.func_name  # noqa: B018 - checked now: a broken metadata field is the row's error
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "record"
        raise ValueError(
            f"{row_label(index, record.get('question_id'))}: {field}: {first['msg']} "
            f"(the fields are those of {DATASET})"
        ) from None
    except ValueError as exc:
        raise ValueError(f"{row_label(index, record.get('question_id'))}: {exc}") from None
    return problem


# --- a source --------------------------------------------------------------------------------------
class ProblemSource:
    """The records of one source, read once, and the positions of the window's problems in it.

    ``source`` ``None`` is ``DATASET`` at ``revision`` (``release``'s files), ``"sample"`` the bundled
    problems (``SAMPLES``), else a local ``.jsonl``, ``.json`` or ``.parquet`` file in the dataset's schema
    (``release`` and ``revision`` then do not apply).
    Nothing is read until ``records`` or ``indices`` is first used.
    """

    def __init__(self, source: str | None, *, release: str, revision: str, window: Window) -> None:
        release_versions(release)  # a bad release name fails at load time
        if source in SAMPLES:
            source = str(SAMPLES[source])
        elif source is not None and vf.data.local_path(source) is None:
            raise ValueError(
                f"source must be null (the {DATASET} dataset), 'sample' or the path of an existing .jsonl, "
                f".json or .parquet file in its schema, not {source!r}"
            )
        self.source = source
        self.release = release
        self.revision = revision
        self.window = window

    @property
    def from_hub(self) -> bool:
        return self.source is None

    def describe(self) -> str:
        return f"{DATASET}@{self.revision[:7]} {self.release}" if self.from_hub else str(self.source)

    @cached_property
    def records(self) -> Any:
        """Every record of the source (a ``datasets.Dataset`` for the hub, a list for a local file)."""
        if self.source is None:
            records = load_json_files(hub_data_files(self.release, self.revision))
            if self.revision == REVISION:
                self._check_count("rows", len(records), release_rows(self.release))
            return records
        return vf.data.read_records(self.source, install_hint="pip install pyarrow")

    @cached_property
    def indices(self) -> list[int]:
        """Positions of the window's problems in ``records``, in source order."""
        dates = vf.data.column(self.records, "contest_date")
        kept: list[int] = []
        for i, value in enumerate(dates):
            try:
                when = contest_datetime(value)
            except ValueError as exc:
                raise ValueError(f"{row_label(i, None)}: contest_date: {exc}") from None
            if self.window.contains(when):
                kept.append(i)
        if not kept:
            raise ValueError(f"{self.describe()}: no problem has a contest_date in the window {self.window}")
        pinned = self.from_hub and self.revision == REVISION and self.release == DEFAULT_RELEASE
        if pinned and self.window == Window.parse(DEFAULT_START, DEFAULT_END):
            self._check_count(f"problems in the window {self.window}", len(kept), DEFAULT_WINDOW_ROWS)
        return kept

    def _check_count(self, what: str, got: int, expected: int) -> None:
        if got != expected:
            raise ValueError(
                f"{self.describe()}: expected {expected} {what}, got {got}: the download is incomplete or "
                "the dataset changed (pin another revision, or pass source= a file)"
            )

    @cached_property
    def positions(self) -> dict[str, int]:
        """``question_id`` → position in ``records``, over the window's problems."""
        ids = vf.data.column(self.records, "question_id")
        found: dict[str, int] = {}
        for i in self.indices:
            qid = str(ids[i])
            if qid in found:
                raise ValueError(f"{row_label(i, qid)}: the question_id of row {found[qid]} again")
            found[qid] = i
        return found

    def problem(self, index: int) -> Problem:
        return parse_problem(self.records[index], index)

    def find(self, question_id: str) -> tuple[int, Problem]:
        """The position and problem of ``question_id`` (one of the window's)."""
        index = self.positions.get(str(question_id))
        if index is None:
            raise vf.errors.EnvError(
                f"question_id {question_id!r} is not among this environment's problems ({self.describe()}, "
                f"window {self.window}); score a saved run with the source and window it was made with"
            )
        return index, self.problem(index)

    def rows_sha256(self) -> str:
        """sha256 of the window's rows, each as canonical JSON of the schema's fields (``contest_date`` in
        ISO form), one per line in source order: two runs with the same digest saw the same problems and
        tests."""
        digest = hashlib.sha256()
        for i in self.indices:
            record = self.records[i]
            fields = {k: record.get(k) for k in FIELDS}
            fields["contest_date"] = contest_datetime(fields["contest_date"]).isoformat()
            digest.update(json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode())
            digest.update(b"\n")
        return digest.hexdigest()

    def record(self) -> DatasetRecord:
        """What a run records about its data (``metadata.json``'s ``dataset``): the dataset and revision
        (or the file), the release, the window as the selection, the window's row count and their sha256."""
        return DatasetRecord(
            dataset=DATASET if self.from_hub else str(self.source),
            source="hub" if self.from_hub else "file",
            revision=self.revision if self.from_hub else None,
            configs=[self.release] if self.from_hub else [],
            split="test" if self.from_hub else None,
            rows=len(self.indices),
            sha256=self.rows_sha256(),
            selection={**self.window.as_info(), "source_rows": len(self.records)},
        )
