"""Static checks of an uploaded wheel + sdist, done in memory and without importing anything.

Every failure is an ``UploadError`` whose message says what to fix; the publish route turns it into a 4xx.
Every byte read from an archive goes through ``hub_server.bounded.BoundedReader``, which counts what the
streams actually produce, so the work and memory of one upload are bounded whatever its headers claim.
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from packaging.metadata import InvalidMetadata, Metadata
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from hub_server.bounded import BoundedReader, Budget, UploadError, chunks, digest, read_capped
from hub_server.readme import render_limited
from hub_server.source_check import MAX_SOURCE_SIZE, defines_load_environment
from verifiers.hub.packaging import ContentHasher, is_module_file, module_name

_FILENAME = re.compile(r"^[A-Za-z0-9._+-]{1,250}$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,49}$")
MAX_TAGS = 20


__all__ = ["ArchiveFile", "InspectedUpload", "Limits", "UploadError", "inspect_upload", "normalize_tags"]

# Fixed caps (warehouse's where it has one). They bound what one upload may make the hub hold.
MAX_MEMBER_NAME = 512  # characters of one archive member's path
MAX_MEMBER_HEADERS = 64 * 1024  # tar header bytes parsed per member (PAX records, long names, sparse maps)
MAX_ARCHIVE_HEADERS = 1024 * 1024  # PAX bytes kept over all members (tarfile keeps every TarInfo)
MAX_SUMMARY = 512  # warehouse: Summary is at most 512 characters
MAX_LINE_FIELD = 1024  # Author, Maintainer, their e-mails, Keywords (joined), one Requires-Dist, ...
MAX_REQUIRES = 100  # Requires-Dist entries
MAX_LIST_FIELD = 200  # Classifier / Project-URL / Provides-Extra entries
#: Header fields of METADATA / PKG-INFO: more than the caps above allow in total, far fewer than the
#: email parser's cost would bound (it is quadratic in distinct field names, so those are checked first).
MAX_METADATA_FIELDS = 1024
MAX_ZIP_EXTRA = 1024  # bytes of one central-directory entry's extra field (wheel tools write < 40)
MAX_ZIP_COMMENT = 1024  # bytes of one member's comment
MAX_RECORD = 4 * 1024 * 1024  # RECORD: one line per member
MAX_ENTRY_POINTS = 64 * 1024  # entry_points.txt
#: The one entry-point group a wheel on the hub may declare (contract 3.1): ``<name> = <module>:<attr>``.
ENTRY_POINT_GROUP = "verifiers.environments"
# zip compression methods whose decompression zipfile bounds by the requested length (bzip2 and LZMA
# produce everything one compressed block holds at once: a 76 KB LZMA member can make 928 MB).
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
# Core metadata fields (packaging knows each): any other name is refused before the email parser runs.
_METADATA_FIELDS = frozenset(
    {
        "metadata-version", "name", "version", "dynamic", "platform", "supported-platform", "summary",
        "description", "description-content-type", "keywords", "home-page", "download-url", "author",
        "author-email", "maintainer", "maintainer-email", "license", "license-expression", "license-file",
        "classifier", "requires-dist", "requires-python", "requires-external", "project-url",
        "provides-extra", "provides-dist", "obsoletes-dist", "requires", "provides", "obsoletes",
        "import-name", "import-namespace",
    }
)  # fmt: skip
_NEWLINE = re.compile(r"\r\n|\r|\n")  # the email parser's line ends
# A header line as the email parser (feedparser's headerRE) sees one: a field name (maybe empty), then ':'.
_HEADER_NAME = re.compile(r"^([\x21-\x39\x3b-\x7e]*):")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 controls and DEL; tab/CR/LF allowed
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Directories at an sdist's root that setuptools' flat-layout discovery never installs (its
# FlatLayoutPackageFinder.DEFAULT_EXCLUDE), so shipping them cannot put code next to the environment.
_SDIST_DIRS = frozenset(
    [
        "bin",
        "benchmark",
        "benchmarks",
        "build",
        "changelog",
        "ci",
        "debian",
        "dist",
        "doc",
        "docs",
        "documentation",
        "env",
        "example",
        "examples",
        "exercise",
        "exercises",
        "fabfile",
        "htmlcov",
        "manpages",
        "news",
        "newsfragments",
        "python",
        "requirements",
        "scripts",
        "site_scons",
        "tasks",
        "test",
        "tests",
        "tools",
        "unit_test",
        "unit_tests",
        "util",
        "utils",
        "venv",
    ]
)
# Python files at an sdist's root that setuptools' flat-layout discovery never installs as modules.
_SDIST_ROOT_FILE = re.compile(r"^(setup|conftest|noxfile|toxfile|pavement|dodo|tasks|fabfile|manage)\.py$")


@dataclass(frozen=True)
class Limits:
    max_file_size: int
    max_unpacked_size: int
    max_members: int
    max_readme_size: int

    @property
    def max_metadata_size(self) -> int:
        """METADATA / PKG-INFO hold the README plus headers."""
        return self.max_readme_size + 64 * 1024


@dataclass
class ArchiveFile:
    filename: str
    kind: str  # "bdist_wheel" | "sdist"
    data: bytes
    sha256: str


@dataclass
class InspectedUpload:
    """Everything the hub stores about a version, derived from the archives alone."""

    name: str  # PEP 503 normalised
    version: str  # PEP 440 normalised
    module: str
    wheel: ArchiveFile
    sdist: ArchiveFile
    content_hash: str
    summary: str
    readme: str
    readme_content_type: str
    readme_html: str  # rendered and sanitised once, here (``hub_server.readme``)
    requires_python: str | None
    dependencies: list[str]
    tags: list[str]
    core_metadata: bytes
    sdist_files: list[dict[str, object]] = field(default_factory=list)


def normalize_tags(raw: list[str]) -> list[str]:
    """Lower-case, de-duplicated tags; raises ``UploadError`` naming the first bad one."""
    out: list[str] = []
    for tag in raw:
        t = tag.strip().lower()
        if not t:
            continue
        if not _TAG.match(t):
            raise UploadError(
                f"invalid tag {tag!r}: use 1-50 characters a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
                422,
            )
        if t not in out:
            out.append(t)
    if len(out) > MAX_TAGS:
        raise UploadError(f"at most {MAX_TAGS} tags are allowed, got {len(out)}", 422)
    return out


def _check_member_name(archive: str, name: str) -> PurePosixPath:
    if not name or "\\" in name or _NAME_CONTROL.search(name):
        raise UploadError(f"{archive}: member name {name!r} contains NUL, control or backslash characters")
    if len(name) > MAX_MEMBER_NAME:
        raise UploadError(
            f"{archive}: member name {name[:60]!r}… is longer than {MAX_MEMBER_NAME} characters"
        )
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise UploadError(
            f"{archive}: member {name!r} has an absolute path; archives must use relative paths"
        )
    path = PurePosixPath(name)
    if ".." in path.parts:
        raise UploadError(
            f"{archive}: member {name!r} contains '..'; archives may not point outside themselves"
        )
    return path


def _text_metadata(archive: str, raw: bytes) -> str:
    """The core metadata as text: UTF-8 (core metadata 2.1+) without control characters, which
    PostgreSQL cannot store (NUL) and no field needs."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(f"{archive}: core metadata is not UTF-8 (byte {exc.start})") from None
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise UploadError(
            f"{archive}: core metadata line {line} holds the control character U+{ord(bad.group()):04X}; "
            "remove it from the README or the field"
        )
    return text


