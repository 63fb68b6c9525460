"""What an environment wheel may hold, read the way *any* installer could read it.

The hub applies these rules to every upload and ``vf-install`` applies them again to the downloaded file
before anything is installed (``verifiers.hub.install``), so both sides judge the same bytes the same way.

Installers do not agree on how to read a zip: pip reads the central directory, uv may read the local
headers one after the other (a stream), Info-ZIP-aware readers take a name from a Unicode Path extra
field. So the archive is accepted only when every reading gives the same members with the same bytes:

- the end record is the archive's last 22 bytes (no archive comment, nothing after it), on one disk, with
  counts (and, for zip64, the zip64 record's counts) equal to the entries the central directory holds;
- the local headers start at byte 0 and follow each other without a gap up to the central directory,
  each one being exactly the entry the central directory lists at that offset: no data before the first
  (a polyglot), between entries or after the last, and no local entry the central directory leaves out;
- a local header agrees with its central entry on name, flags, method, CRC and sizes (a data descriptor,
  when flagged, too); only stored and deflate are accepted, and a deflate stream must end exactly where
  the entry does (a streaming reader that follows the deflate stream finds the next header there);
- extra fields are parsed strictly: Info-ZIP Unicode Path / Comment fields must repeat the header's
  name / comment, zip64 fields must be consistent, and only known, inert field types are accepted;
- names are UTF-8 (flagged as such unless ASCII), canonical POSIX paths, unique even after Unicode
  normalisation and case folding.

On top of the container: the import package and one ``.dist-info`` only (no ``.pth``, no
``sitecustomize``, no ``.data``), no symlinks or special files, no compiled code (bytecode, extension
modules and other shared libraries), ``RECORD`` listing exactly the files with their hashes, and only the
environment's own entry point.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import stat
import struct
import unicodedata
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from verifiers.hub.packaging import ContentHasher, is_module_file, module_name

__all__ = [
    "ArchiveError",
    "WheelContents",
    "ZipEntry",
    "check_entry_points",
    "check_member_name",
    "entry_chunks",
    "inspect_wheel",
    "is_bytecode",
    "is_native_code",
    "metadata_text",
    "read_zip",
]

MAX_MEMBER_NAME = 512  # characters of one archive member's path
MAX_ZIP_EXTRA = 1024  # bytes of one entry's extra field (wheel tools write < 40)
MAX_ZIP_COMMENT = 1024  # bytes of one member's comment
MAX_RECORD = 4 * 1024 * 1024  # RECORD: one line per member
MAX_ENTRY_POINTS = 64 * 1024  # entry_points.txt
CHUNK = 64 * 1024  # the most one decompression step produces
#: The one entry-point group an environment wheel may declare (contract 3.1): ``<name> = <module>:<attr>``.
ENTRY_POINT_GROUP = "verifiers.environments"

_STORED, _DEFLATED = 0, 8
_METHODS = {_STORED: "stored", _DEFLATED: "deflate"}
# General-purpose flags a wheel may carry: deflate options (1, 2), data descriptor (3), UTF-8 names (11).
_FLAG_DESCRIPTOR, _FLAG_UTF8 = 1 << 3, 1 << 11
_ALLOWED_FLAGS = (1 << 1) | (1 << 2) | _FLAG_DESCRIPTOR | _FLAG_UTF8
_ZIP64, _UNICODE_PATH, _UNICODE_COMMENT = 0x0001, 0x7075, 0x6375
#: Extra fields that change neither a name nor the bytes: timestamps, uid/gid, jar marker, padding.
_INERT_EXTRAS = {
    0x000A: "NTFS timestamps",
    0x5455: "extended timestamp",
    0x5855: "Info-ZIP Unix (old)",
    0x7875: "Info-ZIP Unix uid/gid",
    0xCAFE: "jar marker",
    0xD935: "Android alignment",
    0xA220: "growth hint padding",
}
_EOCD = struct.Struct(
    "<4s4H2LH"
)  # sig, disk, cd disk, entries here, entries total, cd size, cd offset, comment
_ZIP64_LOCATOR = struct.Struct("<4sLQL")  # sig, disk of the zip64 record, its offset, disks
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")  # sig, record size, made, needed, disks, counts, cd size, offset
_CENTRAL = struct.Struct("<4s6H3L5H2L")  # 46 bytes
_LOCAL = struct.Struct("<4s5H3L2H")  # 30 bytes
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 controls and DEL; tab/CR/LF allowed
#: Suffixes of files the import system or the dynamic loader runs as machine code (Python picks
#: ``pkg/__init__.cpython-311-x86_64-linux-gnu.so`` over ``pkg/__init__.py``), in any case.
_NATIVE_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".sl")
_VERSIONED_LIBRARY = re.compile(r"\.so(\.\d+)+$", re.IGNORECASE)  # libfoo.so.1.2


class ArchiveError(Exception):
    """A wheel that breaks a rule. ``status_code`` is 400 (bad content) or 413 (over a size cap)."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


