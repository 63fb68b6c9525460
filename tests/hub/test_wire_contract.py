"""The wire contract: every ``HubClient`` method, run against a real hub, gets an answer its model parses
without loss — no field the hub sends is dropped, retyped or missing (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from pydantic import BaseModel

from tests.hub._dists import Dist
from tests.hub.conftest import Actors, LiveHub
from verifiers.hub.client import HubClient, HubClientError
from verifiers.hub.wire import (
    EvalRunCreate,
    MessageRecord,
    Problem,
    RolloutRecord,
    ToolCallRecord,
)

M = TypeVar("M", bound=BaseModel)
#: Methods that build URLs or manage the connection, without asking the hub anything.
LOCAL_ONLY = {"close", "index_url", "token_index_url", "environment_url", "require_token"}


@dataclass(frozen=True)
class Exchange:
    path: str
    status: int
    body: bytes


class Recorder(httpx.HTTPTransport):
    """A real transport that keeps every response body the client receives."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        response.read()  # the client reads it again from memory, streamed or not
        self.exchanges.append(Exchange(request.url.path, response.status_code, response.content))
        return response


def assert_round_trips(model: type[M], body: bytes) -> M:
    raw = json.loads(body)
    parsed = model.model_validate(raw)
    assert parsed.model_dump(mode="json") == raw, f"{model.__name__} does not carry the hub's answer as sent"
    return parsed


def test_every_client_method_parses_real_hub_answers(
    live_hub: LiveHub, actors: Actors, tmp_path: Path
) -> None:
    recorder = Recorder()
    hub = HubClient(url=live_hub.url, token=actors.alice, transport=recorder)
    wheel, sdist = Dist(version="0.1.0").write(tmp_path / "dist")
    published = hub.publish("alice", "demo-env", wheel, sdist)  # first: the other calls need a version
    wheel_file = next(f for f in published.files if f.kind == "bdist_wheel")
    calls: dict[str, Callable[[], Any]] = {
        "whoami": hub.whoami,
        "resolve": lambda: hub.resolve("alice/demo-env@>=0.1"),
        "environment": lambda: hub.environment("alice", "demo-env"),
        "search": lambda: hub.search("demo", tags=["demo"], owner="alice", sort="name"),
        "yank": lambda: hub.yank("alice", "demo-env", "0.1.0", reason="broken"),
        "unyank": lambda: hub.unyank("alice", "demo-env", "0.1.0"),
        "download": lambda: hub.download(wheel_file, tmp_path / "downloads"),
        # who may read it: visibility and read grants
        "set_visibility": lambda: hub.set_visibility("alice", "demo-env", "private"),
        "share": lambda: hub.share("alice", "demo-env", "bob"),
        "grants": lambda: hub.grants("alice", "demo-env"),
        "unshare": lambda: hub.unshare("alice", "demo-env", "bob"),
        # eval runs: create, upload a chunk, resume keys, finalize, then every read
        "create_run": lambda: hub.create_run("alice", "demo-env", run_body),
        "upload_rollouts": lambda: hub.upload_rollouts(results["create_run"].id, [rollout]),
        "rollout_keys": lambda: hub.rollout_keys(results["create_run"].id),
        "finalize_run": lambda: hub.finalize_run(results["create_run"].id),
        "set_run_visibility": lambda: hub.set_run_visibility(results["create_run"].id, "private"),
        "run": lambda: hub.run(results["create_run"].id),
        "runs": lambda: hub.runs("alice", "demo-env", version="0.1.0", model="m"),
        "rollouts": lambda: hub.rollouts(results["create_run"].id, min_reward=0.5, error="none"),
        "rollout": lambda: hub.rollout(results["create_run"].id, 0, 0),
        "leaderboard": lambda: hub.leaderboard("alice", "demo-env", pick="latest"),
    }
    run_body = EvalRunCreate(
        run_key="wire-contract-run",
        version="0.1.0",
        content_hash=published.content_hash,
        model="m",
        num_examples=1,
        rollouts_per_example=1,
        visibility="public",
    )
    rollout = RolloutRecord(
        example_id=0,
        rollout_index=0,
        prompt=[MessageRecord(role="user", content="q")],
        completion=[
            MessageRecord(
                role="assistant",
                content=None,
                tool_calls=[ToolCallRecord(id="c1", name="calc", arguments='{"x": 1}')],
            ),
            MessageRecord(role="tool", content="2", tool_call_id="c1"),
        ],
        reward=1.0,
        metrics={"exact": 1.0},
    )
    results: dict[str, Any] = {"publish": published}
    bodies: dict[str, bytes] = {"publish": recorder.exchanges[-1].body}
    for name, call in calls.items():
        results[name] = call()
        bodies[name] = recorder.exchanges[-1].body

    public = {n for n, _ in inspect.getmembers(HubClient, inspect.isfunction) if not n.startswith("_")}
    assert set(results) == public - LOCAL_ONLY, "a HubClient method talks to the hub but is not checked here"
    assert [g.model_dump(mode="json") for g in results["grants"]] == json.loads(bodies["grants"])
    assert [g.username for g in results["grants"]] == ["bob"]
    for name, result in results.items():
        returns = typing.get_type_hints(getattr(HubClient, name))["return"]
        if isinstance(returns, type) and issubclass(returns, BaseModel):
            assert assert_round_trips(returns, bodies[name]) == result, name
    # A file is checked by what its HubFile promised: the bytes the hub serves have that size and hash.
    served = bodies["download"]
    assert (len(served), hashlib.sha256(served).hexdigest()) == (wheel_file.size, wheel_file.sha256)
    assert results["download"].read_bytes() == served
    hub.close()


def test_refusals_are_problems(live_hub: LiveHub, actors: Actors) -> None:
    recorder = Recorder()
    with HubClient(url=live_hub.url, token=actors.alice, transport=recorder) as hub:
        for call in (lambda: hub.resolve("no-such-env"), lambda: hub.environment("alice", "nothing")):
            with pytest.raises(HubClientError) as refused:
                call()
            problem = assert_round_trips(Problem, recorder.exchanges[-1].body)
            assert refused.value.status_code == 404 and problem.detail in str(refused.value)
