"""Fixtures of the env-server tests: ``vf-serve`` as a real subprocess, the scripted model server, and the
reference SDK's venv (``.venv-ref``; VF_REQUIRE_REFERENCE_SDK=1 turns its absence into a failure)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scripted_server import Reply, ScriptedServer, _last_user_text
from tests.tiers import component_missing

ROOT = Path(__file__).resolve().parents[2]
REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"
PROBE_ROOT = Path(__file__).parent / "envs"  # holds environments/serve_probe_env
LOGIC = ("logic-env", {"tasks": ["boolean_expressions"], "num_examples": 6, "seed": 3})


def answer_of(body: dict[str, Any]) -> str:
    """The scripted model: a fixed, prompt-dependent answer, so rewards differ between examples and
    an in-process run gets exactly the same completions."""
    return (
        "<answer>True</answer>"
        if zlib.crc32(_last_user_text(body).encode()) % 2
        else "<answer>False</answer>"
    )


def token_reply(body: dict[str, Any]) -> Reply:
    return Reply(content=answer_of(body), logprobs=True, token_ids=True)


@dataclass
class Served:
    proc: subprocess.Popen[str]
    http: str
    zmq: str
    stderr: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.http}"

    def client(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def info(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/info", timeout=60).json()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)


def start_serve(env_id: str, env_args: dict[str, Any], *extra: str, cwd: Path = ROOT) -> Served:
    cmd = [
        sys.executable,
        "-m",
        "verifiers.cli.serve",
        env_id,
        "--env-args",
        json.dumps(env_args),
        "--port",
        "0",
    ]
    proc = subprocess.Popen(
        [*cmd, *extra], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stderr: list[str] = []
    assert proc.stderr is not None and proc.stdout is not None
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]
    deadline = time.monotonic() + 120
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("vf-serve listening") or proc.poll() is not None:
            break
    if not line.startswith("vf-serve listening"):
        proc.kill()
        raise AssertionError(f"vf-serve did not start: {line!r}\n{''.join(stderr)[-3000:]}")
    parts = dict(p.split("=", 1) for p in line.split()[2:])
    return Served(proc, parts["http"], parts["zmq"], stderr)


@pytest.fixture
def serve_factory() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def make(env_id: str, env_args: dict[str, Any], *extra: str, cwd: Path = ROOT) -> Served:
        s = start_serve(env_id, env_args, *extra, cwd=cwd)
        started.append(s)
        return s

    yield make
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(30)


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(handler=token_reply) as server:
        yield server


@pytest.fixture(scope="module")
def logic_served() -> Iterator[Served]:
    s = start_serve(*LOGIC, "--max-concurrent", "3")
    yield s
    s.stop()


@pytest.fixture
def reference_python() -> Path:
    if (
        not REF_PYTHON.exists()
        or subprocess.run(
            [str(REF_PYTHON), "-I", "-c", "import verifiers.serve, zmq, msgpack"],
            cwd="/",
            capture_output=True,
        ).returncode
    ):
        reason = f"the reference SDK venv {REF_PYTHON} is missing (scripts/setup.sh creates it)"
        component_missing("VF_REQUIRE_REFERENCE_SDK", reason)
    return REF_PYTHON