def _check_header_fields(archive: str, text: str) -> None:
    """Refuse unknown or too many header fields in one linear pass, before the email parser, whose
    time grows with the square of distinct field names (8,000 unknown fields: 7 s of CPU)."""
    fields = 0
    for number, line in enumerate(_NEWLINE.split(text), start=1):
        if not line:
            return  # the blank line that ends the headers
        if line[0] in " \t":
            continue  # a folded continuation of the previous field
        match = _HEADER_NAME.match(line)
        if match is None and not line.startswith("From "):
            return  # the parser ends the headers here too
        name = match.group(1) if match is not None else line[:4]  # "From " lines it keeps reading past
        if name.lower() not in _METADATA_FIELDS:
            raise UploadError(
                f"{archive}: core metadata line {number} has the unknown field {name[:60]!r}; only core "
                "metadata fields (packaging.python.org, 'Core metadata specifications') are accepted"
            )
        fields += 1
        if fields > MAX_METADATA_FIELDS:
            raise UploadError(f"{archive}: core metadata has more than {MAX_METADATA_FIELDS} fields", 413)


def _parse_metadata(archive: str, raw: bytes) -> Metadata:
    text = _text_metadata(archive, raw)
    _check_header_fields(archive, text)
    try:
        meta = Metadata.from_email(text, validate=True)
    except ExceptionGroup as group:
        problems = "; ".join(str(e) for e in group.exceptions)
        raise UploadError(f"{archive}: invalid core metadata: {problems}") from None
    except (InvalidMetadata, ValueError) as exc:
        raise UploadError(f"{archive}: invalid core metadata: {exc}") from None
    _check_fields(archive, meta)
    return meta


