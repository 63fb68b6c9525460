"""The hub serves the SDK it runs: ``verifiers-sdk``'s wheel and sdist, so an environment's dependency on it
resolves from the hub itself (``pip install --index-url HUB/simple/ my-env`` in a fresh venv).

The name is reserved (nobody may publish it, ``services.accounts.RESERVED_DISTRIBUTIONS``). The files are
either found in ``VF_HUB_SDK_DIST_DIR`` or built on first request (never at start-up: the hub starts fast)
with ``python -m build`` from the source tree of the installed distribution, into
``<sdk cache dir>/<version>/``, once per version: a file lock lets several workers share one build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from email.parser import BytesParser
from pathlib import Path
from urllib.parse import unquote, urlparse

from filelock import FileLock
from packaging.utils import parse_sdist_filename, parse_wheel_filename

from hub_server.simple_index import IndexFile, file_url, render_files

SDK_NAME = "verifiers-sdk"
_FAILURE_RETRY_SECONDS = 60.0  # a broken build is not retried on every request
_BUILD_TIMEOUT = 600


class SdkUnavailable(Exception):
    """The SDK's files cannot be served (no source tree and no prebuilt files, or the build failed)."""


@dataclass(frozen=True)
class SdkFile:
    filename: str
    path: Path
    sha256: str
    size: int
    #: The wheel's METADATA (PEP 658), None for the sdist.
    core_metadata: bytes | None


@dataclass(frozen=True)
class SdkRelease:
    version: str
    files: dict[str, SdkFile]
    html: bytes
    json: bytes


def installed_version() -> str:
    return importlib.metadata.version(SDK_NAME)


def source_tree() -> Path | None:
    """The project directory the installed SDK comes from (editable or local-directory installs, PEP 610)."""
    try:
        raw = importlib.metadata.distribution(SDK_NAME).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    info = json.loads(raw)
    url = urlparse(str(info.get("url", "")))
    if "dir_info" not in info or url.scheme != "file":
        return None
    path = Path(unquote(url.path))
    return path if (path / "pyproject.toml").is_file() else None


def _wheel_metadata(path: Path) -> bytes:
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise SdkUnavailable(f"{path.name} has no single .dist-info/METADATA")
        return zf.read(names[0])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _release_from(directory: Path, version: str) -> SdkRelease:
    """The wheel and sdist of ``version`` in ``directory``, rendered as the index page."""
    found: dict[str, SdkFile] = {}
    for path in sorted(directory.iterdir()):
        try:
            if path.name.endswith(".whl"):
                name, ver, *_ = parse_wheel_filename(path.name)
            elif path.name.endswith(".tar.gz"):
                name, ver = parse_sdist_filename(path.name)
            else:
                continue
        except ValueError:
            continue
        if name != SDK_NAME or str(ver) != version:
            continue
        meta = _wheel_metadata(path) if path.name.endswith(".whl") else None
        found[path.name] = SdkFile(path.name, path, _sha256(path), path.stat().st_size, meta)
    if not any(n.endswith(".whl") for n in found):
        raise SdkUnavailable(f"no {SDK_NAME} {version} wheel in {directory}")
    wheel = next(f for f in found.values() if f.core_metadata is not None)
    assert wheel.core_metadata is not None
    requires_python = BytesParser().parsebytes(wheel.core_metadata, headersonly=True).get("Requires-Python")
    files = [
        IndexFile(
            filename=f.filename,
            url=file_url(SDK_NAME, f.filename),
            hashes={"sha256": f.sha256},
            requires_python=requires_python,
            core_metadata={"sha256": hashlib.sha256(f.core_metadata).hexdigest()}
            if f.core_metadata
            else None,
            size=f.size,
            upload_time=datetime.fromtimestamp(f.path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        )
        for f in found.values()
    ]
    html_, json_ = render_files(SDK_NAME, [version], files)
    return SdkRelease(version, found, html_, json_)


def build_into(src: Path, target: Path) -> None:
    """Build sdist + wheel (the wheel from the sdist) of ``src`` into the new directory ``target``."""
    backend = (
        tomllib.loads((src / "pyproject.toml").read_text()).get("build-system", {}).get("build-backend", "")
    )
    top = backend.split(".", 1)[0].split(":", 1)[0]
    # Without network (or on an air-gapped hub) an isolated build cannot fetch its backend; use ours if present.
    isolation = ["--no-isolation"] if top and importlib.util.find_spec(top) is not None else []
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "build", *isolation, "--outdir", str(tmp), str(src)],
            capture_output=True,
            text=True,
            timeout=_BUILD_TIMEOUT,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise SdkUnavailable(f"building {SDK_NAME} from {src} failed: " + " | ".join(tail))
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SdkUnavailable(f"building {SDK_NAME} from {src} failed: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class SdkDist:
    """The SDK's release for the running version, found or built once, then kept in memory."""

    def __init__(self, cache_dir: Path, dist_dir: Path | None = None) -> None:
        self.cache_dir = cache_dir
        self.dist_dir = dist_dir
        self._lock = threading.Lock()
        self._release: SdkRelease | None = None
        self._failure: tuple[float, str] | None = None

    @property
    def cached(self) -> SdkRelease | None:
        return self._release

    def release(self) -> SdkRelease:
        """Blocking (may build for a few seconds): call it from a worker thread."""
        if self._release is not None:
            return self._release
        with self._lock:
            if self._release is not None:
                return self._release
            if self._failure is not None and time.monotonic() < self._failure[0]:
                raise SdkUnavailable(self._failure[1])
            try:
                self._release = self._load()
            except SdkUnavailable as exc:
                self._failure = (time.monotonic() + _FAILURE_RETRY_SECONDS, str(exc))
                raise
            return self._release

    def _load(self) -> SdkRelease:
        version = installed_version()
        if self.dist_dir is not None:
            return _release_from(self.dist_dir, version)
        target = self.cache_dir / version
        if not target.is_dir():
            src = source_tree()
            if src is None:
                raise SdkUnavailable(
                    f"{SDK_NAME} {version} is not installed from a source tree, so the hub cannot build it; "
                    "put its wheel and sdist in VF_HUB_SDK_DIST_DIR"
                )
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.cache_dir / f".{version}.lock")):
                if not target.is_dir():  # another worker may have built it meanwhile
                    build_into(src, target)
        return _release_from(target, version)
