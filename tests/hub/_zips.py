"""Zip archives written field by field, for the container rules (``verifiers.hub.wheel_rules``): every
header field, extra field, offset and gap is the test's to choose, which ``zipfile`` never allows.

``wheel_members`` gives the members of a valid ``demo-env`` wheel (``tests.hub._dists.Dist``) with a
RECORD over them; ``build_zip`` lays members out (local headers, data, optional data descriptors, the
central directory, optional zip64 records, the end record) with whatever lies a test asks for.
"""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from tests.hub._dists import Dist

DIST_INFO = "demo_env-0.1.0.dist-info"
WHEEL_NAME = "demo_env-0.1.0-py3-none-any.whl"
UNICODE_PATH, UNICODE_COMMENT, ZIP64 = 0x7075, 0x6375, 0x0001


@dataclass
class Member:
    name: str
    data: bytes
    method: int = zipfile.ZIP_DEFLATED
    flags: int = 0
    local_extra: bytes = b""
    central_extra: bytes = b""
    comment: bytes = b""
    #: Fields of the local header / central entry to write instead of the true ones:
    #: name (bytes), method, flags, crc, csize, usize (central also: external_attr).
    local: dict[str, Any] = field(default_factory=dict)
    central: dict[str, Any] = field(default_factory=dict)
    #: Sizes and CRC in a data descriptor after the data (flag bit 3; zeros in the local header).
    descriptor: bool = False
    #: The compressed bytes to store instead of compressing ``data``.
    compressed: bytes | None = None
    #: False: a local entry the central directory does not list.
    in_central: bool = True


def unicode_field(kind: int, header: bytes, text: bytes) -> bytes:
    """An Info-ZIP Unicode Path (0x7075) or Comment (0x6375) extra field: version 1, CRC of the header's
    name/comment, then the UTF-8 ``text`` readers that know the field use instead."""
    body = struct.pack("<BL", 1, zlib.crc32(header)) + text
    return struct.pack("<2H", kind, len(body)) + body


def extra_field(kind: int, body: bytes) -> bytes:
    return struct.pack("<2H", kind, len(body)) + body


def _compress(member: Member) -> bytes:
    if member.compressed is not None:
        return member.compressed
    if member.method == zipfile.ZIP_STORED:
        return member.data
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(member.data) + c.flush()


def build_zip(
    members: list[Member],
    *,
    prefix: bytes = b"",
    absolute_offsets: bool = True,
    gaps: dict[int, bytes] | None = None,
    before_central: bytes = b"",
    trailer: bytes = b"",
    comment: bytes = b"",
    eocd_count: int | None = None,
    zip64_count: int | None = None,
) -> bytes:
    """The archive. ``prefix`` goes before the first local header (offsets count it when
    ``absolute_offsets``, else they are relative to the archive, as zipfile tolerates); ``gaps[i]`` goes
    after member ``i``'s data; ``before_central`` between the last member and the central directory;
    ``trailer`` after the end record (``comment`` is the end record's own). ``eocd_count`` overrides the
    end record's entry counts; ``zip64_count`` writes zip64 end records with that count (the 16-bit end
    record fields then say 0xFFFF)."""
    out = io.BytesIO()
    out.write(prefix)
    base = 0 if absolute_offsets else len(prefix)
    central: list[bytes] = []
    for i, m in enumerate(members):
        name = m.name.encode()
        payload = _compress(m)
        crc = zlib.crc32(m.data)
        flags = m.flags | (0x8 if m.descriptor else 0) | (0x800 if not m.name.isascii() else 0)
        true = {"name": name, "method": m.method, "flags": flags, "crc": crc, "csize": len(payload),
                "usize": len(m.data)}  # fmt: skip
        local = {**true, **({"crc": 0, "csize": 0, "usize": 0} if m.descriptor else {}), **m.local}
        offset = out.tell() - base
        fields = (
            20,
            local["flags"],
            local["method"],
            0,
            0x5821,
            local["crc"],
            local["csize"],
            local["usize"],
        )
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, len(local["name"]), len(m.local_extra)))
        out.write(local["name"] + m.local_extra + payload)
        if m.descriptor:
            out.write(struct.pack("<4s3L", b"PK\x07\x08", crc, len(payload), len(m.data)))
        out.write((gaps or {}).get(i, b""))
        if not m.in_central:
            continue
        c = {**true, "external_attr": 0o100644 << 16, **m.central}
        head = (0x314, 20, c["flags"], c["method"], 0, 0x5821, c["crc"], c["csize"], c["usize"])
        lengths = (len(c["name"]), len(m.central_extra), len(m.comment), 0, 0)
        central.append(
            struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *head, *lengths, c["external_attr"], offset)
            + c["name"]
            + m.central_extra
            + m.comment
        )
    out.write(before_central)
    cd_offset = out.tell() - base
    for entry in central:
        out.write(entry)
    cd_size = out.tell() - base - cd_offset
    count = len(central) if eocd_count is None else eocd_count
    if zip64_count is not None:
        record = out.tell() - base
        out.write(
            struct.pack(
                "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, zip64_count, zip64_count, cd_size, cd_offset
            )
        )
        out.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, record, 1))
        count = 0xFFFF
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, cd_size, cd_offset, len(comment)))
    out.write(comment + trailer)
    return out.getvalue()


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def wheel_members(extra: dict[str, bytes] | None = None, *, dist: Dist | None = None) -> list[Member]:
    """The members of ``dist``'s (default ``Dist()``) wheel plus ``extra``, RECORD last, listing them all
    under their header names."""
    d = dist or Dist()
    with zipfile.ZipFile(io.BytesIO(d.wheel()[1])) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("/RECORD")}
    entries.update(extra or {})
    record = f"{d.stem}.dist-info/RECORD"
    lines = [record_line(p, data) for p, data in entries.items()] + [f"{record},,"]
    entries[record] = ("\n".join(lines) + "\n").encode()
    return [Member(p, data) for p, data in entries.items()]


def find(members: list[Member], name: str) -> Member:
    return next(m for m in members if m.name == name)


class Unseekable(io.RawIOBase):
    """A sink ``zipfile`` cannot seek in: it then writes data descriptors after each member."""

    def __init__(self, buf: io.BytesIO) -> None:
        self.buf = buf

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.buf.write(data)

    def flush(self) -> None:
        pass