def _check_fields(archive: str, meta: Metadata) -> None:
    if meta.version.local is not None:
        raise UploadError(
            f"{archive}: the local version {meta.version} cannot be published; local versions ('+…') are "
            "for builds kept off indexes (PEP 440; PyPI refuses them too)"
        )
    summary = meta.summary or ""
    if len(summary) > MAX_SUMMARY or "\n" in summary or "\r" in summary:
        raise UploadError(f"{archive}: Summary must be one line of at most {MAX_SUMMARY} characters")
    singles = {
        "Author": meta.author,
        "Author-email": meta.author_email,
        "Maintainer": meta.maintainer,
        "Maintainer-email": meta.maintainer_email,
        "Home-page": meta.home_page,
        "Download-URL": meta.download_url,
        "Keywords": ",".join(meta.keywords or []),
    }
    for field_name, value in singles.items():
        if value is not None and len(value) > MAX_LINE_FIELD:
            raise UploadError(f"{archive}: {field_name} is longer than {MAX_LINE_FIELD} characters")
    requires = meta.requires_dist or []
    if len(requires) > MAX_REQUIRES:
        raise UploadError(
            f"{archive}: {len(requires)} Requires-Dist entries; the hub takes at most {MAX_REQUIRES}"
        )
    for req in requires:
        if len(str(req)) > MAX_LINE_FIELD:
            raise UploadError(f"{archive}: a Requires-Dist entry is longer than {MAX_LINE_FIELD} characters")
    lists: dict[str, list[object]] = {
        "Classifier": list(meta.classifiers or []),
        "Project-URL": list((meta.project_urls or {}).items()),
        "Provides-Extra": list(meta.provides_extra or []),
    }
    for field_name, values in lists.items():
        if len(values) > MAX_LIST_FIELD or any(len(str(v)) > MAX_LINE_FIELD for v in values):
            raise UploadError(
                f"{archive}: {field_name} takes at most {MAX_LIST_FIELD} entries of {MAX_LINE_FIELD} characters"
            )