@dataclass(frozen=True)
class ZipEntry:
    """One member as the central directory and its local header both describe it."""

    name: str
    flags: int
    method: int
    crc: int
    compressed_size: int
    file_size: int
    external_attr: int
    header_offset: int
    data_offset: int

    def is_dir(self) -> bool:
        return self.name.endswith("/")


# --- the container -----------------------------------------------------------------------------------------
def read_zip(archive: str, data: bytes, *, max_members: int) -> list[ZipEntry]:
    """The entries of ``data``, after checking that every way of reading the zip finds exactly these."""
    invalid = f"{archive} is not a valid zip archive"
    end = len(data) - _EOCD.size
    if end < 0 or data[end : end + 4] != b"PK\x05\x06":
        raise ArchiveError(
            f"{invalid}: it does not end with its end-of-central-directory record (archive comments and "
            "data after the archive are refused: readers disagree about which record they find)"
        )
    _sig, disk, cd_disk, here, total, cd_size, cd_offset, comment_len = _EOCD.unpack_from(data, end)
    if comment_len:
        raise ArchiveError(f"{invalid}: its end record declares a comment the file does not hold")
    cd_end = end
    locator = end - _ZIP64_LOCATOR.size
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        _s, z_disk, z_offset, disks = _ZIP64_LOCATOR.unpack_from(data, locator)
        record = locator - _ZIP64_EOCD.size  # no extensible data sector: nothing hides between them
        if z_disk != 0 or disks != 1 or z_offset != record or record < 0:
            raise ArchiveError(
                f"{invalid}: its zip64 locator does not point at the zip64 end record before it"
            )
        fields = _ZIP64_EOCD.unpack_from(data, record)
        sig, size, _made, _needed, z_disk, z_cd_disk, z_here, z_total, z_cd_size, z_cd_offset = fields
        if sig != b"PK\x06\x06" or size != _ZIP64_EOCD.size - 12 or z_disk or z_cd_disk:
            raise ArchiveError(f"{invalid}: its zip64 end record is malformed or has extensible data")
        for short, long, mark in (
            (here, z_here, 0xFFFF),
            (total, z_total, 0xFFFF),
            (cd_size, z_cd_size, 0xFFFFFFFF),
            (cd_offset, z_cd_offset, 0xFFFFFFFF),
        ):
            if short not in (mark, long):
                raise ArchiveError(
                    f"{invalid}: its end record and zip64 end record disagree ({short} vs {long})"
                )
        here, total, cd_size, cd_offset, cd_end = z_here, z_total, z_cd_size, z_cd_offset, record
    if disk or cd_disk or here != total:
        raise ArchiveError(f"{invalid}: it spans several disks")
    if total > max_members:
        raise ArchiveError(f"{archive} has more than {max_members} members", 413)
    if cd_offset + cd_size != cd_end:
        raise ArchiveError(
            f"{invalid}: its central directory ({cd_size} bytes at {cd_offset}) does not end where its end "
            "record starts (data before the archive, or between its parts, is refused)"
        )
    entries = _central_entries(archive, data, cd_offset, cd_end, max_members)
    if len(entries) != total:
        raise ArchiveError(
            f"{invalid}: its end record counts {total} entries, its central directory holds {len(entries)}"
        )
    _check_local_headers(archive, data, entries, cd_offset)
    _check_names(archive, entries)
    return entries


@dataclass
class _Central:
    name_bytes: bytes
    name: str
    flags: int
    method: int
    crc: int
    compressed_size: int
    file_size: int
    external_attr: int
    offset: int


