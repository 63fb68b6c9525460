"""Artifact storage behind a small interface; the local-directory store is the default.

An S3-compatible store implements the same four methods (``put`` maps to a single PUT, which is atomic
on S3) and returns ``None`` from ``local_path`` so downloads are streamed from ``open``.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

_KEY = re.compile(r"^[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$")


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically: readers see all of it or nothing."""

    def open(self, key: str) -> BinaryIO:
        """A readable binary stream; ``FileNotFoundError`` if absent."""

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine."""

    def iter_keys(self) -> Iterator[str]:
        """Every stored key (for garbage collection of unreferenced blobs)."""

    def local_path(self, key: str) -> Path | None:
        """A filesystem path to serve directly, when the store has one."""


class LocalBlobStore:
    """Blobs as files under ``root``; writes go to a temp file in the same directory, then ``rename``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
            raise ValueError(f"invalid blob key {key!r}")
        return self.root / key

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def open(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def delete(self, key: str) -> None:
        path = self._path(key)
        path.unlink(missing_ok=True)
        # Drop now-empty parent directories, but never the root itself.
        for parent in path.parents:
            if parent == self.root or self.root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break

    def iter_keys(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for p in self.root.rglob("*"):
            if p.is_file():
                yield p.relative_to(self.root).as_posix()

    def local_path(self, key: str) -> Path | None:
        return self._path(key)
