"""Static checks of an uploaded wheel + sdist, done entirely in memory and without importing anything.

Every failure is an ``UploadError`` whose message says what to fix; the publish route turns it into a 4xx.
Decompression is bounded before any archive is parsed, so a small upload cannot expand without limit.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import io
import re
import stat
import tarfile
import zipfile
import zlib
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

from verifiers.hub.packaging import content_hash_of_sdist, content_hash_of_wheel, module_name

_FILENAME = re.compile(r"^[A-Za-z0-9._+-]{1,250}$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,49}$")
MAX_TAGS = 20


class UploadError(Exception):
    """A rejected upload. ``status_code`` is 400 (bad content), 413 (too large) or 422 (bad form)."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


@dataclass(frozen=True)
class Limits:
    max_file_size: int
    max_unpacked_size: int
    max_members: int
    max_readme_size: int


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
    if not name or "\x00" in name or "\\" in name:
        raise UploadError(f"{archive}: member name {name!r} contains NUL or backslash characters")
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


def _bounded_gunzip(archive: str, data: bytes, limit: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            out = gz.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise UploadError(f"{archive} is not a valid gzip file: {exc}") from None
    if len(out) > limit:
        raise UploadError(
            f"{archive} unpacks to more than {limit} bytes (the hub's max_unpacked_size); make the package smaller",
            413,
        )
    return out


def _parse_metadata(archive: str, raw: bytes) -> Metadata:
    try:
        return Metadata.from_email(raw, validate=True)
    except ExceptionGroup as group:
        problems = "; ".join(str(e) for e in group.exceptions)
        raise UploadError(f"{archive}: invalid core metadata: {problems}") from None
    except (InvalidMetadata, ValueError) as exc:
        raise UploadError(f"{archive}: invalid core metadata: {exc}") from None


def _defines_load_environment(source: bytes, where: str) -> bool:
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        raise UploadError(f"{where}: syntax error at line {exc.lineno}: {exc.msg}") from None
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        match node:
            case ast.FunctionDef(name="load_environment") | ast.AsyncFunctionDef(name="load_environment"):
                return True
            case ast.Assign(targets=targets) if any(
                isinstance(t, ast.Name) and t.id == "load_environment" for t in targets
            ):
                return True
            case ast.AnnAssign(target=ast.Name(id="load_environment")):
                return True
            case ast.ImportFrom(names=names) if any(
                (a.asname or a.name) == "load_environment" for a in names
            ):
                return True
            case ast.If() | ast.Try():
                # Definitions guarded by if/try at module level still define the name.
                for part in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, part, []):
                        todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return False


def _inspect_sdist(
    filename: str, data: bytes, limits: Limits
) -> tuple[str, Version, bytes, dict[str, bytes], list[dict[str, object]]]:
    """Name, version, PKG-INFO bytes, candidate module sources (path -> bytes), file listing."""
    if not filename.endswith(".tar.gz"):
        raise UploadError(f"sdist {filename!r} must be a .tar.gz file (PEP 625)")
    try:
        name, version = parse_sdist_filename(filename)
    except InvalidSdistFilename as exc:
        raise UploadError(f"invalid sdist filename: {exc}") from None
    top = filename[: -len(".tar.gz")]
    raw_tar = _bounded_gunzip(filename, data, limits.max_unpacked_size)
    pkg_info: bytes | None = None
    sources: dict[str, bytes] = {}
    listing: list[dict[str, object]] = []
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=io.BytesIO(raw_tar), mode="r:") as tar:
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
                path = _check_member_name(filename, member.name)
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
                if not member.isfile():
                    continue
                inner = PurePosixPath(*path.parts[1:])
                listing.append({"path": str(inner), "size": member.size})
                if str(inner) == "PKG-INFO":
                    f = tar.extractfile(member)
                    pkg_info = f.read() if f is not None else None
                elif inner.suffix == ".py":
                    f = tar.extractfile(member)
                    if f is not None:
                        sources[str(inner)] = f.read()
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:  # an UploadError passes through
        raise UploadError(f"{filename} is not a valid tar archive: {exc}") from None
    if pkg_info is None:
        raise UploadError(f"{filename} has no {top}/PKG-INFO; build it with `python -m build --sdist`")
    listing.sort(key=lambda f: str(f["path"]))
    return str(name), version, pkg_info, sources, listing