def _central_entries(archive: str, data: bytes, start: int, end: int, max_members: int) -> list[ZipEntry]:
    found: list[_Central] = []
    pos = start
    while pos < end:
        if pos + _CENTRAL.size > end or data[pos : pos + 4] != b"PK\x01\x02":
            raise ArchiveError(f"{archive} is not a valid zip archive: no readable central directory")
        fields = _CENTRAL.unpack_from(data, pos)
        _sig, _made, _needed, flags, method, _time, _date, crc, csize, usize = fields[:10]
        name_len, extra_len, comment_len, disk, _internal, external, offset = fields[10:]
        name_bytes = bytes(data[pos + _CENTRAL.size : pos + _CENTRAL.size + name_len])
        name = _decode_name(archive, name_bytes, flags)
        if len(found) >= max_members:
            raise ArchiveError(f"{archive} has more than {max_members} members", 413)
        if extra_len > MAX_ZIP_EXTRA or comment_len > MAX_ZIP_COMMENT:
            raise ArchiveError(
                f"{archive}: member {name!r} has a {extra_len}-byte extra field and a {comment_len}-byte "
                f"comment; at most {MAX_ZIP_EXTRA} and {MAX_ZIP_COMMENT} are accepted (wheel tools write "
                "a few dozen bytes)",
                413,
            )
        after = pos + _CENTRAL.size + name_len + extra_len + comment_len
        if after > end:
            raise ArchiveError(f"{archive} is not a valid zip archive: no readable central directory")
        extra = data[pos + _CENTRAL.size + name_len : pos + _CENTRAL.size + name_len + extra_len]
        comment = bytes(data[after - comment_len : after])
        _check_flags_and_method(archive, name, flags, method)
        if disk:
            raise ArchiveError(f"{archive}: member {name!r} starts on another disk")
        sizes = _extras(archive, name, name_bytes, extra, comment, central=True)
        usize, csize, offset = _widen(archive, name, sizes, (usize, csize, offset))
        found.append(_Central(name_bytes, name, flags, method, crc, csize, usize, external, offset))
        pos = after
    if pos != end:
        raise ArchiveError(f"{archive} is not a valid zip archive: no readable central directory")
    return [
        ZipEntry(
            c.name, c.flags, c.method, c.crc, c.compressed_size, c.file_size, c.external_attr, c.offset, -1
        )
        for c in found
    ]


def _decode_name(archive: str, raw: bytes, flags: int) -> str:
    """UTF-8, and flagged as such unless ASCII: without the flag readers differ (zipfile reads cp437)."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError(f"{archive}: member name {raw[:60]!r} is not UTF-8") from None
    if not flags & _FLAG_UTF8 and not name.isascii():
        raise ArchiveError(
            f"{archive}: member name {name!r} is not ASCII and not flagged as UTF-8, so readers decode it "
            "differently (cp437 or UTF-8); rebuild the wheel with `python -m build`"
        )
    return name


def _check_flags_and_method(archive: str, name: str, flags: int, method: int) -> None:
    if flags & 0x1 or flags & (1 << 6) or flags & (1 << 13):
        raise ArchiveError(f"{archive}: member {name!r} is encrypted; wheels hold plain files")
    if flags & ~_ALLOWED_FLAGS:
        raise ArchiveError(f"{archive}: member {name!r} has unknown zip flags {flags:#06x}")
    if method not in _METHODS:
        raise ArchiveError(
            f"{archive}: member {name!r} uses zip compression method {method}; only stored and deflate "
            "members are accepted, the methods wheel tools write (rebuild with `python -m build`)"
        )


def _extras(
    archive: str, name: str, name_bytes: bytes, extra: bytes, comment: bytes, *, central: bool
) -> bytes | None:
    """Check one extra field strictly; the zip64 record's data, if there is one."""
    seen: set[int] = set()
    zip64: bytes | None = None
    pos = 0
    while pos < len(extra):
        if pos + 4 > len(extra):
            raise ArchiveError(f"{archive}: member {name!r} has a truncated extra field")
        kind, size = struct.unpack_from("<2H", extra, pos)
        body = bytes(extra[pos + 4 : pos + 4 + size])
        if len(body) != size:
            raise ArchiveError(f"{archive}: member {name!r} has a truncated extra field")
        if kind in seen:
            raise ArchiveError(f"{archive}: member {name!r} repeats the extra field {kind:#06x}")
        seen.add(kind)
        if kind == _ZIP64:
            zip64 = body
        elif kind in (_UNICODE_PATH, _UNICODE_COMMENT):
            what = "path" if kind == _UNICODE_PATH else "comment"
            header = name_bytes if kind == _UNICODE_PATH else comment
            if kind == _UNICODE_COMMENT and not central:
                raise ArchiveError(
                    f"{archive}: member {name!r} has a Unicode comment field in its local header"
                )
            if size < 5 or body[0] != 1 or body[5:] != header:
                raise ArchiveError(
                    f"{archive}: member {name!r} carries an Info-ZIP Unicode {what} extra field ({kind:#06x}) "
                    f"naming {body[5:].decode('utf-8', 'replace')!r}; installers that read it would extract "
                    "something other than what the header names, so it must repeat the header exactly"
                )
        elif kind not in _INERT_EXTRAS:
            raise ArchiveError(
                f"{archive}: member {name!r} has the extra field {kind:#06x}, which the checks do not know; "
                "only zip64, Unicode path/comment (repeating the header), timestamps, uid/gid and padding "
                "fields are accepted"
            )
        pos += 4 + size
    return zip64


