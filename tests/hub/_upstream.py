"""Helpers for the upstream fall-through and SDK tests: a loopback pypiserver standing in for PyPI, tiny
upstream wheels, and one SDK build shared by the whole session (under pytest's base temp dir)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import pytest

from hub_server.sdk_dist import SdkDist
from tests.hub._dists import Dist
from tests.hub._helpers import serving
from verifiers.clients.local_model import free_port

# Upstream-only packages: a real dependency, and a name the tests also publish on the hub (the shadow).
TINYDEP = Dist(
    name="tinydep",
    version="1.0",
    dependencies=[],
    files={"tinydep/__init__.py": b"VALUE = 42\n"},
)
SHADOW_UPSTREAM = Dist(
    name="shadow-env",
    version="99.0",
    dependencies=[],
    files={"shadow_env/__init__.py": b"ORIGIN = 'upstream'\n"},
)


def write_upstream_packages(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for dist in (TINYDEP, SHADOW_UPSTREAM):
        filename, data = dist.wheel()
        (directory / filename).write_bytes(data)


@dataclass(frozen=True)
class Pypiserver:
    url: str  # the simple index, with a trailing slash
    root: Path


@contextmanager
def run_pypiserver(root: Path) -> Iterator[Pypiserver]:
    """pypiserver over ``root`` on a free loopback port; the fallback to pypi.org is off."""
    port = free_port()
    exe = Path(sys.executable).with_name("pypi-server")
    args = ["run", "-i", "127.0.0.1", "-p", str(port), "--disable-fallback", "-a", ".", "-P", ".", str(root)]
    url = f"http://127.0.0.1:{port}/simple/"
    with serving([str(exe), *args], url, root.with_name(root.name + ".log")):
        yield Pypiserver(url, root)


def shared_sdk_cache(factory: pytest.TempPathFactory) -> Path:
    """One SDK build for the session: every hub in the tests points its sdk_cache_dir here."""
    cache = factory.getbasetemp() / "sdk-cache"
    SdkDist(cache).release()  # builds once (file-locked); later calls find the version directory
    return cache


def wheelhouse_dir() -> Path:
    """Where scripts/hub_wheelhouse.py (run by scripts/setup.sh) put the SDK's dependency wheels."""
    env = os.environ.get("VF_TEST_WHEELHOUSE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("verifiers-sdk")) / "hub-test-wheelhouse"


def link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)
