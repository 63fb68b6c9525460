"""What a request may make vf-serve do (issue 24 items 6 and 11), on a real subprocess over both transports:
only the key variables (and endpoints) allowed at start, bounded group sizes and request sizes, and
/health answering while big requests are handled."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import msgpack
import pytest

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, Served

SECRET = "topsecret-3f9a1c"


@contextmanager
def dealer(served: Served) -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
    """A reference-protocol client: ``ask(request)`` -> the decoded answer."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(served.zmq)
    count = iter(range(1_000_000))

    def ask(request: dict[str, Any]) -> dict[str, Any]:
        rid = f"r{next(count)}".encode()
        sock.send_multipart([rid, msgpack.packb(request)])
        assert sock.poll(120_000), "no answer from the ZMQ port"
        got, payload = sock.recv_multipart()
        assert got == rid
        return msgpack.unpackb(payload)  # type: ignore[no-any-return]

    try:
        yield ask
    finally:
        sock.close()
        ctx.term()


def zmq_group(served: Served, base_url: str, api_key_var: str | None, n: int = 1) -> dict[str, Any]:
    row = httpx.get(f"{served.url}/dataset", params={"limit": 1}).json()["rows"][0]
    return {
        "request_type": "run_group",
        "group_inputs": [{k: row[k] for k in ("prompt", "example_id", "task")}] * n,
        "client_config": {"api_base_url": base_url, "api_key_var": api_key_var},
        "model": "m",
        "sampling_args": {},
        "max_retries": 0,
        "state_columns": [],
    }


def secret_seen(server: ScriptedServer) -> bool:
    return any(SECRET in str(meta.get("headers", {})) for meta in server.request_meta)


