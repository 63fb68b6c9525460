"""A run directory on disk: ``results.jsonl`` (one rollout per line), ``metadata.json`` and ``.lock``.

Crash safety: each finished group is appended with a single ``write`` of whole lines, and metadata is
replaced atomically (write to a temporary file, then rename). A process killed mid-write can leave at
most one partial last line, which ``load_results`` cuts off before a resume appends again.

One writer: a run holds an exclusive ``flock`` on ``.lock`` for its whole life (the file records the
holder's pid); a second run on the same directory fails at once (``RunDirectoryBusyError``). The kernel
drops the lock of a killed process, so a stale ``.lock`` file never blocks.

No links: the directory is opened with ``O_DIRECTORY | O_NOFOLLOW`` and every file in it (the lock,
``results.jsonl``, ``metadata.json``, temporary files, rename targets, ``env_args/``) is opened relative to
that descriptor with ``O_NOFOLLOW``, so a link planted in (or as) a run directory is refused, never written
through. A run only takes a directory that is new, empty or a run directory (``RUN_FILES`` only):
anything else (a home directory with a ``.bashrc``) is refused with ``RunDirectoryError``.

Values: every value JSON can hold is written exactly (integers of any size too). Values it cannot hold
are converted by one rule, ``to_json_value`` (docs/core.md, "Results files"); a record that still cannot
be written raises ``UnwritableRecordError`` (the run records that rollout with an ``env`` error).
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import json
import math
import os
import re
import stat
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


class RunDirectoryError(FileExistsError):
    """The output directory is not one a run may write to: a link, or a directory holding other files."""


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
#: What a run directory holds; ``.metadata.json.<pid>.tmp`` files too (an atomic rewrite cut short).
RUN_FILES = frozenset({RESULTS_FILE, METADATA_FILE, LOCK_FILE, env_args.ENV_ARGS_DIR})


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
        self._dir_fd: int | None = None  # held from lock() to unlock()
        self._env_args_cache: tuple[int, dict[str, Any], dict[str, Any]] | None = None

    # --- the directory and its files, never through a link --------------------------------------------
    @contextlib.contextmanager
    def _directory(self, *, create: bool = False) -> Iterator[int | None]:
        """A descriptor of the directory (the held one, or one opened for the call), made first with
        ``create``; None when it does not exist. Raises ``RunDirectoryError`` for a link or a non-directory."""
        if self._dir_fd is not None:
            yield self._dir_fd
            return
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.path)
        try:
            fd = os.open(self.path, _DIRECTORY)
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise RunDirectoryError(
                    f"{self.path} is a symbolic link or not a directory; a run writes only into a real "
                    "directory (give its own path, or another --output-dir)"
                ) from None
            raise
        try:
            yield fd
        finally:
            os.close(fd)

    def _open(self, dir_fd: int, name: str, flags: int, mode: int = 0o644) -> int:
        try:
            return os.open(name, flags | _NOFOLLOW, mode, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and flags & os.O_DIRECTORY):
                raise RunDirectoryError(
                    f"{self.path / name} is a symbolic link (or not a directory); a run never writes or reads "
                    "through links in its directory: remove it (or choose another output directory)"
                ) from None
            raise

    def _read(self, name: str) -> bytes | None:
        """The whole file ``name`` (None if absent), opened without following a link."""
        with self._directory() as dir_fd:
            if dir_fd is None:
                return None
            try:
                fd = self._open(dir_fd, name, os.O_RDONLY)
            except FileNotFoundError:
                return None
            with os.fdopen(fd, "rb") as f:
                return f.read()

    def _stat(self, name: str) -> os.stat_result | None:
        with self._directory() as dir_fd:
            if dir_fd is None:
                return None
            try:
                return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return None

    def _write_replacing(self, dir_fd: int, name: str, data: bytes, *, durable: bool = False) -> None:
        """Write ``name`` in the directory ``dir_fd`` atomically: a fresh temporary file (never an
        existing one, never through a link), then a rename, which replaces a link rather than following it."""
        tmp = f".{name}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)  # one a killed run of this pid left (unlink never follows)
        fd = self._open(dir_fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise

    def foreign_entries(self) -> list[str]:
        """What the directory holds that a run does not write, and the run files that are links
        (empty for a new, empty or run directory)."""
        with self._directory() as dir_fd:
            if dir_fd is None:
                return []
            out = []
            for name in sorted(os.listdir(dir_fd)):
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                expected_dir = name == env_args.ENV_ARGS_DIR
                temporary = name.startswith(f".{METADATA_FILE}.") and name.endswith(".tmp")
                kind_ok = stat.S_ISDIR(st.st_mode) if expected_dir else stat.S_ISREG(st.st_mode)
                if not ((name in RUN_FILES or temporary) and kind_ok):
                    out.append(
                        name + ("@" if stat.S_ISLNK(st.st_mode) else "/" if stat.S_ISDIR(st.st_mode) else "")
                    )
            return out

    def check_is_run_directory(self) -> None:
        """Raise ``RunDirectoryError`` unless the directory is absent, empty, or holds only run files."""
        foreign = self.foreign_entries()
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise RunDirectoryError(
                f"{self.path} is not a run directory: it holds {shown}, which a run does not write (links "
                "are marked @). A run writes only into a new or empty directory, or one of its own runs: "
                "choose another output directory (--output-dir), or leave it out for a new one under "
                "./outputs/evals/"
            )

    # --- the one-writer lock -----------------------------------------------------------------------
    def holder_pid(self) -> int | None:
        """The pid recorded by the last run that took the lock (alive or not)."""
        try:
            return int((self._read(LOCK_FILE) or b"").decode().strip() or "x")
        except (OSError, ValueError):
            return None

    def lock(self) -> None:
        """Take the directory's exclusive lock (creating the directory), or raise
        ``RunDirectoryBusyError`` naming the holder's pid (``RunDirectoryError`` if it is not a run
        directory, or a link). Held until ``unlock()`` or process exit."""
        if self._lock_fd is not None:
            return
        with self._directory(create=True) as dir_fd:
            assert dir_fd is not None
            held = os.dup(dir_fd)
        self._dir_fd = held
        try:
            self.check_is_run_directory()
            fd = self._open(held, LOCK_FILE, os.O_RDWR | os.O_CREAT)
        except BaseException:
            self._dir_fd = None
            os.close(held)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = self.holder_pid()
            self._dir_fd = None
            os.close(held)
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
        dir_fd, self._dir_fd = self._dir_fd, None
        if dir_fd is not None:
            os.close(dir_fd)

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
        if self._stat(".") is None or self._stat(METADATA_FILE) is not None or self.has_results():
            return False
        with self._directory() as dir_fd:
            names = os.listdir(dir_fd) if dir_fd is not None else []
        return not self.foreign_entries() and all(
            n in (LOCK_FILE, RESULTS_FILE) or n.startswith(f".{METADATA_FILE}.") for n in names
        )

    # --- files -------------------------------------------------------------------------------------
    def has_results(self) -> bool:
        st = self._stat(RESULTS_FILE)
        return st is not None and st.st_size > 0

    def has_metadata(self) -> bool:
        return self._stat(METADATA_FILE) is not None

    def read_metadata(self) -> RunMetadata | None:
        """The run's metadata, ``env_args`` as the run was given them (values recorded by reference are
        read back from their files: ``verifiers.hub.env_args``); ``ValueError`` if it cannot be read."""
        raw = self._read(METADATA_FILE)
        if raw is None:
            return None
        meta = RunMetadata.model_validate(loads_json(raw))
        if any(env_args.is_reference(v) for v in meta.env_args.values()):
            meta.env_args = env_args.expand(meta.env_args, self.path, read=self._read_relative)
        return meta

    def _read_relative(self, relative: str) -> bytes:
        """A file under the directory (``env_args/<hash>.json``), each component opened without links."""
        *dirs, name = relative.split("/")
        with self._directory() as dir_fd:
            if dir_fd is None:
                raise FileNotFoundError(errno.ENOENT, "no run directory", str(self.path))
            fds = [dir_fd]
            try:
                for d in dirs:
                    fds.append(self._open(fds[-1], d, _DIRECTORY))
                with os.fdopen(self._open(fds[-1], name, os.O_RDONLY), "rb") as f:
                    return f.read()
            finally:
                for fd in fds[1:]:
                    os.close(fd)

    def _store_env_arg(self, relative: str, data: bytes) -> None:
        """Write a referenced env_args value once (its name is its hash: an existing file is the same)."""
        *dirs, name = relative.split("/")
        with self._directory(create=True) as dir_fd:
            assert dir_fd is not None
            fds = [dir_fd]
            try:
                for d in dirs:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(d, dir_fd=fds[-1])
                    fds.append(self._open(fds[-1], d, _DIRECTORY))
                try:
                    st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and st.st_size == len(data):
                        return
                except FileNotFoundError:
                    pass
                self._write_replacing(fds[-1], name, data)
            finally:
                for fd in fds[1:]:
                    os.close(fd)

    def write_metadata(self, meta: RunMetadata, *, durable: bool = False) -> None:
        """Replace metadata.json atomically; user values in it (``env_args``, ``sampling_args``,
        ``extra``) follow the conversion rule, and large ``env_args`` values are recorded by content
        hash in ``env_args/`` (``verifiers.hub.env_args``)."""
        dumped = meta.model_dump(exclude={"env_args"})  # not a copy of megabytes of rows each second
        recorded = self._recorded_env_args(meta.env_args)
        data = {k: recorded if k == "env_args" else dumped[k] for k in type(meta).model_fields}
        try:
            text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | _FAST_OPTS)
        except TypeError:
            text = json.dumps(to_json_value(data), ensure_ascii=False, allow_nan=False, indent=2).encode()
        with self._directory(create=True) as dir_fd:
            assert dir_fd is not None
            self._write_replacing(dir_fd, METADATA_FILE, text, durable=durable)

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
        data = self._read(RESULTS_FILE)
        if data is None:
            return []
        end = data.rfind(b"\n") + 1
        if end < len(data) and repair:
            with self._directory() as dir_fd:
                assert dir_fd is not None
                fd = self._open(dir_fd, RESULTS_FILE, os.O_WRONLY)
                try:
                    os.ftruncate(fd, end)
                finally:
                    os.close(fd)
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
        with self._directory(create=True) as dir_fd:
            assert dir_fd is not None
            self._fd = self._open(dir_fd, RESULTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

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
