"""The one content-hash algorithm for environment packages, shared by the SDK and the hub server.

``env_content_hash`` identifies the *source* of an environment independently of how it was installed
(editable checkout, wheel, sdist). It covers the files of the environment's import package — the
directory ``<module>/`` (or the single file ``<module>.py``) — and nothing else, so the same sources give
the same hash whether read from disk, from a wheel or from an sdist.

Algorithm (version 1), documented here and in the README:

1. Collect the files of the import package, as POSIX paths relative to the directory that *contains* the
   package (so they start with ``<module>/``). Skip ``__pycache__`` directories and ``*.pyc``/``*.pyo``.
2. Sort the paths by their UTF-8 bytes.
3. Feed sha256, for each file: ``path`` UTF-8 bytes, NUL, the decimal byte length, NUL, the raw bytes.
4. The hash is the lowercase hex digest.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import io
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CONTENT_HASH_VERSION = 1


def _skip(rel: PurePosixPath) -> bool:
    return "__pycache__" in rel.parts or rel.suffix in (".pyc", ".pyo")


def _hashed(rel: PurePosixPath, module: str) -> bool:
    """Whether ``rel`` (relative to the directory holding the package) is a hashed file of ``module``."""
    in_module = (rel.parts[0] == module and len(rel.parts) > 1) or str(rel) == f"{module}.py"
    return in_module and not _skip(rel)


def is_module_file(path: str, module: str) -> bool:
    """Whether ``path`` (relative to the directory holding the package) is one of the hashed files."""
    return _hashed(PurePosixPath(path), module)


class ContentHasher:
    """The hash of ``hash_files``, fed one file at a time as a stream (so no file need be held in memory).

    Files must come in sorted order of their UTF-8 paths, and each must produce exactly ``length`` bytes.
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._last: bytes | None = None

    def add(self, path: str, length: int, chunks: Iterable[bytes]) -> None:
        key = path.encode()
        if self._last is not None and key <= self._last:
            raise ValueError(f"{path}: files must be added once each, in sorted order")
        self._last = key
        self._h.update(key + b"\0" + str(length).encode() + b"\0")
        n = 0
        for chunk in chunks:
            n += len(chunk)
            self._h.update(chunk)
        if n != length:
            raise ValueError(f"{path} holds {n} bytes, not the {length} its header declares")

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def hash_files(files: Iterable[tuple[str, bytes]]) -> str:
    """Content hash of (relative POSIX path, bytes) pairs; the order given does not matter."""
    hasher = ContentHasher()
    for path, data in sorted(files, key=lambda f: f[0].encode()):
        hasher.add(path, len(data), (data,))
    return hasher.hexdigest()


def module_files(module_path: Path) -> list[tuple[str, bytes]]:
    """The (relative path, bytes) pairs of an import package directory or single-file module."""
    module_path = Path(module_path)
    if module_path.is_file():
        return [(module_path.name, module_path.read_bytes())]
    base = module_path.parent
    out: list[tuple[str, bytes]] = []
    for p in module_path.rglob("*"):
        if not p.is_file():
            continue
        rel = PurePosixPath(p.relative_to(base).as_posix())
        if not _skip(rel):
            out.append((str(rel), p.read_bytes()))
    return out


def content_hash_of_module(module_path: Path) -> str:
    """``env_content_hash`` of an import package on disk (a directory or a ``.py`` file)."""
    return hash_files(module_files(module_path))


def content_hash_of_sdist(sdist: bytes | Path, module: str) -> str:
    """``env_content_hash`` recomputed from an sdist (``.tar.gz``), as the hub does on upload.

    Looks for ``<module>/`` or ``<module>.py`` at the sdist root (``<name>-<version>/``) or under ``src/``.
    Raises ``ValueError`` if the module is not in the archive.
    """
    data = sdist.read_bytes() if isinstance(sdist, Path) else sdist
    files: dict[str, list[tuple[str, bytes]]] = {"": [], "src/": []}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = PurePosixPath(member.name).parts
            if len(parts) < 2:
                continue
            inner = str(PurePosixPath(*parts[1:]))  # drop the "<name>-<version>" top directory
            for prefix in files:
                if not inner.startswith(prefix):
                    continue
                rel = PurePosixPath(inner[len(prefix) :])
                f = tar.extractfile(member) if _hashed(rel, module) else None
                if f is not None:
                    files[prefix].append((str(rel), f.read()))
    for prefix in ("", "src/"):
        if files[prefix]:
            return hash_files(files[prefix])
    raise ValueError(f"the sdist has no module {module!r} (expected {module}/ or {module}.py)")


