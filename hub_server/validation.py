"""Static checks of an uploaded wheel + sdist, done in memory and without importing anything.

Every failure is an ``UploadError`` whose message says what to fix; the publish route turns it into a 4xx.
Every byte read from an archive goes through ``hub_server.bounded.BoundedReader``, which counts what the
streams actually produce, so the work and memory of one upload are bounded whatever its headers claim.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import stat
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


def _parse_metadata(archive: str, raw: bytes) -> Metadata:
    text = _text_metadata(archive, raw)
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


def _inspect_wheel(filename: str, data: bytes, limits: Limits) -> _Wheel:
    """Name, version, METADATA and module hash of a wheel, after checking every member."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise UploadError(f"invalid wheel filename: {exc}") from None
    module = module_name(name)
    # zipfile builds a ZipInfo per central-directory entry before anything can be counted; each entry
    # starts with this signature, so its count bounds the entries from above.
    if data.count(b"PK\x01\x02") > limits.max_members:
        raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
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
            if info.filename in names:
                raise UploadError(f"{filename}: member {info.filename!r} appears twice")
            names.add(info.filename)
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
        metadata = b""
        try:
            # Sorted, as the content hash wants; reading every member to its end also checks its CRC.
            for info in sorted(infos, key=lambda i: i.filename.encode()):
                if info.is_dir():
                    continue
                stream = _zip_member(zf, info, budget, filename)
                if is_module_file(info.filename, module):
                    sha = hashlib.sha256()
                    hasher.add(info.filename, info.file_size, _tracked(stream, sha))
                    module_files[info.filename] = (info.file_size, sha.hexdigest())
                elif info.filename == f"{dist_info}/METADATA":
                    metadata = read_capped(stream, limits.max_metadata_size, f"{filename}: METADATA")
                else:
                    size, _ = digest(stream)
                    if size != info.file_size:
                        raise UploadError(f"{filename}: member {info.filename!r} is shorter than declared")
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise UploadError(f"{filename} is not a valid zip archive: {exc}") from None
        except ValueError as exc:  # ContentHasher: a member produced other than its declared size
            raise UploadError(f"{filename}: {exc}") from None
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
        requires_python=requires_python,
        dependencies=deps,
        tags=tags,
        core_metadata=w_meta_raw,
        sdist_files=sdist.listing,
    )
