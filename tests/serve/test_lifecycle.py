"""vf-serve under trouble: a client that disconnects, a worker that crashes, a SIGTERM mid-request."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, PROBE_ROOT, Served


def wait_for(cond: Callable[[], bool], timeout: float = 300.0, what: str = "condition") -> None:
    """Until ``cond()`` holds; the timeout only guards against a hang (a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def held_server() -> Iterator[ScriptedServer]:
    """A model server that answers nothing until ``release()`` or the block's end (then at once)."""
    with ScriptedServer(default="<answer>True</answer>", hold_after=0) as server:
        yield server


def post_in_thread(served: Served, body: dict[str, Any], out: list[httpx.Response]) -> threading.Thread:
    def run() -> None:
        with served.client(timeout=300) as c:
            out.append(c.post("/rollouts", json=body))

    t = threading.Thread(target=run)
    t.start()
    return t


def test_disconnect_cancels_the_request_and_releases_its_sandboxes(
    serve_factory: Callable[..., Served], tmp_path: Path
) -> None:
    log = tmp_path / "sandboxes.log"
    served = serve_factory("serve-probe-env", {"log_path": str(log)}, cwd=PROBE_ROOT)
    lines = lambda: log.read_text().split() if log.exists() else []  # noqa: E731
    with held_server() as silent:
        body = json.dumps(
            {"model": "m", "base_url": silent.url, "example_ids": [0], "rollouts_per_example": 2}
        ).encode()
        host, port = served.http.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
        sock.sendall(
            b"POST /rollouts HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Accept: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        wait_for(lambda: silent.in_flight == 2, what="both rollouts to reach the model")
        assert lines().count("acquired") == 2 and "released" not in lines()
        sock.close()  # the trainer goes away
        wait_for(lambda: lines().count("released") == 2, what="the sandboxes to be released")
        wait_for(lambda: served.info()["in_flight_groups"] == 0, what="the group to be cancelled")
    assert served.stop() == 0


def test_reference_cancel_frame_cancels_the_group_and_releases_its_sandboxes(
    serve_factory: Callable[..., Served], tmp_path: Path
) -> None:
    """The reference client cancels by sending ``[request_id, b""]`` (its ``send_cancel``)."""
    import msgpack
    import zmq

    log = tmp_path / "sandboxes.log"
    served = serve_factory("serve-probe-env", {"log_path": str(log)}, cwd=PROBE_ROOT)
    row = httpx.get(f"{served.url}/dataset", params={"limit": 1}).json()["rows"][0]
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(served.zmq)
    try:
        with held_server() as silent:
            request = {
                "request_type": "run_group",
                "group_inputs": [{k: row[k] for k in ("prompt", "example_id", "task")}] * 2,
                "client_config": {"api_base_url": silent.url, "api_key_var": "OPENAI_API_KEY"},
                "model": "m",
                "sampling_args": {"temperature": 1.0},
                "max_retries": 0,
                "state_columns": ["trajectory", "sampling_args"],
            }
            sock.send_multipart([b"req-1", msgpack.packb(request)])
            wait_for(lambda: silent.in_flight == 2, what="both rollouts to reach the model")
            sock.send_multipart([b"req-1", b""])
            text = lambda: log.read_text() if log.exists() else ""  # noqa: E731
            wait_for(lambda: text().count("released") == 2, what="the sandboxes to be released")
            wait_for(lambda: served.info()["in_flight_groups"] == 0, what="the group to be cancelled")
            assert sock.poll(300_000), "a cancelled request is not answered"
            rid, payload = sock.recv_multipart()
            assert rid == b"req-1" and msgpack.unpackb(payload) == {
                "success": False,
                "error": "Request was cancelled",
            }
    finally:
        sock.close()
        ctx.term()


def test_a_crashed_worker_is_restarted_and_its_groups_answered_with_infra_errors(
    serve_factory: Callable[..., Served], model_server: ScriptedServer
) -> None:
    served = serve_factory(*LOGIC)
    (pid,) = served.info()["worker_pids"]
    out: list[httpx.Response] = []
    with held_server() as slow:
        t = post_in_thread(
            served,
            {"model": "m", "base_url": slow.url, "example_ids": [0, 1], "rollouts_per_example": 2},
            out,
        )
        wait_for(lambda: slow.in_flight == 4, what="the rollouts to reach the model")
        os.kill(pid, signal.SIGKILL)
        t.join(300)
    (resp,) = out
    rows = resp.json()["rollouts"]
    assert resp.status_code == 200 and len(rows) == 4
    assert [(r["example_id"], r["rollout_index"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for r in rows:
        assert r["error"]["category"] == "infra" and r["error"]["type"] == "WorkerCrashedError"
        assert r["reward"] is None
    assert resp.json()["counts"]["errored"] == {"infra": 4}
    wait_for(lambda: served.info()["worker_restarts"] == 1 and len(served.info()["worker_pids"]) == 1)
    assert served.info()["worker_pids"] != [pid]
    again = httpx.post(
        f"{served.url}/rollouts",
        json={"model": "m", "base_url": model_server.url, "example_ids": [0]},
        timeout=300,
    ).json()["rollouts"]
    assert again[0]["error"] is None and again[0]["reward"] is not None


def test_sigterm_drains_in_flight_groups(serve_factory: Callable[..., Served]) -> None:
    served = serve_factory(*LOGIC)
    out: list[httpx.Response] = []
    with held_server() as slow:  # the groups stay in flight until the drain is checked
        t = post_in_thread(
            served,
            {"model": "m", "base_url": slow.url, "example_ids": [0, 1], "rollouts_per_example": 2},
            out,
        )
        wait_for(lambda: slow.in_flight == 4, what="the rollouts to reach the model")
        served.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: httpx.get(f"{served.url}/health").status_code == 503, what="the server to drain")
        refused = httpx.post(
            f"{served.url}/rollouts", json={"model": "m", "base_url": slow.url, "example_ids": [2]}
        )
        assert refused.status_code == 503
        assert served.proc.poll() is None  # still serving the held groups
        slow.release()
        t.join(300)
        assert served.proc.wait(300) == 0
    (resp,) = out
    rows = resp.json()["rollouts"]
    assert resp.status_code == 200 and len(rows) == 4
    assert all(r["error"] is None and r["reward"] is not None for r in rows)


def test_a_hung_worker_is_killed_and_restarted(serve_factory: Callable[..., Served]) -> None:
    served = serve_factory(*LOGIC, "--worker-timeout", "5")  # a loaded machine's worker still answers
    (pid,) = served.info()["worker_pids"]
    out: list[httpx.Response] = []
    with held_server() as slow:
        t = post_in_thread(served, {"model": "m", "base_url": slow.url, "example_ids": [0]}, out)
        wait_for(lambda: slow.in_flight == 1, what="the rollout to reach the model")
        os.kill(pid, signal.SIGSTOP)  # a worker whose event loop never comes back
        t.join(300)
    (resp,) = out
    (row,) = resp.json()["rollouts"]
    assert row["error"]["type"] == "WorkerCrashedError" and "stopped answering" in row["error"]["message"]
    wait_for(
        lambda: served.info()["worker_restarts"] == 1 and served.info()["worker_pids"] not in ([], [pid])
    )


def _alive(pid: int) -> bool:
    """Running: not gone, and not a zombie (exited, waiting to be reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_workers_exit_when_the_server_is_killed(serve_factory: Callable[..., Served]) -> None:
    served = serve_factory(*LOGIC, "--workers", "2")
    pids = served.info()["worker_pids"]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    served.proc.kill()  # no drain, no stop message: the workers must notice on their own
    served.proc.wait(30)
    wait_for(lambda: not any(_alive(p) for p in pids), what="orphaned workers to exit")
