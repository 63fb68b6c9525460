"""The one bounded reader every byte of an uploaded archive goes through.

Caps count the bytes a stream actually *produces* (after decompression, after tar's sparse expansion),
never the sizes an archive declares, so a header that lies or a decompression bomb cannot make the hub
allocate or work more than the caps allow. Everything here raises ``UploadError`` (a 4xx).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

#: Size of every read the hub makes from an archive stream (and the most a single read may ask for).
CHUNK = 64 * 1024


class UploadError(Exception):
    """A rejected upload. ``status_code`` is 400 (bad content), 413 (too large) or 422 (bad form)."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Budget:
    """Bytes one archive may still produce; shared by every stream read from it."""

    def __init__(self, archive: str, limit: int) -> None:
        self.archive, self.limit, self.used = archive, limit, 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise UploadError(
                f"{self.archive} unpacks to more than {self.limit} bytes (the hub's max_unpacked_size); "
                "make the package smaller",
                413,
            )


class BoundedReader:
    """A forward-only, read-only file over ``source`` whose output is charged to ``budget``.

    ``read(n)`` refuses ``n`` above ``max_read`` (so no caller, ``tarfile`` included, can ask for a block
    the size a header claims), and while ``header_cap`` is set the bytes read since the last
    ``start_member()`` outside ``member_data()`` are capped too: that bounds everything ``tarfile`` parses
    per member (PAX records, long names, sparse maps) before the hub sees the member. Seeking forward
    reads and discards; seeking back is refused, since a well-formed archive never needs it here.
    """

    def __init__(
        self,
        source: _Readable,
        budget: Budget,
        *,
        max_read: int = CHUNK,
        header_cap: int | None = None,
        what: str | None = None,
    ) -> None:
        self._source, self.budget = source, budget
        self._max_read, self._header_cap = max_read, header_cap
        self._what = what or budget.archive
        self._pos = 0
        self._header_bytes = 0
        self._in_data = False

    # --- the file protocol tarfile and zipfile use ---------------------------------------------------
    def read(self, size: int | None = -1, /) -> bytes:
        if size is None or size < 0 or size > self._max_read:
            raise UploadError(
                f"{self._what}: a header or record asks for {size} bytes at once; the hub reads at most "
                f"{self._max_read}",
                413,
            )
        data = self._source.read(size)
        self.budget.take(len(data))
        self._pos += len(data)
        if not self._in_data and self._header_cap is not None:
            self._header_bytes += len(data)
            if self._header_bytes > self._header_cap:
                raise UploadError(
                    f"{self._what}: a member's headers (PAX records, long names, sparse maps) exceed "
                    f"{self._header_cap} bytes",
                    413,
                )
        return data

    def seek(self, offset: int, whence: int = 0, /) -> int:
        target = {0: offset, 1: self._pos + offset}.get(whence)
        if target is None or target < self._pos:
            raise UploadError(f"{self._what} is not a valid archive: it needs a backward seek")
        with self.member_data():  # skipped member data is not header data
            while self._pos < target and self.read(min(CHUNK, target - self._pos)):
                pass
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    # --- for the inspector ---------------------------------------------------------------------------
    def start_member(self) -> None:
        self._header_bytes = 0

    @contextmanager
    def member_data(self) -> Iterator[None]:
        was, self._in_data = self._in_data, True
        try:
            yield
        finally:
            self._in_data = was


def chunks(stream: _Readable) -> Iterator[bytes]:
    """The stream's bytes in ``CHUNK`` pieces until it ends."""
    while data := stream.read(CHUNK):
        yield data


def read_capped(stream: _Readable, cap: int, what: str) -> bytes:
    """All of ``stream``, refusing (413) as soon as it produces more than ``cap`` bytes."""
    parts: list[bytes] = []
    total = 0
    for data in chunks(stream):
        total += len(data)
        if total > cap:
            raise UploadError(f"{what} is larger than {cap} bytes, the most the hub reads for it", 413)
        parts.append(data)
    return b"".join(parts)


def digest(stream: _Readable) -> tuple[int, str]:
    """(bytes produced, sha256 hex) of the stream, read in chunks."""
    h, n = hashlib.sha256(), 0
    for data in chunks(stream):
        h.update(data)
        n += len(data)
    return n, h.hexdigest()
