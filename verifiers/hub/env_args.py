"""Large ``env_args`` values kept by content hash instead of inline (contract 3.4, ``metadata.json``).

A run over user-supplied rows (``env_args = {"rows": [...]}``, megabytes of repositories and tests) would
otherwise copy them into ``metadata.json`` on every rewrite and into the hub upload, which refuses bodies
over 1 MiB. So a top-level ``env_args`` value whose canonical JSON is larger than ``INLINE_LIMIT`` bytes is
recorded as a reference::

    "env_args": {"split": "test", "rows": {"$file": "env_args/<sha256>.json", "sha256": "<sha256>", "bytes": 5400000}}

The file, in the run directory, holds exactly the value's canonical JSON (``canonical_json``: sorted keys,
no spaces, UTF-8), so ``sha256sum`` of the file is the hash. ``verifiers.eval.results.RunDirectory`` writes
the files and reads references back into values; a hub upload sends references as they are (the hub keeps
the hash, not the rows). Directories written before this rule hold every value inline and read unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: A top-level value whose canonical JSON is larger than this is recorded by reference.
INLINE_LIMIT = 4096
#: The run directory's sub-directory that holds the referenced values.
ENV_ARGS_DIR = "env_args"
_KEYS = frozenset({"$file", "sha256", "bytes"})


class EnvArgsFileError(ValueError):
    """A referenced env_args file is missing, unreadable, or does not hold what its hash names."""


def canonical_json(value: Any) -> bytes:
    """The one serialisation hashes are taken of: sorted keys, no spaces, UTF-8 (``value`` holds JSON
    types only)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def is_reference(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == _KEYS and isinstance(value.get("$file"), str)


def reference(data: bytes) -> dict[str, Any]:
    """The reference recorded for a value whose canonical JSON is ``data``."""
    digest = hashlib.sha256(data).hexdigest()
    return {"$file": f"{ENV_ARGS_DIR}/{digest}.json", "sha256": digest, "bytes": len(data)}


def compact(env_args: Mapping[str, Any], store: Callable[[str, bytes], None] | None = None) -> dict[str, Any]:
    """``env_args`` with each large value (and any value that looks like a reference, so reading back is
    unambiguous) replaced by its reference; ``store(relative_path, data)`` is called for each one that must
    be written. References already there are kept. Values must be JSON types (the conversion rule first)."""
    out: dict[str, Any] = {}
    for key, value in env_args.items():
        if is_reference(value) and store is None:
            out[key] = dict(value)  # already recorded by reference (an upload of a run directory)
            continue
        data = canonical_json(value)
        if len(data) <= INLINE_LIMIT and not is_reference(value):
            out[key] = value
            continue
        ref = reference(data)
        if store is not None:
            store(ref["$file"], data)
        out[key] = ref
    return out


def expand(
    env_args: Mapping[str, Any], directory: Path, *, read: Callable[[str], bytes] | None = None
) -> dict[str, Any]:
    """``env_args`` as the run was given them: each reference read back from ``directory`` (its hash
    checked), by ``read(relative path)`` when given (a run directory's own reader, which follows no
    links). Raises ``EnvArgsFileError`` naming the file when one is missing or altered."""
    out: dict[str, Any] = {}
    for key, value in env_args.items():
        if not is_reference(value):
            out[key] = value
            continue
        path = directory / str(value["$file"])
        if Path(str(value["$file"])).is_absolute() or ".." in Path(str(value["$file"])).parts:
            raise EnvArgsFileError(f"env_args[{key!r}] refers outside the run directory: {value['$file']}")
        try:
            data = read(str(value["$file"])) if read is not None else path.read_bytes()
        except OSError as exc:
            raise EnvArgsFileError(
                f"env_args[{key!r}] is recorded in {path}, which cannot be read ({exc.strerror or exc})"
            ) from None
        if hashlib.sha256(data).hexdigest() != value["sha256"]:
            raise EnvArgsFileError(
                f"{path} does not hold env_args[{key!r}]: its sha256 differs from the recorded one"
            )
        out[key] = json.loads(data)
    return out


__all__ = [
    "ENV_ARGS_DIR",
    "INLINE_LIMIT",
    "EnvArgsFileError",
    "canonical_json",
    "compact",
    "expand",
    "is_reference",
    "reference",
]