class _CheckedTarInfo(tarfile.TarInfo):
    """Refuses GNU sparse members before tarfile expands their map (``_proc_member`` is tarfile's
    documented hook for subclasses); PAX sparse members are refused by ``issparse`` below."""

    def _proc_member(self, tf: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise UploadError(f"member {self.name!r} is a sparse file; sdists may only hold regular files")
        return super()._proc_member(tf)  # type: ignore[misc, no-any-return]


@dataclass
class _Sdist:
    name: str
    version: Version
    pkg_info: bytes
    sources: dict[str, bytes]  # the candidate entry modules (inner path -> bytes)
    module_files: dict[str, tuple[int, str]]  # module-relative path -> (size, sha256), per the hash rules
    listing: list[dict[str, object]]


def _sdist_path_allowed(inner: PurePosixPath, module: str) -> bool:
    """Files outside the import package only where a wheel build could not install them."""
    head = inner.parts[0]
    if len(inner.parts) == 1:  # only Python files at the root can become installed modules
        code = head.endswith((".py", ".pth", ".so", ".pyd"))
        return not code or bool(_SDIST_ROOT_FILE.match(head)) or head == f"{module}.py"
    if head in (module, *_SDIST_DIRS) or head.endswith(".egg-info") or head[0] in "._":
        return True
    if head == "src":
        sub = inner.parts[1]
        return sub in (module, f"{module}.py") or sub.endswith(".egg-info")
    return False


def _inspect_sdist(filename: str, data: bytes, limits: Limits) -> _Sdist:
    if not filename.endswith(".tar.gz"):
        raise UploadError(f"sdist {filename!r} must be a .tar.gz file (PEP 625)")
    try:
        name, version = parse_sdist_filename(filename)
    except InvalidSdistFilename as exc:
        raise UploadError(f"invalid sdist filename: {exc}") from None
    module = module_name(name)  # its own; inspect_upload then checks every name agrees
    top = filename[: -len(".tar.gz")]
    candidates = {f"{module}/__init__.py", f"{module}.py", f"src/{module}/__init__.py", f"src/{module}.py"}
    stream = BoundedReader(
        gzip.GzipFile(fileobj=io.BytesIO(data)),
        Budget(filename, limits.max_unpacked_size),
        header_cap=MAX_MEMBER_HEADERS,
    )
    pkg_info: bytes | None = None
    sources: dict[str, bytes] = {}
    hashed: dict[str, dict[str, tuple[int, str]]] = {"": {}, "src/": {}}
    listing: list[dict[str, object]] = []
    seen: set[str] = set()
    pax_bytes = 0
    try:
        # Not stream mode ("r|"): tarfile then reads each PAX record with one read() the reader can cap.
        with tarfile.TarFile(fileobj=stream, mode="r", tarinfo=_CheckedTarInfo) as tar:  # type: ignore[arg-type]
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
                pax_bytes += sum(len(k) + len(v) for k, v in member.pax_headers.items())
                if pax_bytes > MAX_ARCHIVE_HEADERS:
                    raise UploadError(f"{filename}: PAX headers exceed {MAX_ARCHIVE_HEADERS} bytes", 413)
                path = _check_member_name(filename, member.name)
                if member.issparse():
                    raise UploadError(
                        f"{filename}: member {member.name!r} is a sparse file; sdists may only hold regular "
                        "files and directories"
                    )
                if member.issym() or member.islnk():
                    raise UploadError(
                        f"{filename}: member {member.name!r} is a link; sdists may only hold regular files "
                        "and directories"
                    )
                if not (member.isfile() or member.isdir()):
                    raise UploadError(
                        f"{filename}: member {member.name!r} is a device, FIFO or other special file"
                    )
                if path.parts[0] != top:
                    raise UploadError(
                        f"{filename}: member {member.name!r} is outside the top-level directory {top + '/'!r}"
                    )
                key = str(path)
                if key in seen and member.isfile():
                    raise UploadError(f"{filename}: member {member.name!r} appears twice")
                seen.add(key)
                if len(path.parts) > 1 and not _sdist_path_allowed(PurePosixPath(*path.parts[1:]), module):
                    raise UploadError(
                        f"{filename}: {member.name!r} is outside the import package {module!r}; an sdist may "
                        "add only pyproject.toml, PKG-INFO, README/LICENSE files and directories a wheel build "
                        "does not install (tests/, docs/, …)"
                    )
                if not member.isfile():
                    stream.start_member()
                    continue
                inner = str(PurePosixPath(*path.parts[1:]))
                if _is_bytecode(PurePosixPath(inner)) and inner.removeprefix("src/").startswith(f"{module}/"):
                    raise UploadError(
                        f"{filename}: {member.name!r} is compiled bytecode inside the import package; a build "
                        "could install it beside (and run it instead of) its source: leave it out"
                    )
                listing.append({"path": inner, "size": member.size})
                with stream.member_data():
                    f = tar.extractfile(member)
                    assert f is not None  # a regular file
                    if inner == "PKG-INFO":
                        pkg_info = read_capped(f, limits.max_metadata_size, f"{filename}: PKG-INFO")
                    elif inner in candidates:
                        sources[inner] = read_capped(f, MAX_SOURCE_SIZE, f"{filename}: {inner}")
                    for prefix, files in hashed.items():
                        rel = inner[len(prefix) :] if inner.startswith(prefix) else ""
                        if rel and is_module_file(rel, module):
                            raw = sources.get(inner)
                            files[rel] = (
                                (len(raw), hashlib.sha256(raw).hexdigest()) if raw is not None else digest(f)
                            )
                stream.start_member()
    except UploadError as exc:  # from the reader or _CheckedTarInfo: say which file
        if exc.message.startswith(filename):
            raise
        raise UploadError(f"{filename}: {exc.message}", exc.status_code) from None
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise UploadError(f"{filename} is not a valid gzip file: {exc}") from None
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise UploadError(f"{filename} is not a valid tar archive: {exc}") from None
    if pkg_info is None:
        raise UploadError(f"{filename} has no {top}/PKG-INFO; build it with `python -m build --sdist`")
    listing.sort(key=lambda f: str(f["path"]))
    files = hashed[""] or hashed["src/"]
    return _Sdist(str(name), version, pkg_info, sources, files, listing)


@dataclass
class _Wheel:
    name: str
    version: Version
    metadata: bytes
    content_hash: str
    module_files: dict[str, tuple[int, str]]


def _zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: Budget, archive: str) -> BoundedReader:
    return BoundedReader(zf.open(info), budget, what=f"{archive}: {info.filename}")


def _tracked(stream: BoundedReader, sha: hashlib._Hash) -> Iterator[bytes]:
    for data in chunks(stream):
        sha.update(data)
        yield data