def _widen(archive: str, name: str, zip64: bytes | None, values: tuple[int, ...]) -> tuple[int, ...]:
    """Header fields holding the zip64 marker replaced from the zip64 extra field (in its fixed order)."""
    marks = [v == 0xFFFFFFFF for v in values]
    if zip64 is None:
        if any(marks):
            raise ArchiveError(f"{archive}: member {name!r} has a zip64 marker but no zip64 extra field")
        return values
    needed = 8 * sum(marks)
    if len(zip64) not in (needed, needed + 4):  # an optional disk number may follow
        raise ArchiveError(f"{archive}: member {name!r} has a zip64 extra field of the wrong size")
    out, pos = [], 0
    for value, marked in zip(values, marks, strict=True):
        if marked:
            out.append(struct.unpack_from("<Q", zip64, pos)[0])
            pos += 8
        else:
            out.append(value)
    return tuple(out)


def _check_local_headers(archive: str, data: bytes, entries: list[ZipEntry], cd_offset: int) -> None:
    """Walk the local headers from byte 0 to the central directory: each must be the next entry."""
    by_offset = sorted(range(len(entries)), key=lambda i: entries[i].header_offset)
    pos = 0
    for i in by_offset:
        entry = entries[i]
        if entry.header_offset != pos:
            where = "before the first member (a polyglot?)" if pos == 0 else "between two members"
            raise ArchiveError(
                f"{archive}: {abs(entry.header_offset - pos)} bytes {where} at offset {pos} belong to no "
                "member the central directory lists; a reader of the local headers would see other members"
            )
        if pos + _LOCAL.size > cd_offset or data[pos : pos + 4] != b"PK\x03\x04":
            raise ArchiveError(
                f"{archive}: member {entry.name!r} has no local header where the central directory says"
            )
        _sig, _needed, flags, method, _time, _date, crc, csize, usize, name_len, extra_len = (
            _LOCAL.unpack_from(data, pos)
        )
        name_bytes = bytes(data[pos + _LOCAL.size : pos + _LOCAL.size + name_len])
        extra = data[pos + _LOCAL.size + name_len : pos + _LOCAL.size + name_len + extra_len]
        if extra_len > MAX_ZIP_EXTRA:
            raise ArchiveError(
                f"{archive}: member {entry.name!r} has a {extra_len}-byte local extra field", 413
            )
        if name_bytes != entry.name.encode():
            raise ArchiveError(
                f"{archive}: the local header of {entry.name!r} names "
                f"{name_bytes.decode('utf-8', 'replace')!r}; a reader of the local headers would extract that"
            )
        zip64 = _extras(archive, entry.name, name_bytes, extra, b"", central=False)
        if (flags, method) != (entry.flags, entry.method):
            raise ArchiveError(
                f"{archive}: the local header of {entry.name!r} says method {method}, flags {flags:#06x}; the "
                f"central directory says method {entry.method}, flags {entry.flags:#06x}"
            )
        data_offset = pos + _LOCAL.size + name_len + extra_len
        described = (crc, csize, usize)
        if zip64 is not None or 0xFFFFFFFF in (csize, usize):
            usize, csize = _widen(archive, entry.name, zip64, (usize, csize))
            described = (crc, csize, usize)
        expected = (entry.crc, entry.compressed_size, entry.file_size)
        pos = data_offset + entry.compressed_size
        if flags & _FLAG_DESCRIPTOR:
            if described not in (expected, (0, 0, 0)):
                raise ArchiveError(
                    f"{archive}: the local header of {entry.name!r} disagrees with the central directory"
                )
            pos = _data_descriptor(archive, data, entry, pos, cd_offset, wide=zip64 is not None)
        elif described != expected:
            raise ArchiveError(
                f"{archive}: the local header of {entry.name!r} gives CRC/sizes {described}, the central "
                f"directory {expected}; readers would disagree about the member's bytes"
            )
        if pos > cd_offset:
            raise ArchiveError(f"{archive}: member {entry.name!r} runs into the central directory")
        entries[i] = ZipEntry(
            entry.name, entry.flags, entry.method, entry.crc, entry.compressed_size, entry.file_size,
            entry.external_attr, entry.header_offset, data_offset,
        )  # fmt: skip
    if pos != cd_offset:
        raise ArchiveError(
            f"{archive}: {cd_offset - pos} bytes after the last member belong to no member the central "
            "directory lists (a hidden local entry?)"
        )


