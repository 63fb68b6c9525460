"""``vf-hub serve --demo`` as its own process on a free loopback port (the real command), for the demo and
the bare-name install tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hub._helpers import serving
from verifiers.clients.local_model import free_port

VF_HUB = Path(sys.executable).parent / "vf-hub"


@contextmanager
def demo_hub(data_dir: Path, *, timeout: float = 900.0) -> Iterator[tuple[str, str]]:
    """The URL of a demo hub on ``data_dir`` and what the command printed while seeding."""
    port = free_port()
    env = {**os.environ, "VF_HUB_UPSTREAM_INDEX": "none", "VF_HUB_SMOKE_CHECKS": "false"}
    log = data_dir.parent / f"demo-hub-{port}.log"
    cmd = [
        str(VF_HUB),
        "serve",
        "--demo",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--no-access-log",
    ]
    url = f"http://127.0.0.1:{port}"
    with serving(cmd, f"{url}/healthz", log, timeout=timeout, env=env):
        yield url, log.read_text()