def _inspect_wheel(filename: str, data: bytes, limits: Limits) -> tuple[str, Version, bytes]:
    """Name, version and METADATA bytes of a wheel, after checking every member."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise UploadError(f"invalid wheel filename: {exc}") from None
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UploadError(f"{filename} is not a valid zip archive: {exc}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise UploadError(f"{filename} has more than {limits.max_members} members", 413)
        total = 0
        names: set[str] = set()
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
            total += info.file_size
            if total > limits.max_unpacked_size:
                raise UploadError(
                    f"{filename} unpacks to more than {limits.max_unpacked_size} bytes (the hub's "
                    "max_unpacked_size); make the package smaller",
                    413,
                )
            if path.parts[0].endswith(".dist-info"):
                dist_infos.add(path.parts[0])
        if len(dist_infos) != 1:
            raise UploadError(
                f"{filename} must contain exactly one .dist-info directory, found {len(dist_infos)}"
            )
        dist_info = dist_infos.pop()
        for required in ("METADATA", "WHEEL", "RECORD"):
            if f"{dist_info}/{required}" not in names:
                raise UploadError(
                    f"{filename} has no {dist_info}/{required}; build it with `python -m build`"
                )
        try:
            bad = zf.testzip()  # also proves every member decompresses and matches its CRC
            metadata = zf.read(f"{dist_info}/METADATA")
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError, NotImplementedError) as exc:
            raise UploadError(f"{filename} is not a valid zip archive: {exc}") from None
        if bad is not None:
            raise UploadError(f"{filename}: member {bad!r} is corrupt (CRC mismatch)")
    return str(name), version, metadata


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
    w_name, w_version, w_meta_raw = _inspect_wheel(wheel_filename, wheel_data, limits)
    s_name, s_version, s_meta_raw, sources, listing = _inspect_sdist(sdist_filename, sdist_data, limits)
    w_meta = _parse_metadata(wheel_filename, w_meta_raw)
    s_meta = _parse_metadata(sdist_filename, s_meta_raw)

    names = {
        "the URL": expected,
        f"the wheel filename {wheel_filename}": w_name,
        "the wheel METADATA": canonicalize_name(w_meta.name),
        f"the sdist filename {sdist_filename}": s_name,
        "the sdist PKG-INFO": canonicalize_name(s_meta.name),
    }
    if len(set(names.values())) != 1:
        detail = ", ".join(f"{k}: {v}" for k, v in names.items())
        raise UploadError(f"the distribution names do not agree ({detail}); rebuild both from one project")
    versions = {
        "the wheel filename": w_version,
        "the wheel METADATA": w_meta.version,
        "the sdist filename": s_version,
        "the sdist PKG-INFO": s_meta.version,
    }
    if len(set(versions.values())) != 1:
        detail = ", ".join(f"{k}: {v}" for k, v in versions.items())
        raise UploadError(f"the versions do not agree ({detail}); rebuild the wheel and sdist together")

    name, version = str(expected), str(w_version)
    module = module_name(name)
    candidates = [f"{module}/__init__.py", f"{module}.py", f"src/{module}/__init__.py", f"src/{module}.py"]
    entry = next((c for c in candidates if c in sources), None)
    if entry is None:
        raise UploadError(
            f"the sdist has no module {module!r} (looked for {', '.join(candidates)}); an environment "
            f"named {name!r} must ship the import package {module!r}"
        )
    if not _defines_load_environment(sources[entry], entry):
        raise UploadError(
            f"{entry} does not define load_environment; the module must expose "
            "`def load_environment(**kwargs) -> verifiers.Environment`"
        )
    try:
        content_hash = content_hash_of_sdist(sdist_data, module)
        wheel_hash = content_hash_of_wheel(wheel_data, module)
    except ValueError as exc:
        raise UploadError(str(exc)) from None
    if wheel_hash != content_hash:
        raise UploadError(
            f"the wheel and the sdist hold different sources for {module!r} (content hash {wheel_hash[:12]}… "
            f"vs {content_hash[:12]}…); build the wheel from the sdist (`python -m build` does)"
        )
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
        sdist_files=listing,
    )
