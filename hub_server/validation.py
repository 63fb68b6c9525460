"""Static checks of an uploaded wheel + sdist, done in memory and without importing anything.

Every failure is an ``UploadError`` whose message says what to fix; the publish route turns it into a 4xx.
The wheel's rules (the zip read as any installer could read it, layout, compiled code, RECORD, entry
points) are ``verifiers.hub.wheel_rules``, which ``vf-install`` applies to a download too; the sdist's and
the metadata's are here. Every byte read from the sdist goes through ``hub_server.bounded.BoundedReader``,
which counts what the streams actually produce, so the work and memory of one upload are bounded whatever
its headers claim; a wheel member never produces more than it declares (``wheel_rules.entry_chunks``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from packaging.metadata import InvalidMetadata, Metadata
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import Version

from hub_server.bounded import BoundedReader, Budget, UploadError, digest, read_capped
from hub_server.build_rules import FORBIDDEN_BUILD_FILES, MAX_PYPROJECT, check_build_config
from hub_server.readme import render_limited
from hub_server.source_check import MAX_SOURCE_SIZE, defines_load_environment
from verifiers.hub.packaging import is_module_file, module_name
from verifiers.hub.wheel_rules import (
    ArchiveError,
    WheelContents,
    check_member_name,
    compiled_code_problem,
    inspect_wheel,
    is_native_code,
    metadata_text,
)

_FILENAME = re.compile(r"^[A-Za-z0-9._+-]{1,250}$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,49}$")
MAX_TAGS = 20


__all__ = ["ArchiveFile", "InspectedUpload", "Limits", "UploadError", "inspect_upload", "normalize_tags"]

# Fixed caps (warehouse's where it has one). They bound what one upload may make the hub hold.
MAX_MEMBER_HEADERS = 64 * 1024  # tar header bytes parsed per member (PAX records, long names, sparse maps)
MAX_ARCHIVE_HEADERS = 1024 * 1024  # PAX bytes kept over all members (tarfile keeps every TarInfo)
MAX_SUMMARY = 512  # warehouse: Summary is at most 512 characters
MAX_LINE_FIELD = 1024  # Author, Maintainer, their e-mails, Keywords (joined), one Requires-Dist, ...
MAX_REQUIRES = 100  # Requires-Dist entries
MAX_LIST_FIELD = 200  # Classifier / Project-URL / Provides-Extra entries
#: Header fields of METADATA / PKG-INFO: more than the caps above allow in total, far fewer than the
#: email parser's cost would bound (it is quadratic in distinct field names, so those are checked first).
MAX_METADATA_FIELDS = 1024
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


def _check_member_name(archive: str, name: str) -> PurePosixPath:
    try:
        return check_member_name(archive, name)
    except ArchiveError as exc:
        raise UploadError(exc.message, exc.status_code) from None


def _parse_metadata(archive: str, raw: bytes) -> Metadata:
    try:
        text = metadata_text(archive, raw)
    except ArchiveError as exc:
        raise UploadError(exc.message, exc.status_code) from None
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
        code = head.endswith((".py", ".pth")) or is_native_code(inner)
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
    pyproject: bytes | None = None
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
                why = (
                    FORBIDDEN_BUILD_FILES.get(str(PurePosixPath(*path.parts[1:])))
                    if len(path.parts) > 1
                    else None
                )
                if why is not None:
                    raise UploadError(
                        f"{filename}: {member.name!r} is refused: {why}. Build with hatchling from "
                        "pyproject.toml alone (docs/hub.md, 'Upload rules')"
                    )
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
                problem = compiled_code_problem(PurePosixPath(inner))
                if problem is not None and inner.removeprefix("src/").startswith(f"{module}/"):
                    raise UploadError(
                        f"{filename}: {member.name!r} inside the import package is {problem} (a build would "
                        "install it beside, and run it instead of, its source)"
                    )
                listing.append({"path": inner, "size": member.size})
                with stream.member_data():
                    f = tar.extractfile(member)
                    assert f is not None  # a regular file
                    if inner == "PKG-INFO":
                        pkg_info = read_capped(f, limits.max_metadata_size, f"{filename}: PKG-INFO")
                    elif inner == "pyproject.toml":
                        pyproject = read_capped(f, MAX_PYPROJECT, f"{filename}: pyproject.toml")
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
    if pyproject is None:
        raise UploadError(
            f"{filename} has no {top}/pyproject.toml; an sdist on the hub is built by hatchling from it"
        )
    check_build_config(f"{filename}: pyproject.toml", pyproject, str(name), module)
    listing.sort(key=lambda f: str(f["path"]))
    files = hashed[""] or hashed["src/"]
    return _Sdist(str(name), version, pkg_info, sources, files, listing)


def _inspect_wheel(filename: str, data: bytes, limits: Limits) -> WheelContents:
    try:
        return inspect_wheel(
            filename,
            data,
            max_members=limits.max_members,
            max_metadata_size=limits.max_metadata_size,
            max_unpacked_size=limits.max_unpacked_size,
        )
    except ArchiveError as exc:
        raise UploadError(exc.message, exc.status_code) from None


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