def _wheel_layout(filename: str, names: list[PurePosixPath], module: str, dist_info: str) -> None:
    """PEP 427 layout restricted to the environment: ``<module>/`` or ``<module>.py`` plus one
    ``.dist-info``; anything else at the root (a .pth, sitecustomize, a shadowing package, .data) would be
    installed next to it into site-packages."""
    if not any(is_module_file(str(p), module) for p in names):
        raise UploadError(
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
        raise UploadError(
            f"{filename}: {str(path)!r} is not part of the import package {module!r} or its "
            f"{dist_info}; {why}. Wheels may hold only the environment's package and .dist-info"
        )


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory: sig, disks, entries, cd size/offset, comment
_ZIP64_LOCATOR = struct.Struct("<4sLQL")  # only its size and signature matter
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central-directory entry (46 bytes), as zipfile reads it


def _central_directory(filename: str, data: bytes, limits: Limits) -> None:
    """Walk the central directory the way ``zipfile`` will, before it builds a ``ZipInfo`` per entry,
    and refuse what would cost it (or the reads after it) more than the caps: too many entries, large
    extra fields (``zipfile`` parses them in time quadratic in their length), long comments, compression
    methods other than stored and deflate, encryption."""
    bad = UploadError(f"{filename} is not a valid zip archive: no readable central directory")
    at = len(data) - _EOCD.size  # zipfile's order: a record without comment at the very end, else the
    if at < 0 or data[at : at + 4] != b"PK\x05\x06" or data[-2:] != b"\0\0":  # last one before it
        at = data.rfind(b"PK\x05\x06", max(0, len(data) - _EOCD.size - 0xFFFF))
    if at < 0 or at + _EOCD.size > len(data):
        raise bad
    _sig, _disk, _cd_disk, _n_disk, _n_total, cd_size, cd_offset, _comment = _EOCD.unpack_from(data, at)
    record = at
    locator = at - _ZIP64_LOCATOR.size
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        record = locator - _ZIP64_EOCD.size  # zipfile reads it right before the locator
        if record < 0 or data[record : record + 4] != b"PK\x06\x06":
            raise bad
        fields = _ZIP64_EOCD.unpack_from(data, record)
        cd_size, cd_offset = fields[-2], fields[-1]
    start = record - cd_size  # zipfile allows data before the archive (cd_offset is then smaller)
    if start < 0 or cd_offset > start:
        raise bad
    pos, end, entries = start, record, 0
    while pos < end:
        if pos + _CENTRAL.size > end or data[pos : pos + 4] != b"PK\x01\x02":
            raise bad
        entry = _CENTRAL.unpack_from(data, pos)
        flags, method, name_len, extra_len, comment_len = entry[5], entry[6], entry[12], entry[13], entry[14]
        name = data[pos + _CENTRAL.size : pos + _CENTRAL.size + name_len].decode("utf-8", "replace")
        entries += 1
        if entries > limits.max_members:
            raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
        if extra_len > MAX_ZIP_EXTRA or comment_len > MAX_ZIP_COMMENT:
            raise UploadError(
                f"{filename}: member {name!r} has a {extra_len}-byte extra field and a {comment_len}-byte "
                f"comment; the hub takes at most {MAX_ZIP_EXTRA} and {MAX_ZIP_COMMENT} (wheel tools write "
                "a few dozen bytes)",
                413,
            )
        if flags & 0x1:
            raise UploadError(f"{filename}: member {name!r} is encrypted; wheels hold plain files")
        if method not in _ZIP_METHODS:
            raise UploadError(
                f"{filename}: member {name!r} uses zip compression method {method}; the hub accepts only "
                "stored and deflate members, the methods wheel tools write (rebuild with `python -m build`)"
            )
        pos += _CENTRAL.size + name_len + extra_len + comment_len
    if pos != end:
        raise bad


def _is_bytecode(path: PurePosixPath) -> bool:
    """Compiled Python in any form: ``*.pyc``/``*.pyo`` or a ``__pycache__`` directory, in any case
    (a case-insensitive file system imports ``X.PYC`` too). The content hash skips these, so a wheel
    that ships them could run code no hash, sdist comparison or source view covers."""
    return path.suffix.lower() in (".pyc", ".pyo") or any(p.lower() == "__pycache__" for p in path.parts)


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
        raise UploadError(f"{where} is not a UTF-8 CSV file: {exc}") from None
    listed: dict[str, tuple[str, str]] = {}
    for number, row in enumerate(rows, start=1):
        if not row:
            continue
        if len(row) != 3:
            raise UploadError(f"{where} line {number} has {len(row)} fields; RECORD lines are path,hash,size")
        path, hashed, size = row
        if path in listed:
            raise UploadError(f"{where} lists {path!r} twice")
        listed[path] = (hashed, size)
    unlisted = sorted(set(files) - set(listed))
    if unlisted:
        raise UploadError(
            f"{where} does not list {unlisted[0]!r}; RECORD must list every file of the wheel "
            "(rebuild it with `python -m build`)"
        )
    foreign = sorted(set(listed) - set(files))
    if foreign:
        raise UploadError(
            f"{where} lists {foreign[0]!r}, which is not a file of the wheel; installers write and uninstall "
            "the paths RECORD names, so it must list exactly the wheel's files"
        )
    for path, (hashed, size) in listed.items():
        if path == own:  # RECORD cannot hold its own hash: both fields stay empty (PEP 376)
            if hashed or size:
                raise UploadError(f"{where}: its own line must leave hash and size empty")
            continue
        n, sha = files[path]
        if hashed != f"sha256={_b64_sha256(sha)}" or size != str(n):
            raise UploadError(
                f"{where}: the sha256 or size it gives for {path!r} ({hashed or 'none'}, {size or 'none'}) "
                f"is not the file's (sha256={_b64_sha256(sha)}, {n}); rebuild the wheel"
            )


_EP_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_EP_ENTRY = re.compile(
    rf"^([A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*=[ \t]*({_EP_IDENTIFIER})[ \t]*:[ \t]*{_EP_IDENTIFIER}$"
)


def _check_entry_points(where: str, raw: bytes, name: str, module: str) -> None:
    """Only ``[verifiers.environments]``, declaring this environment and pointing into its package.

    ``console_scripts``/``gui_scripts`` install commands into the user's ``bin/`` (``pip = evil:run``
    replaces pip) and every other group is a plugin some other program loads; an environment entry naming
    another id would answer for that environment. The file is read strictly (no indented continuation
    lines, no control characters), so no installer's INI dialect can see a group this check did not.
    """
    text = _text_metadata(where, raw)
    group: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if line[0].isspace():
            raise UploadError(f"{where} line {number} is indented; write one `name = module:function` a line")
        if stripped.startswith("["):
            group = stripped[1:-1].strip() if stripped.endswith("]") else stripped
            if group != ENTRY_POINT_GROUP:
                raise UploadError(
                    f"{where} declares the entry-point group {stripped!r}; wheels on the hub may declare only "
                    f"[{ENTRY_POINT_GROUP}]: console and GUI scripts would install commands into the "
                    "user's bin/ (one named pip replaces pip), and other groups are plugins other programs load"
                )
            continue
        match = _EP_ENTRY.match(stripped)
        if group is None or match is None:
            raise UploadError(
                f"{where} line {number} is not `name = module:function` under [{ENTRY_POINT_GROUP}]"
            )
        if canonicalize_name(match.group(1)) != name or match.group(2).split(".")[0] != module:
            raise UploadError(
                f"{where} line {number} declares {stripped!r}; an environment's wheel declares only itself: "
                f"`{name} = {module}:load_environment`"
            )


def _inspect_wheel(filename: str, data: bytes, limits: Limits) -> _Wheel:
    """Name, version, METADATA and module hash of a wheel, after checking every member."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise UploadError(f"invalid wheel filename: {exc}") from None
    module = module_name(name)
    _central_directory(filename, data, limits)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UploadError(f"{filename} is not a valid zip archive: {exc}") from None
    budget = Budget(filename, limits.max_unpacked_size)
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
        declared = 0
        names: set[str] = set()
        folded: dict[str, str] = {}
        paths: list[PurePosixPath] = []
        dist_infos: set[str] = set()
        for info in infos:
            path = _check_member_name(filename, info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UploadError(
                    f"{filename}: member {info.filename!r} is a symlink; wheels may not hold links"
                )
            if mode and stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UploadError(
                    f"{filename}: member {info.filename!r} is a device, FIFO or other special file"
                )
            if info.compress_type not in _ZIP_METHODS:  # _central_directory saw the same entries
                raise UploadError(f"{filename}: member {info.filename!r} is neither stored nor deflated")
            if info.filename in names:
                raise UploadError(f"{filename}: member {info.filename!r} appears twice")
            names.add(info.filename)
            key = info.filename.rstrip("/").lower()
            if folded.setdefault(key, info.filename) != info.filename and not info.is_dir():
                raise UploadError(
                    f"{filename}: members {folded[key]!r} and {info.filename!r} differ only in case; on "
                    "Windows and macOS one would overwrite the other"
                )
            if _is_bytecode(path):
                raise UploadError(
                    f"{filename}: {info.filename!r} is compiled bytecode; wheels on the hub hold sources only "
                    "(the content hash, the sdist comparison and the source view cover sources, and "
                    "installers prefer a __pycache__ file over its source): leave *.pyc, *.pyo and "
                    "__pycache__/ out of the build"
                )
            paths.append(path)
            declared += info.file_size
            if declared > limits.max_unpacked_size:  # cheap early refusal; the budget counts real bytes
                budget.take(declared)
            if path.parts[0].endswith(".dist-info"):
                dist_infos.add(path.parts[0])
        if len(dist_infos) != 1:
            raise UploadError(
                f"{filename} must contain exactly one .dist-info directory, found {len(dist_infos)}"
            )
        dist_info = dist_infos.pop()
        stem = dist_info[: -len(".dist-info")]
        di_name, _, di_version = stem.partition("-")
        try:
            same = canonicalize_name(di_name) == name and Version(di_version) == version
        except ValueError:
            same = False
        if not same:  # PEP 427: {distribution}-{version}.dist-info
            raise UploadError(f"{filename}: {dist_info} does not match the wheel's name and version")
        for required in ("METADATA", "WHEEL", "RECORD"):
            if f"{dist_info}/{required}" not in names:
                raise UploadError(
                    f"{filename} has no {dist_info}/{required}; build it with `python -m build`"
                )
        _wheel_layout(filename, paths, module, dist_info)
        hasher = ContentHasher()
        module_files: dict[str, tuple[int, str]] = {}
        files: dict[str, tuple[int, str]] = {}  # every file: (size, sha256), for RECORD
        kept = {  # the members the hub reads whole, with their caps
            f"{dist_info}/METADATA": limits.max_metadata_size,
            f"{dist_info}/RECORD": MAX_RECORD,
            f"{dist_info}/entry_points.txt": MAX_ENTRY_POINTS,
        }
        held: dict[str, bytes] = {}
        try:
            # Sorted, as the content hash wants; reading every member to its end also checks its CRC.
            for info in sorted(infos, key=lambda i: i.filename.encode()):
                if info.is_dir():
                    continue
                stream = _zip_member(zf, info, budget, filename)
                if is_module_file(info.filename, module):
                    sha = hashlib.sha256()
                    hasher.add(info.filename, info.file_size, _tracked(stream, sha))
                    files[info.filename] = module_files[info.filename] = (info.file_size, sha.hexdigest())
                elif info.filename in kept:
                    raw = read_capped(stream, kept[info.filename], f"{filename}: {info.filename}")
                    held[info.filename] = raw
                    files[info.filename] = (len(raw), _sha256(raw))
                else:
                    files[info.filename] = digest(stream)
                if files[info.filename][0] != info.file_size:
                    raise UploadError(f"{filename}: member {info.filename!r} is shorter than declared")
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise UploadError(f"{filename} is not a valid zip archive: {exc}") from None
        except ValueError as exc:  # ContentHasher: a member produced other than its declared size
            raise UploadError(f"{filename}: {exc}") from None
    record = f"{dist_info}/RECORD"
    _check_record(f"{filename}: {record}", held[record], files, record)
    entry_points = held.get(f"{dist_info}/entry_points.txt")
    if entry_points is not None:
        _check_entry_points(f"{filename}: {dist_info}/entry_points.txt", entry_points, str(name), module)
    metadata = held[f"{dist_info}/METADATA"]
    return _Wheel(str(name), version, metadata, hasher.hexdigest(), module_files)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inspect_upload(
    *,
    expected_name: str,
    wheel_filename: str,
    wheel_data: bytes,
    sdist_filename: str,
    sdist_data: bytes,
    limits: Limits,
    declared_content_hash: str | None = None,
) -> InspectedUpload:
    """Validate a wheel + sdist pair for ``expected_name`` and extract what the hub stores."""
    for fname, data, kind in ((wheel_filename, wheel_data, "wheel"), (sdist_filename, sdist_data, "sdist")):
        if not _FILENAME.match(fname):
            raise UploadError(f"{kind} filename {fname!r} has characters other than A-Z a-z 0-9 . _ + -")
        if len(data) > limits.max_file_size:
            raise UploadError(
                f"{kind} {fname} is {len(data)} bytes; the hub accepts at most {limits.max_file_size}", 413
            )
        if not data:
            raise UploadError(f"{kind} {fname} is empty")
    if not wheel_filename.endswith(".whl"):
        raise UploadError(f"the wheel field must hold a .whl file, got {wheel_filename!r}")

    expected = canonicalize_name(expected_name)
    module = module_name(str(expected))
    wheel = _inspect_wheel(wheel_filename, wheel_data, limits)
    sdist = _inspect_sdist(sdist_filename, sdist_data, limits)
    w_meta_raw = wheel.metadata
    w_meta = _parse_metadata(wheel_filename, w_meta_raw)
    s_meta = _parse_metadata(sdist_filename, sdist.pkg_info)

    names = {
        "the URL": expected,
        f"the wheel filename {wheel_filename}": wheel.name,
        "the wheel METADATA": canonicalize_name(w_meta.name),
        f"the sdist filename {sdist_filename}": sdist.name,
        "the sdist PKG-INFO": canonicalize_name(s_meta.name),
    }
    if len(set(names.values())) != 1:
        detail = ", ".join(f"{k}: {v}" for k, v in names.items())
        raise UploadError(f"the distribution names do not agree ({detail}); rebuild both from one project")
    versions = {
        "the wheel filename": wheel.version,
        "the wheel METADATA": w_meta.version,
        "the sdist filename": sdist.version,
        "the sdist PKG-INFO": s_meta.version,
    }
    if len(set(versions.values())) != 1:
        detail = ", ".join(f"{k}: {v}" for k, v in versions.items())
        raise UploadError(f"the versions do not agree ({detail}); rebuild the wheel and sdist together")

    name, version = str(expected), str(wheel.version)
    candidates = [f"{module}/__init__.py", f"{module}.py", f"src/{module}/__init__.py", f"src/{module}.py"]
    entry = next((c for c in candidates if c in sdist.sources), None)
    if entry is None:
        raise UploadError(
            f"the sdist has no module {module!r} (looked for {', '.join(candidates)}); an environment "
            f"named {name!r} must ship the import package {module!r}"
        )
    if not defines_load_environment(sdist.sources[entry], entry):
        raise UploadError(
            f"{entry} does not define load_environment; the module must expose "
            "`def load_environment(**kwargs) -> verifiers.Environment`"
        )
    # The content hash of the sdist's module files (the one algorithm, verifiers.hub.packaging) equals
    # the wheel's hash exactly when both hold the same files with the same bytes; comparing per-file
    # sha256 lets the hub stream both archives instead of holding the module in memory.
    if wheel.module_files != sdist.module_files:
        differ = sorted(set(wheel.module_files.items()) ^ set(sdist.module_files.items()))
        raise UploadError(
            f"the wheel and the sdist hold different sources for {module!r} (first difference: "
            f"{differ[0][0]}); build the wheel from the sdist (`python -m build` does)"
        )
    content_hash = wheel.content_hash
    if declared_content_hash and declared_content_hash != content_hash:
        raise UploadError(
            f"the content hash you sent ({declared_content_hash[:12]}…) differs from the one the hub computed "
            f"from the sdist ({content_hash[:12]}…); was the sdist rebuilt after hashing?"
        )

    requires_python = str(w_meta.requires_python) if w_meta.requires_python is not None else None
    if requires_python is not None:
        try:
            SpecifierSet(requires_python)
        except InvalidSpecifier:
            raise UploadError(f"invalid Requires-Python {requires_python!r}") from None
    deps: list[str] = []
    for req in w_meta.requires_dist or []:
        if isinstance(req, Requirement) and req.url:
            raise UploadError(
                f"dependency {str(req)!r} is a direct URL; depend on a released package by name instead"
            )
        deps.append(str(req))
    readme = w_meta.description or ""
    readme_type = (w_meta.description_content_type or "text/markdown").split(";")[0].strip().lower()
    if len(readme.encode()) > limits.max_readme_size:
        raise UploadError(
            f"the README is {len(readme.encode())} bytes; the hub keeps at most {limits.max_readme_size}", 413
        )
    tags = normalize_tags(list(w_meta.keywords or []))
    readme_html = render_limited(readme, readme_type)
    return InspectedUpload(
        name=name,
        version=version,
        module=module,
        wheel=ArchiveFile(wheel_filename, "bdist_wheel", wheel_data, _sha256(wheel_data)),
        sdist=ArchiveFile(sdist_filename, "sdist", sdist_data, _sha256(sdist_data)),
        content_hash=content_hash,
        summary=w_meta.summary or "",
        readme=readme,
        readme_content_type=readme_type,
        readme_html=readme_html,
        requires_python=requires_python,
        dependencies=deps,
        tags=tags,
        core_metadata=w_meta_raw,
        sdist_files=sdist.listing,
    )