def content_hash_of_wheel(wheel: bytes | Path, module: str) -> str:
    """``env_content_hash`` of the module files inside a wheel (same algorithm as for an sdist).

    The hub compares it with the sdist's hash, so the wheel users install holds the sources the hash names.
    Raises ``ValueError`` if the module is not at the wheel root.
    """
    import zipfile

    data = wheel.read_bytes() if isinstance(wheel, Path) else wheel
    files: list[tuple[str, bytes]] = []
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            if _hashed(PurePosixPath(info.filename), module):
                files.append((info.filename, zf.read(info)))
    if not files:
        raise ValueError(f"the wheel has no module {module!r} (expected {module}/ or {module}.py)")
    return hash_files(files)


def normalize_name(name: str) -> str:
    """PEP 503 normalised project name."""
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def requirement_closure(root: str, *, every_extra: bool = False) -> dict[str, md.Distribution | None]:
    """``root`` and every distribution its requirements pull in, transitively, as installed here: PEP 503
    name -> the installed distribution, or None for a requirement that is not installed (not followed).

    By default a requirement counts when its marker holds on this interpreter with no extra asked for
    (what an install of ``root`` needs here); ``every_extra=True`` counts every requirement of every
    extra on any platform (every name an install of ``root`` could ever ask an index for)."""
    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    here: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    installed: dict[str, md.Distribution] = {}
    for d in md.distributions():  # one scan of sys.path (md.distribution(name) scans it per call)
        installed.setdefault(normalize_name(d.metadata["Name"] or ""), d)  # the first wins, as for imports
    found: dict[str, md.Distribution | None] = {}
    todo = [root]
    while todo:
        name = normalize_name(todo.pop())
        if name in found:
            continue
        dist = found[name] = installed.get(name)
        for spec in (dist.requires or []) if dist is not None else []:
            try:
                req = Requirement(spec)
            except InvalidRequirement:
                continue
            if every_extra or req.marker is None or req.marker.evaluate({**here, "extra": ""}):
                todo.append(req.name)
    return found


def module_name(env_id: str) -> str:
    """Import module of an environment id: ``math-env`` -> ``math_env`` (contract 3.1)."""
    return normalize_name(env_id).replace("-", "_")


_ENV_SPEC = re.compile(
    r"^(?:(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)/)?"
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
    r"(?:@(?P<spec>.*))?$"
)


@dataclass(frozen=True)
class EnvSpec:
    """A parsed ``[owner/]name[@specifier]``; ``specifier`` is PEP 440 (``""`` = any version)."""

    owner: str | None
    name: str
    specifier: str

    def __str__(self) -> str:
        base = f"{self.owner}/{self.name}" if self.owner else self.name
        return f"{base}@{self.specifier}" if self.specifier else base


def parse_env_spec(text: str) -> EnvSpec:
    """Parse ``owner/name@>=0.1``, ``name@1.0`` (a bare version means ``==1.0``) or ``name``.

    The name is PEP 503 normalised; raises ``ValueError`` with a readable message on bad input.
    """
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    m = _ENV_SPEC.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not an environment spec; expected [owner/]name[@version-specifier]")
    spec = (m["spec"] or "").strip()
    if spec in ("", "latest", "*"):
        spec = ""
    elif spec[0].isalnum():
        try:
            spec = f"=={Version(spec)}"
        except InvalidVersion:
            raise ValueError(f"{spec!r} is neither a version nor a PEP 440 specifier") from None
    else:
        try:
            spec = str(SpecifierSet(spec))
        except InvalidSpecifier:
            raise ValueError(f"{spec!r} is not a valid PEP 440 specifier (e.g. '>=0.1,<0.3')") from None
    return EnvSpec(owner=m["owner"], name=normalize_name(m["name"]), specifier=spec)