def _data_descriptor(archive: str, data: bytes, entry: ZipEntry, pos: int, limit: int, *, wide: bool) -> int:
    fmt = "<L2Q" if wide else "<3L"
    size = struct.calcsize(fmt)
    expected = (entry.crc, entry.compressed_size, entry.file_size)
    signed = data[pos : pos + 4] == b"PK\x07\x08" and pos + 4 + size <= limit
    if signed and struct.unpack_from(fmt, data, pos + 4) == expected:
        return pos + 4 + size
    if pos + size <= limit and struct.unpack_from(fmt, data, pos) == expected:
        return pos + size
    raise ArchiveError(
        f"{archive}: the data descriptor of {entry.name!r} disagrees with the central directory"
    )


def _check_names(archive: str, entries: list[ZipEntry]) -> None:
    names: set[str] = set()
    folded: dict[str, str] = {}
    for entry in entries:
        check_member_name(archive, entry.name)
        canonical = str(PurePosixPath(entry.name)) + ("/" if entry.is_dir() else "")
        if canonical != entry.name:
            raise ArchiveError(
                f"{archive}: member {entry.name!r} is not a canonical path (empty or '.' segments); write "
                f"{canonical!r}"
            )
        if entry.name in names:
            raise ArchiveError(f"{archive}: member {entry.name!r} appears twice")
        names.add(entry.name)
        key = unicodedata.normalize("NFC", entry.name.rstrip("/")).casefold()
        if folded.setdefault(key, entry.name) != entry.name and not entry.is_dir():
            raise ArchiveError(
                f"{archive}: members {folded[key]!r} and {entry.name!r} differ only in case or Unicode "
                "normalisation; on Windows and macOS one would overwrite the other"
            )
        if entry.is_dir() and entry.file_size:
            raise ArchiveError(f"{archive}: directory member {entry.name!r} holds data")


def entry_chunks(archive: str, data: bytes, entry: ZipEntry) -> Iterator[bytes]:
    """The member's bytes, ``CHUNK`` at most at a time; never more than it declares (so a bomb costs no
    more than its declared size); checks the size, the CRC, and that a deflate stream ends with the entry."""
    raw = memoryview(data)[entry.data_offset : entry.data_offset + entry.compressed_size]
    what = f"{archive}: member {entry.name!r}"
    crc, produced = 0, 0

    def account(out: bytes) -> bytes:
        nonlocal crc, produced
        produced += len(out)
        if produced > entry.file_size:
            raise ArchiveError(f"{what} produces more than the {entry.file_size} bytes it declares")
        crc = zlib.crc32(out, crc)
        return out

    if entry.method == _STORED:
        if entry.compressed_size != entry.file_size:
            raise ArchiveError(f"{what} is stored, but its compressed and real sizes differ")
        for at in range(0, len(raw), CHUNK):
            yield account(bytes(raw[at : at + CHUNK]))
    else:
        inflate = zlib.decompressobj(-15)
        try:
            for at in range(0, len(raw), CHUNK):
                pending = bytes(raw[at : at + CHUNK])
                while pending and not inflate.eof:
                    out = inflate.decompress(pending, CHUNK)
                    pending = inflate.unconsumed_tail
                    if out:
                        yield account(out)
                if inflate.eof and (pending or inflate.unused_data or at + CHUNK < len(raw)):
                    raise ArchiveError(
                        f"{what}: its deflate stream ends before the member does; a streaming reader would "
                        "look for the next member inside it"
                    )
            while not inflate.eof:
                out = inflate.decompress(b"", CHUNK)
                if not out:
                    break
                yield account(out)
        except zlib.error as exc:
            raise ArchiveError(f"{what} is not valid deflate data: {exc}") from None
        if not inflate.eof:
            raise ArchiveError(f"{what}: its deflate stream is truncated")
    if produced != entry.file_size:
        raise ArchiveError(f"{what} is shorter than declared")
    if crc != entry.crc:
        raise ArchiveError(f"{what} fails its CRC check")


