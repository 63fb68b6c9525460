"""A run directory on disk: ``results.jsonl`` (one rollout per line), ``metadata.json`` and ``.lock``.

Crash safety: each finished group is appended with a single ``write`` of whole lines, and metadata is
replaced atomically (write to a temporary file, then rename). A process killed mid-write can leave at
most one partial last line, which ``load_results`` cuts off before a resume appends again.

One writer: a run holds an exclusive ``flock`` on ``.lock`` for its whole life (the file records the
holder's pid); a second run on the same directory fails at once (``RunDirectoryBusyError``). The kernel
drops the lock of a killed process, so a stale ``.lock`` file never blocks.

Values: every value JSON can hold is written exactly (integers of any size too). Values it cannot hold
are converted by one rule, ``to_json_value`` (docs/core.md, "Results files"); a record that still cannot
be written raises ``UnwritableRecordError`` (the run records that rollout with an ``env`` error).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from verifiers.hub import env_args
from verifiers.types import RunMetadata

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"
LOCK_FILE = ".lock"
# Fast path: plain JSON values only; dataclasses and datetimes go to the rule like any other object.
_FAST_OPTS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
# orjson reads integers beyond 64 bits as floats: lines with such a digit run are read by the stdlib.
_LONG_DIGITS = re.compile(rb"\d{19}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnwritableRecordError(ValueError):
    """A value that even the conversion rule cannot turn into JSON (a cycle, a ``__str__`` that raises)."""


class RunDirectoryBusyError(RuntimeError):
    """Another live run (another process, or another run in this one) holds the run directory."""


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _text(key)
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(_value(key))  # null / true / 1 / 1.5, as JSON writes the value
    return _text(str(key))


def _text(s: str) -> str:
    # Lone surrogates are not Unicode (UTF-8 cannot hold them): each becomes U+FFFD.
    return s if s.isascii() else _SURROGATE.sub("\ufffd", s)


def _value(v: Any) -> Any:
    if v is None or v is True or v is False:
        return v
    if isinstance(v, enum.Enum):
        return _value(v.value)
    if isinstance(v, str):
        return _text(str.__str__(v))
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, Mapping):
        return {_key(k): _value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    if isinstance(v, set | frozenset):
        items = [_value(x) for x in v]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))  # deterministic files
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).decode("utf-8", "replace")
    tolist = getattr(v, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return _value(tolist())
    return _text(str(v))


def to_json_value(value: Any) -> Any:
    """``value`` made of JSON types only, by the one conversion rule (applied recursively):

    - JSON values stay as they are (integers of any size; subclasses of str/int/float/dict/list count as
      those types); strings lose lone surrogates (each becomes U+FFFD);
    - NaN and ±infinity become ``null``;
    - tuples become arrays; sets and frozensets become arrays sorted by their items' JSON text;
    - bytes become text decoded as UTF-8 (invalid bytes as U+FFFD);
    - dict keys become strings: ``None``/bools/numbers as JSON writes them (``"null"``, ``"true"``,
      ``"1"``, ``"1.5"``), any other key as ``str(key)``;
    - enum members become their value; objects with ``tolist()`` (numpy) become that;
    - anything else becomes ``str(value)``.
    Raises ``UnwritableRecordError`` when even that fails (a cycle, a ``__str__`` that raises)."""
    try:
        return _value(value)
    except RecursionError:
        raise UnwritableRecordError("the value is nested too deeply or refers to itself") from None
    except Exception as exc:
        raise UnwritableRecordError(f"{type(exc).__name__}: {exc}") from None


def dumps_json(value: Any, *, newline: bool = False) -> bytes:
    """``value`` as JSON bytes under the conversion rule: orjson when it can, the stdlib (exact big
    integers) when it cannot."""
    try:
        data = orjson.dumps(value, option=_FAST_OPTS)
        return data if newline else data[:-1]
    except TypeError:  # orjson.JSONEncodeError too: a value for the rule, or an int beyond 64 bits
        pass
    converted = to_json_value(value)
    try:
        text = json.dumps(converted, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnwritableRecordError(f"{type(exc).__name__}: {exc}") from None
    return text.encode() + (b"\n" if newline else b"")


def loads_json(data: bytes | str) -> Any:
    """JSON text as Python data, integers exact at any size."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw):
        return json.loads(raw)
    return orjson.loads(raw)


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
    """One results line (with its newline); raises ``UnwritableRecordError``."""
    return dumps_json(record, newline=True)


