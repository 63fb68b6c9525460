"""Helpers for the upstream fall-through and SDK tests: a loopback pypiserver standing in for PyPI, tiny
upstream wheels, and one SDK build shared by the whole session (under pytest's base temp dir)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import platformdirs
import pytest

from hub_server.sdk_dist import SdkDist
from tests.hub._dists import Dist


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    # A file, not a pipe: its request log must never fill a pipe buffer and stall the server.
    log = root.with_name(root.name + ".log")
    log_file = log.open("wb")
    proc = subprocess.Popen(
        [
            str(exe),
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "--disable-fallback",
            "-a",
            ".",
            "-P",
            ".",
            str(root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=log_file,
    )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pypiserver did not start: {log.read_text(errors='replace')[-500:]}")
            time.sleep(0.1)
        yield Pypiserver(url, root)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log_file.close()


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
