"""``vf-eval --ray`` when the cluster is not there or goes away (issue 23, item 8): an address nobody
answers at fails in seconds with ``RayUnavailableError``; one that accepts connections but never answers
fails at the connect deadline, and SIGTERM / Ctrl-C end the process meanwhile; losing every actor is a
named one-line error. None of them may hang or print ``unexpected``."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._helpers import clean_env, script
from tests.eval_ray.conftest import RayCluster
from tests.eval_ray.test_distributed import EXAMPLES, _answer, _eval_actor_pids, _wait_for_lines
from tests.scripted_server import ScriptedServer
from verifiers.clients import Client
from verifiers.clients.local_model import free_port
from verifiers.eval.concurrency import FixedLimit
from verifiers.eval.distributed import RayOptions, RayUnavailableError, schedule_ray
from verifiers.eval.engine import RunProgress

pytestmark = pytest.mark.ray


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (a wedged head, a wrong service)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield server.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    server.close()


def _eval(tmp_path: Path, url: str, address: str) -> subprocess.Popen[str]:
    args = ["tiny-qa", "-m", "m", "-b", url, "-n", "2", "-o", str(tmp_path / "run"), "--ray", address]
    return subprocess.Popen(
        [script("vf-eval"), *args],
        env=clean_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_address_nobody_answers_at_fails_in_seconds(tmp_path: Path) -> None:
    with ScriptedServer() as srv:
        proc = _eval(tmp_path, srv.url, f"127.0.0.1:{free_port()}")
        _, err = proc.communicate(timeout=120)  # a hang guard only: Ray alone retries for minutes
    assert proc.returncode == 1, err[-2000:]
    assert "cannot reach the Ray cluster at 127.0.0.1:" in err and "unexpected" not in err, err[-2000:]
    assert "Traceback" not in err
    assert srv.requests == [], "the run asked the model anything without a cluster"


async def test_a_cluster_that_never_answers_fails_at_the_connect_deadline(silent_port: int) -> None:
    from verifiers.envs import load_environment

    env = load_environment("tiny-qa")
    with ScriptedServer() as srv:
        async with Client(srv.url, None) as client:
            with pytest.raises(RayUnavailableError, match="no answer from the Ray cluster within 3s"):
                await schedule_ray(
                    env,
                    [],
                    client,
                    "m",
                    options=RayOptions(address=f"127.0.0.1:{silent_port}", connect_timeout=3.0),
                    limit=FixedLimit(1),
                    sampling_args=None,
                    score="group",
                    on_records=lambda records: None,
                    progress=RunProgress(),
                )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_run_stuck_connecting(tmp_path: Path, silent_port: int, sig: int) -> None:
    with ScriptedServer() as srv:
        proc = _eval(tmp_path, srv.url, f"127.0.0.1:{silent_port}")
        try:
            deadline = time.monotonic() + 120
            meta = tmp_path / "run" / "metadata.json"
            while not meta.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)  # the run directory exists: the driver is connecting now
            time.sleep(1.0)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)  # not the 60 s deadline, not Ray's minutes
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    assert proc.returncode == 130, err[-2000:]
    assert "unexpected" not in err and "Traceback" not in err, err[-2000:]


def test_losing_every_actor_is_a_named_error(ray_cluster: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, 0.5)) as srv:
        args = ["tiny-qa", "-m", "m", "-b", srv.url, "-n", str(EXAMPLES), "-r", "4", "-c", "2"]
        proc = subprocess.Popen(
            [script("vf-eval"), *args, "-o", str(out), "--ray", ray_cluster.address],
            env=clean_env(),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for_lines(out / "results.jsonl", 1)  # the driver has written a record: actors exist
            pids = _eval_actor_pids(ray_cluster)
            assert pids, "no actor process found"
            for pid in pids:  # every actor of the run, on every node
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    assert proc.returncode == 1, err[-3000:]
    assert "every Ray actor of the run died" in err, err[-3000:]
    assert "unexpected" not in err and "Traceback" not in err, err[-3000:]


def test_the_probe_reads_the_recorded_address_for_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.eval import distributed

    port = free_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    assert distributed._head_endpoint("auto") == ("127.0.0.1", port)
    with pytest.raises(RayUnavailableError, match=f"nothing answers at 127.0.0.1:{port}"):
        distributed._probe("auto")
    assert distributed._head_endpoint("local") is None
    assert distributed._head_endpoint("ray://head:10001") == ("head", 10001)