def encode_record(record: Mapping[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The record as a reader will get it back, and its line. Plain JSON records are returned as they
    are; others converted (``to_json_value``). Raises ``UnwritableRecordError``."""
    try:
        return dict(record), orjson.dumps(record, option=_FAST_OPTS)
    except TypeError:
        pass
    converted = to_json_value(record)
    return converted, dumps_json(converted, newline=True)


class RunDirectory:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.results_path = self.path / RESULTS_FILE
        self.metadata_path = self.path / METADATA_FILE
        self.lock_path = self.path / LOCK_FILE
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._env_args_cache: tuple[int, dict[str, Any], dict[str, Any]] | None = None

    # --- the one-writer lock -----------------------------------------------------------------------
    def holder_pid(self) -> int | None:
        """The pid recorded by the last run that took the lock (alive or not)."""
        try:
            return int(self.lock_path.read_text().strip() or "x")
        except (OSError, ValueError):
            return None

    def lock(self) -> None:
        """Take the directory's exclusive lock (creating the directory), or raise
        ``RunDirectoryBusyError`` naming the holder's pid. Held until ``unlock()`` or process exit."""
        if self._lock_fd is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = self.holder_pid()
            who = f"pid {pid}" if pid is not None else "another process"
            raise RunDirectoryBusyError(
                f"{self.path} is in use by another run ({who}); wait for it to finish, or choose another "
                "output directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    @property
    def is_locked(self) -> bool:
        """Whether this object holds the directory's lock."""
        return self._lock_fd is not None

    def unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock

    @contextlib.contextmanager
    def locked(self) -> Iterator[RunDirectory]:
        self.lock()
        try:
            yield self
        finally:
            self.unlock()

    def is_unstarted(self) -> bool:
        """An existing directory holding nothing but what a run writes before its first metadata (the
        lock, a temporary metadata file, an empty results file): a run killed at start-up."""
        if not self.path.is_dir() or self.metadata_path.exists() or self.has_results():
            return False
        return all(
            p.name in (LOCK_FILE, RESULTS_FILE) or p.name.startswith(f".{METADATA_FILE}.")
            for p in self.path.iterdir()
        )

    # --- files -------------------------------------------------------------------------------------
    def has_results(self) -> bool:
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def read_metadata(self) -> RunMetadata | None:
        """The run's metadata, ``env_args`` as the run was given them (values recorded by reference are
        read back from their files: ``verifiers.hub.env_args``); ``ValueError`` if it cannot be read."""
        if not self.metadata_path.exists():
            return None
        meta = RunMetadata.model_validate(loads_json(self.metadata_path.read_bytes()))
        if any(env_args.is_reference(v) for v in meta.env_args.values()):
            meta.env_args = env_args.expand(meta.env_args, self.path)
        return meta

    def _store_env_arg(self, relative: str, data: bytes) -> None:
        """Write a referenced env_args value once (its name is its hash: an existing file is the same)."""
        path = self.path / relative
        if path.is_file() and path.stat().st_size == len(data):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def write_metadata(self, meta: RunMetadata, *, durable: bool = False) -> None:
        """Replace metadata.json atomically; user values in it (``env_args``, ``sampling_args``,
        ``extra``) follow the conversion rule, and large ``env_args`` values are recorded by content
        hash in ``env_args/`` (``verifiers.hub.env_args``)."""
        self.path.mkdir(parents=True, exist_ok=True)
        dumped = meta.model_dump(exclude={"env_args"})  # not a copy of megabytes of rows each second
        recorded = self._recorded_env_args(meta.env_args)
        data = {k: recorded if k == "env_args" else dumped[k] for k in type(meta).model_fields}
        try:
            text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | _FAST_OPTS)
        except TypeError:
            text = json.dumps(to_json_value(data), ensure_ascii=False, allow_nan=False, indent=2).encode()
        tmp = self.metadata_path.with_name(f".{METADATA_FILE}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, self.metadata_path)

    def _recorded_env_args(self, given: dict[str, Any]) -> dict[str, Any]:
        """``env_args`` as metadata.json records them; computed once per value (the metadata of a run is
        rewritten every second, its arguments never change)."""
        key = id(given)
        cached = self._env_args_cache
        if cached is not None and cached[0] == key and cached[1] is given:
            return cached[2]
        recorded = env_args.compact(to_json_value(given), self._store_env_arg)
        self._env_args_cache = (key, given, recorded)
        return recorded

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
                records.append(loads_json(line))
            except ValueError as exc:  # orjson's and the stdlib's decode errors alike
                raise ValueError(f"{self.results_path}:{lineno} is not valid JSON ({exc})") from None
        return records

    def open_for_append(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.append_lines([dump_record(r) for r in records])

    def append_lines(self, lines: Iterable[bytes]) -> None:
        """Append whole encoded lines with one ``write`` (see the module docstring)."""
        assert self._fd is not None, "open_for_append() first"
        view = memoryview(b"".join(lines))
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self, *, durable: bool = False) -> None:
        if self._fd is not None:
            if durable:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
