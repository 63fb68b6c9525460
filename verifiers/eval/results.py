"""A run directory on disk: ``results.jsonl`` (one rollout per line) and ``metadata.json``.

Crash safety: each finished group is appended with a single ``write`` of whole lines, and metadata is
replaced atomically (write to a temporary file, then rename). A process killed mid-write can leave at
most one partial last line, which ``load_results`` cuts off before a resume appends again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from verifiers.types import RunMetadata

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"
_DUMP_OPTS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _default(obj: Any) -> Any:
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def utc_now() -> str:
    """A timestamp for ``started_at`` / ``finished_at``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def unique_records(records: Iterable[Mapping[str, Any]]) -> dict[tuple[int, int], Mapping[str, Any]]:
    """Records by (example_id, rollout_index), keeping the first of each pair: a duplicate would be a bug,
    and it must never be counted twice."""
    out: dict[tuple[int, int], Mapping[str, Any]] = {}
    for rec in records:
        out.setdefault((int(rec["example_id"]), int(rec["rollout_index"])), rec)
    return out


def dump_record(record: Mapping[str, Any]) -> bytes:
    """One results line (with its newline)."""
    return orjson.dumps(record, default=_default, option=_DUMP_OPTS)


class RunDirectory:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.results_path = self.path / RESULTS_FILE
        self.metadata_path = self.path / METADATA_FILE
        self._fd: int | None = None

    def has_results(self) -> bool:
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def read_metadata(self) -> RunMetadata | None:
        if not self.metadata_path.exists():
            return None
        return RunMetadata.model_validate_json(self.metadata_path.read_bytes())

    def write_metadata(self, meta: RunMetadata, *, durable: bool = False) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.metadata_path.with_name(f".{METADATA_FILE}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(meta.model_dump_json(indent=2))
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, self.metadata_path)

    def load_results(self, *, repair: bool = True) -> list[dict[str, Any]]:
        """Every complete result line. With ``repair``, a trailing partial line (a killed writer) is cut off
        the file so later appends start on a line boundary."""
        if not self.results_path.exists():
            return []
        data = self.results_path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data) and repair:
            with open(self.results_path, "r+b") as f:
                f.truncate(end)
        records: list[dict[str, Any]] = []
        for lineno, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{self.results_path}:{lineno} is not valid JSON ({exc})") from None
        return records

    def open_for_append(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        assert self._fd is not None, "open_for_append() first"
        data = b"".join(dump_record(r) for r in records)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self, *, durable: bool = False) -> None:
        if self._fd is not None:
            if durable:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
