"""Small helpers shared by the hub tests (and tests/cli's demo-hub test): starting and stopping a server
process, running a CLI in this interpreter, and the sandbox backend the smoke checks use. (Free ports:
``verifiers.clients.local_model.free_port``.)"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.tiers import component_missing

#: ``vf-eval`` as this interpreter runs it (``python -c``, so no console script is needed).
VF_EVAL = ["-c", "import sys; from verifiers.cli.eval import main; main(sys.argv[1:])"]
#: An environment whose ``load_environment`` raises: its smoke check fails with this message.
BROKEN_SOURCE = b"""def load_environment(**kwargs):
    raise RuntimeError("broken on purpose: no dataset here")
"""


def wait_until_serving(
    url: str, proc: subprocess.Popen[Any], what: str, log: Path, *, timeout: float = 300
) -> httpx.Response:
    """Poll ``url`` until it answers 200 and return that answer. When ``proc`` exits first or ``timeout``
    seconds pass, a RuntimeError that names ``what`` and ends with the tail of ``log`` (its output). The
    timeout only guards against a hang: a loaded machine may take a minute to start a server."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = httpx.get(url, timeout=60)
            if answer.status_code == 200:
                return answer
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            problem = f"exited {proc.returncode}"
        elif time.monotonic() > deadline:
            problem = f"did not answer {url} within {timeout:g} s"
        else:
            time.sleep(0.1)
            continue
        raise RuntimeError(f"{what} {problem}:\n{log.read_text(errors='replace')[-4000:]}")


def stop(proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL when ``proc`` has not exited within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serving(
    cmd: list[str], url: str, log: Path, *, timeout: float = 300, env: dict[str, str] | None = None
) -> Iterator[httpx.Response]:
    """``cmd`` started with its output in the file ``log`` (a pipe could fill and stall it); yields the first
    200 answer of ``url`` (see wait_until_serving), and stops the process on the way out."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield wait_until_serving(url, proc, " ".join(cmd), log, timeout=timeout)
    finally:
        stop(proc)


def run_python(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    """``python ARGS`` with this interpreter; asserts that it exits 0 (else shows its output), returns stdout."""
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def smoke_backend() -> str:
    """The sandbox backend for real smoke checks; skips the test without one (fails if VF_REQUIRE_SANDBOX=1)."""
    from verifiers.sandbox import available_backends

    for name in ("bwrap", "runsc"):  # bwrap first: the same check, several times faster here
        if name in available_backends():
            return name
    component_missing("VF_REQUIRE_SANDBOX", "neither bwrap nor runsc can run here")