# --- names -------------------------------------------------------------------------------------------------
def check_member_name(archive: str, name: str) -> PurePosixPath:
    """A relative POSIX path without '..', control characters or backslashes; raises ``ArchiveError``."""
    if not name or "\\" in name or _NAME_CONTROL.search(name):
        raise ArchiveError(f"{archive}: member name {name!r} contains NUL, control or backslash characters")
    if len(name) > MAX_MEMBER_NAME:
        raise ArchiveError(
            f"{archive}: member name {name[:60]!r}… is longer than {MAX_MEMBER_NAME} characters"
        )
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ArchiveError(
            f"{archive}: member {name!r} has an absolute path; archives must use relative paths"
        )
    path = PurePosixPath(name)
    if ".." in path.parts:
        raise ArchiveError(
            f"{archive}: member {name!r} contains '..'; archives may not point outside themselves"
        )
    return path


def is_bytecode(path: PurePosixPath) -> bool:
    """Compiled Python in any form: ``*.pyc``/``*.pyo`` or a ``__pycache__`` directory, in any case
    (a case-insensitive file system imports ``X.PYC`` too). The content hash skips these, so a package
    that ships them could run code no hash, sdist comparison or source view covers."""
    return path.suffix.lower() in (".pyc", ".pyo") or any(p.lower() == "__pycache__" for p in path.parts)


def is_native_code(path: PurePosixPath) -> bool:
    """An extension module or shared library (``.so`` with any ABI tag such as
    ``.cpython-311-x86_64-linux-gnu.so`` or ``.abi3.so``, ``.pyd``, ``.dll``, ``.dylib``, ``libx.so.1``),
    in any case: ``import pkg`` runs ``pkg/__init__.<tag>.so`` instead of the checked ``__init__.py``."""
    name = path.name.lower()
    return name.endswith(_NATIVE_SUFFIXES) or bool(_VERSIONED_LIBRARY.search(name))


def compiled_code_problem(path: PurePosixPath) -> str | None:
    """Why ``path`` may not be in an environment package, if it is compiled code."""
    if is_bytecode(path):
        return (
            "compiled bytecode; environment packages hold sources only (the content hash, the sdist "
            "comparison and the source view cover sources, and installers prefer a __pycache__ file over its "
            "source): leave *.pyc, *.pyo and __pycache__/ out of the build"
        )
    if is_native_code(path):
        return (
            "native code (an extension module or shared library); environment packages hold sources only, "
            "and Python imports a .so/.pyd before the .py beside it, so it would run code no check has seen: "
            "leave compiled files out, and depend on a published package that ships them instead"
        )
    return None


