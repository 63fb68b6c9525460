"""``vf-hub serve --demo`` as its own process on a free loopback port (the real command), for the demo and
the bare-name install tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

VF_HUB = Path(sys.executable).parent / "vf-hub"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def demo_hub(data_dir: Path, *, timeout: float = 180.0) -> Iterator[tuple[str, str]]:
    """The URL of a demo hub on ``data_dir`` and what the command printed while seeding."""
    port = _free_port()
    env = {**os.environ, "VF_HUB_UPSTREAM_INDEX": "none", "VF_HUB_SMOKE_CHECKS": "false"}
    log = data_dir.parent / f"demo-hub-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                str(VF_HUB),
                "serve",
                "--demo",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                "--no-access-log",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vf-hub serve --demo exited {proc.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vf-hub serve --demo did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield url, log.read_text()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