# --- item 6: key variables and endpoints are allow-listed at start -----------------------------------------
@pytest.mark.parametrize("var", ["SOME_SECRET", "AWS_SECRET_ACCESS_KEY", "PATH", "HOME", "openai_api_key"])
def test_a_request_cannot_send_a_server_variable_to_its_url(
    serve_factory: Callable[..., Served], monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    monkeypatch.setenv("SOME_SECRET", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    served = serve_factory(*LOGIC)
    with ScriptedServer() as attacker:
        body = {"model": "m", "base_url": attacker.url, "api_key_var": var, "example_ids": [0]}
        r = httpx.post(f"{served.url}/rollouts", json=body, timeout=60)
        assert r.status_code == 403, r.text
        assert var in r.json()["error"] and "--api-key-var" in r.json()["error"]
        with dealer(served) as ask:
            answer = ask(zmq_group(served, attacker.url, var))
        assert answer["success"] is False and "--api-key-var" in answer["error"]
        assert attacker.request_meta == [] and not secret_seen(attacker)


def test_allowed_variables_and_endpoints_are_the_only_ones(
    serve_factory: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_SECRET", SECRET)
    with ScriptedServer() as model, ScriptedServer() as attacker:
        served = serve_factory(
            *LOGIC, "--api-key-var", "SOME_SECRET", "--allow-base-url", model.url, "--max-concurrent", "2"
        )
        ok = {"model": "m", "base_url": model.url, "api_key_var": "SOME_SECRET", "example_ids": [0]}
        r = httpx.post(f"{served.url}/rollouts", json=ok, timeout=120)
        assert r.status_code == 200, r.text
        assert any(m["headers"].get("authorization") == f"Bearer {SECRET}" for m in model.request_meta)
        # the default names are no longer allowed once the operator chose others
        r = httpx.post(f"{served.url}/rollouts", json={**ok, "api_key_var": "OPENAI_API_KEY"}, timeout=60)
        assert r.status_code == 403
        host, port = model.url.split("//")[1].split("/")[0].split(":")
        other = attacker.url
        for base_url in (
            other,
            f"http://localhost:{port}/v1",  # another host name for the same server is another endpoint
            f"http://{host}:{port}/v2",
            f"http://{host}:{port}@{other.split('//')[1]}",  # user info: parsers disagree on the host
            f"http://{host}:{port}\\@evil.invalid/v1",
            f"http://{host}:{port}/v1?x=@evil.invalid",
            f"http://{host}:{port}/v1#@evil.invalid",
            f"ftp://{host}:{port}/v1",
            [model.url, other],  # every replica must be allowed
        ):
            body = {**ok, "base_url": base_url}
            r = httpx.post(f"{served.url}/rollouts", json=body, timeout=60)
            assert r.status_code == 403, (base_url, r.text)
        with dealer(served) as ask:
            assert ask(zmq_group(served, other, "SOME_SECRET"))["success"] is False
            assert ask(zmq_group(served, model.url, "SOME_SECRET"))["success"] is True
        assert attacker.request_meta == [] and not secret_seen(attacker)


def test_bad_allow_lists_are_refused_at_start(serve_factory: Callable[..., Served]) -> None:
    with pytest.raises(AssertionError, match="did not start"):
        serve_factory(*LOGIC, "--api-key-var", "NOT A NAME")
    with pytest.raises(AssertionError, match="did not start"):
        serve_factory(*LOGIC, "--allow-base-url", "http://user@host/v1")


# --- item 11: request bounds, and /health under load -----------------------------------------------------
def test_oversized_requests_are_422_without_work(logic_served: Served, model_server: ScriptedServer) -> None:
    base = {"model": "m", "base_url": model_server.url}
    cases = [
        ({"example_ids": [0], "rollouts_per_example": 3_000_000}, "rollouts_per_example"),
        ({"example_ids": [0], "rollouts_per_example": 1025}, "rollouts_per_example"),
        ({"example_ids": [0] * 20_000}, "example_ids"),
        ({"rows": [{"prompt": [{"role": "user", "content": "x"}]}] * 20_000}, "rows"),
        ({"example_ids": list(range(6)) * 100, "rollouts_per_example": 1000}, "split the batch"),
    ]
    model_server.reset_stats()
    with logic_served.client() as c:
        for extra, field in cases:
            r = c.post("/rollouts", json={**base, **extra})
            assert r.status_code == 422, (field, r.text[:300])
            assert field in r.text and len(r.content) < 4096  # the refused input is not echoed back
        r = c.post(
            "/rollouts", content=b" " * (65 * 1024 * 1024), headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 413
        assert c.get("/info").json()["in_flight_groups"] == 0
    assert model_server.request_meta == []
    with dealer(logic_served) as ask:
        answer = ask(zmq_group(logic_served, model_server.url, None, n=40_000))
    assert answer["success"] is False and "at most 32768" in answer["error"]


def test_health_answers_while_big_requests_are_handled(
    serve_factory: Callable[..., Served], model_server: ScriptedServer
) -> None:
    served = serve_factory(*LOGIC, "--max-concurrent", "8")
    rows = [{"prompt": [{"role": "user", "content": f"q{i}"}], "answer": "True"} for i in range(10_000)]
    big = {"model": "m", "base_url": model_server.url, "rows": rows, "rollouts_per_example": 3}
    stop = threading.Event()
    errors: list[BaseException] = []

    def load() -> None:  # big bodies, one after another: parsed, validated, their groups started
        try:
            while not stop.is_set():
                with httpx.stream("POST", f"{served.url}/rollouts", json=big, timeout=120,
                                  headers={"Accept": "application/x-ndjson"}) as r:  # fmt: skip
                    assert r.status_code == 200
                    next(r.iter_lines())  # one group done; closing cancels the rest
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=load) for _ in range(3)]
    for t in workers:
        t.start()
    try:
        for _ in range(20):  # each answer within a deadline that only guards a hang
            assert httpx.get(f"{served.url}/health", timeout=30).json() == {"status": "ok"}
            assert httpx.get(f"{served.url}/info", timeout=30).status_code == 200
    finally:
        stop.set()
        for t in workers:
            t.join(180)
    assert errors == []