def metadata_text(where: str, raw: bytes) -> str:
    """Metadata as text: UTF-8 (core metadata 2.1+) without control characters (PostgreSQL cannot store
    NUL, and no field needs one)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"{where}: core metadata is not UTF-8 (byte {exc.start})") from None
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise ArchiveError(
            f"{where}: core metadata line {line} holds the control character U+{ord(bad.group()):04X}; "
            "remove it from the README or the field"
        )
    return text


# --- the wheel ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WheelContents:
    name: str  # PEP 503 normalised
    version: Version
    module: str
    metadata: bytes
    content_hash: str
    #: module-relative path -> (size, sha256) of every hashed file
    module_files: dict[str, tuple[int, str]]


def _wheel_layout(filename: str, names: list[PurePosixPath], module: str, dist_info: str) -> None:
    """PEP 427 layout restricted to the environment: ``<module>/`` or ``<module>.py`` plus one
    ``.dist-info``; anything else at the root (a .pth, sitecustomize, a shadowing package, .data) would be
    installed next to it into site-packages."""
    if not any(is_module_file(str(p), module) for p in names):
        raise ArchiveError(
            f"the wheel {filename} has no module {module!r} (expected {module}/ or {module}.py at its root)"
        )
    for path in names:
        head = path.parts[0]
        if head == dist_info or (head == module and len(path.parts) > 1) or str(path) == f"{module}.py":
            continue
        if head.endswith(".data"):
            why = "a .data directory installs files outside the package (scripts, headers, data)"
        elif head.endswith(".pth"):
            why = "a .pth file runs code at every interpreter start"
        elif head in ("sitecustomize.py", "usercustomize.py"):
            why = "it runs at every interpreter start"
        else:
            why = "it would install another top-level module or package next to the environment"
        raise ArchiveError(
            f"{filename}: {str(path)!r} is not part of the import package {module!r} or its "
            f"{dist_info}; {why}. Wheels may hold only the environment's package and .dist-info"
        )


def _read_capped(chunks: Iterator[bytes], cap: int, what: str) -> bytes:
    parts: list[bytes] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > cap:
            raise ArchiveError(f"{what} is larger than {cap} bytes, the most that is read for it", 413)
        parts.append(chunk)
    return b"".join(parts)


def inspect_wheel(
    filename: str,
    data: bytes,
    *,
    max_members: int,
    max_metadata_size: int,
    max_unpacked_size: int,
) -> WheelContents:
    """Check every rule of the module docstring and read the wheel's METADATA and content hash. No member
    may produce more than it declares, so refusing a declared total above ``max_unpacked_size`` bounds
    the work. Raises ``ArchiveError``."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise ArchiveError(f"invalid wheel filename: {exc}") from None
    module = module_name(name)
    entries = read_zip(filename, data, max_members=max_members)
    if sum(e.file_size for e in entries) > max_unpacked_size:
        raise ArchiveError(
            f"{filename} unpacks to more than {max_unpacked_size} bytes (max_unpacked_size); make the "
            "package smaller",
            413,
        )
    paths: list[PurePosixPath] = []
    dist_infos: set[str] = set()
    for entry in entries:
        path = PurePosixPath(entry.name)
        mode = entry.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveError(f"{filename}: member {entry.name!r} is a symlink; wheels may not hold links")
        if mode and stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ArchiveError(f"{filename}: member {entry.name!r} is a device, FIFO or other special file")
        problem = compiled_code_problem(path)
        if problem is not None:
            raise ArchiveError(f"{filename}: {entry.name!r} is {problem}")
        paths.append(path)
        if path.parts[0].endswith(".dist-info"):
            dist_infos.add(path.parts[0])
    if len(dist_infos) != 1:
        raise ArchiveError(
            f"{filename} must contain exactly one .dist-info directory, found {len(dist_infos)}"
        )
    dist_info = dist_infos.pop()
    di_name, _, di_version = dist_info[: -len(".dist-info")].partition("-")
    try:
        same = canonicalize_name(di_name) == name and Version(di_version) == version
    except ValueError:
        same = False
    if not same:  # PEP 427: {distribution}-{version}.dist-info
        raise ArchiveError(f"{filename}: {dist_info} does not match the wheel's name and version")
    names = {e.name for e in entries}
    for required in ("METADATA", "WHEEL", "RECORD"):
        if f"{dist_info}/{required}" not in names:
            raise ArchiveError(f"{filename} has no {dist_info}/{required}; build it with `python -m build`")
    _wheel_layout(filename, paths, module, dist_info)
    hasher = ContentHasher()
    module_files: dict[str, tuple[int, str]] = {}
    files: dict[str, tuple[int, str]] = {}  # every file: (size, sha256), for RECORD
    kept = {  # the members read whole, with their caps
        f"{dist_info}/METADATA": max_metadata_size,
        f"{dist_info}/RECORD": MAX_RECORD,
        f"{dist_info}/entry_points.txt": MAX_ENTRY_POINTS,
    }
    held: dict[str, bytes] = {}
    for entry in sorted(entries, key=lambda e: e.name.encode()):  # sorted, as the content hash wants
        if entry.is_dir():
            continue
        sha = hashlib.sha256()
        chunks = _tracked(entry_chunks(filename, data, entry), sha)
        if entry.name in kept:
            held[entry.name] = _read_capped(chunks, kept[entry.name], f"{filename}: {entry.name}")
        elif is_module_file(entry.name, module):
            try:
                hasher.add(entry.name, entry.file_size, chunks)
            except ValueError as exc:
                raise ArchiveError(f"{filename}: {exc}") from None
        else:
            for _ in chunks:
                pass
        files[entry.name] = (entry.file_size, sha.hexdigest())
        if is_module_file(entry.name, module):
            module_files[entry.name] = files[entry.name]
    record = f"{dist_info}/RECORD"
    _check_record(f"{filename}: {record}", held[record], files, record)
    entry_points = held.get(f"{dist_info}/entry_points.txt")
    if entry_points is not None:
        check_entry_points(f"{filename}: {dist_info}/entry_points.txt", entry_points, str(name), module)
    metadata = held[f"{dist_info}/METADATA"]
    return WheelContents(str(name), version, module, metadata, hasher.hexdigest(), module_files)


def _tracked(chunks: Iterator[bytes], sha: hashlib._Hash) -> Iterator[bytes]:
    for chunk in chunks:
        sha.update(chunk)
        yield chunk


def _b64_sha256(hexdigest: str) -> str:
    """The RECORD form of a sha256 (PEP 376: urlsafe base64 without padding)."""
    return base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def _check_record(where: str, record: bytes, files: dict[str, tuple[int, str]], own: str) -> None:
    """RECORD (PEP 376 / 427) lists exactly the wheel's files, each with its sha256 and size: an installer
    writes, and ``pip uninstall`` deletes, the paths it names, so a line such as ``../../../bin/pip``
    would delete the venv's pip."""
    try:
        rows = list(csv.reader(io.StringIO(record.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ArchiveError(f"{where} is not a UTF-8 CSV file: {exc}") from None
    listed: dict[str, tuple[str, str]] = {}
    for number, row in enumerate(rows, start=1):
        if not row:
            continue
        if len(row) != 3:
            raise ArchiveError(
                f"{where} line {number} has {len(row)} fields; RECORD lines are path,hash,size"
            )
        path, hashed, size = row
        if path in listed:
            raise ArchiveError(f"{where} lists {path!r} twice")
        listed[path] = (hashed, size)
    unlisted = sorted(set(files) - set(listed))
    if unlisted:
        raise ArchiveError(
            f"{where} does not list {unlisted[0]!r}; RECORD must list every file of the wheel "
            "(rebuild it with `python -m build`)"
        )
    foreign = sorted(set(listed) - set(files))
    if foreign:
        raise ArchiveError(
            f"{where} lists {foreign[0]!r}, which is not a file of the wheel; installers write and uninstall "
            "the paths RECORD names, so it must list exactly the wheel's files"
        )
    for path, (hashed, size) in listed.items():
        if path == own:  # RECORD cannot hold its own hash: both fields stay empty (PEP 376)
            if hashed or size:
                raise ArchiveError(f"{where}: its own line must leave hash and size empty")
            continue
        n, sha = files[path]
        if hashed != f"sha256={_b64_sha256(sha)}" or size != str(n):
            raise ArchiveError(
                f"{where}: the sha256 or size it gives for {path!r} ({hashed or 'none'}, {size or 'none'}) "
                f"is not the file's (sha256={_b64_sha256(sha)}, {n}); rebuild the wheel"
            )


_EP_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_EP_ENTRY = re.compile(
    rf"^([A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*=[ \t]*({_EP_IDENTIFIER})[ \t]*:[ \t]*{_EP_IDENTIFIER}$"
)


def check_entry_points(where: str, raw: bytes, name: str, module: str) -> None:
    """Only ``[verifiers.environments]``, declaring this environment and pointing into its package.

    ``console_scripts``/``gui_scripts`` install commands into the user's ``bin/`` (``pip = evil:run``
    replaces pip) and every other group is a plugin some other program loads; an environment entry naming
    another id would answer for that environment. The file is read strictly (no indented continuation
    lines, no control characters), so no installer's INI dialect can see a group this check did not.
    """
    text = metadata_text(where, raw)
    group: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if line[0].isspace():
            raise ArchiveError(
                f"{where} line {number} is indented; write one `name = module:function` a line"
            )
        if stripped.startswith("["):
            group = stripped[1:-1].strip() if stripped.endswith("]") else stripped
            if group != ENTRY_POINT_GROUP:
                raise ArchiveError(
                    f"{where} declares the entry-point group {stripped!r}; environment packages may declare "
                    f"only [{ENTRY_POINT_GROUP}]: console and GUI scripts would install commands into the "
                    "user's bin/ (one named pip replaces pip), and other groups are plugins other programs load"
                )
            continue
        match = _EP_ENTRY.match(stripped)
        if group is None or match is None:
            raise ArchiveError(
                f"{where} line {number} is not `name = module:function` under [{ENTRY_POINT_GROUP}]"
            )
        if canonicalize_name(match.group(1)) != name or match.group(2).split(".")[0] != module:
            raise ArchiveError(
                f"{where} line {number} declares {stripped!r}; an environment's wheel declares only itself: "
                f"`{name} = {module}:load_environment`"
            )
