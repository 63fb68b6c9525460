"""vf-serve's HTTP API against a real subprocess and the scripted model server (logic-env)."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import pytest

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, Served
from verifiers.envs import load_environment
from verifiers.types import RolloutResult


def rollouts_body(server: ScriptedServer, **kw: Any) -> dict[str, Any]:
    return {"model": "m", "base_url": server.url, "return_tokens": "both", **kw}


def in_process(server: ScriptedServer, example_ids: list[int], n: int) -> dict[tuple[int, int], Any]:
    env = load_environment(LOGIC[0], **LOGIC[1])
    rows = [r for r in env.select_rows() if r["example_id"] in example_ids]
    states = env.generate(rows, server.url, "m", rollouts_per_example=n)
    return {(s["example_id"], s["rollout_index"]): s for s in states}


def test_health_info_dataset(logic_served: Served) -> None:
    with logic_served.client() as c:
        assert c.get("/health").json() == {"status": "ok"}
        info = c.get("/info").json()
        assert info["env_id"] == "logic-env" and info["env_version"]
        assert len(info["env_content_hash"]) == 64
        assert info["dataset_sizes"] == {"train": 6, "eval": 6}
        assert info["requires_group_scoring"] is False
        page = c.get("/dataset", params={"split": "train", "offset": 4, "limit": 10}).json()
        assert (page["split"], page["total"], page["offset"]) == ("train", 6, 4)
        assert [r["example_id"] for r in page["rows"]] == [4, 5]
        assert set(page["rows"][0]) == {"example_id", "prompt", "answer", "info", "task"}
        packed = c.get("/dataset", params={"limit": 2}, headers={"Accept": "application/msgpack"})
        assert packed.headers["content-type"].startswith("application/msgpack")
        assert [r["example_id"] for r in msgpack.unpackb(packed.content)["rows"]] == [0, 1]
        assert c.get("/dataset", params={"split": "test"}).status_code == 400


def test_bad_requests_say_what_is_wrong(logic_served: Served, model_server: ScriptedServer) -> None:
    with logic_served.client() as c:
        r = c.post("/rollouts", json={"model": "m", "base_url": model_server.url})
        assert r.status_code == 422 and "example_ids or rows" in r.text
        r = c.post("/rollouts", json=rollouts_body(model_server, example_ids=[99]))
        assert r.status_code == 400 and "example_id 99" in r.json()["error"]
        r = c.post("/rollouts", json=rollouts_body(model_server, example_ids=[0], bogus=1))
        assert r.status_code == 422


def test_rollouts_match_the_in_process_engine(logic_served: Served, model_server: ScriptedServer) -> None:
    with logic_served.client() as c:
        r = c.post(
            "/rollouts", json=rollouts_body(model_server, example_ids=[0, 1, 2, 3], rollouts_per_example=2)
        )
    assert r.status_code == 200
    sent = model_server.requests[-1]
    assert sent.get("return_token_ids") is True and sent.get("logprobs") is True  # return_tokens="both"
    rows = r.json()["rollouts"]
    assert [(x["example_id"], x["rollout_index"]) for x in rows] == [
        (e, i) for e in range(4) for i in range(2)
    ]
    expected = in_process(model_server, [0, 1, 2, 3], 2)
    rewards = set()
    for row in rows:
        result = RolloutResult.model_validate(row)  # contract 3.3
        want = expected[(result.example_id, result.rollout_index)]
        assert result.error is None
        assert result.completion == want["completion"]
        assert result.reward == want["reward"] and result.metrics == want["metrics"]
        rewards.add(result.reward)
        step = result.trajectory[0]
        assert len(step.prompt_ids) == len(step.prompt_mask) == 10
        assert len(step.completion_ids) == len(step.completion_mask) == len(step.completion_logprobs or [])
        assert result.env_id == "logic-env"
    assert rewards == {0.0, 1.0}  # the scripted answers are right for some examples only


def test_msgpack_request_and_response(logic_served: Served, model_server: ScriptedServer) -> None:
    body = msgpack.packb(rollouts_body(model_server, example_ids=[1]))
    with logic_served.client() as c:
        r = c.post(
            "/rollouts",
            content=body,
            headers={"Content-Type": "application/msgpack", "Accept": "application/msgpack"},
        )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/msgpack")
    out = msgpack.unpackb(r.content)
    assert [x["example_id"] for x in out["rollouts"]] == [1]
    assert out["counts"] == {"groups": 1, "rollouts": 1, "scored": 1, "errored": {}}


def test_ndjson_streams_one_line_per_group(logic_served: Served, model_server: ScriptedServer) -> None:
    rows = [{"question": "Evaluate: True and not False", "answer": "True", "example_id": 100}]
    with (
        logic_served.client() as c,
        c.stream(
            "POST",
            "/rollouts",
            json=rollouts_body(model_server, example_ids=[0, 1, 2], rollouts_per_example=3),
            headers={"Accept": "application/x-ndjson"},
        ) as s,
    ):
        lines = [json.loads(line) for line in s.iter_lines() if line]
        given = c.post("/rollouts", json=rollouts_body(model_server, rows=rows)).json()["rollouts"]
    groups, done = lines[:-1], lines[-1]
    assert sorted(g["example_id"] for g in groups) == [0, 1, 2]
    assert all(g["type"] == "group" and len(g["rollouts"]) == 3 for g in groups)
    assert done == {"type": "done", "counts": {"groups": 3, "rollouts": 9, "scored": 9, "errored": {}}}
    assert given[0]["example_id"] == 100 and given[0]["prompt"][-1]["content"].startswith("Evaluate")


def test_concurrency_is_bounded_across_requests(logic_served: Served) -> None:
    # --max-concurrent 3 (the module's server): two requests of 6 slow rollouts never exceed 3 at once.
    import threading

    # The first requests wait until the cap's worth is in flight: it is reached whatever the machine's speed.
    with ScriptedServer(default="<answer>True</answer>", delay=0.3, hold_after=0) as slow:
        body = {"model": "m", "base_url": slow.url, "example_ids": [0, 1, 2], "rollouts_per_example": 2}
        codes: list[int] = []

        def post() -> None:
            with logic_served.client() as c:
                codes.append(c.post("/rollouts", json=body).status_code)

        threads = [threading.Thread(target=post) for _ in range(2)]
        for t in threads:
            t.start()
        slow.wait_for_requests(3)
        slow.release()
        for t in threads:
            t.join(300)
        assert codes == [200, 200]
        assert slow.max_in_flight == 3


@pytest.mark.parametrize("path", ["/health", "/info"])
def test_get_routes_answer_msgpack(logic_served: Served, path: str) -> None:
    with logic_served.client() as c:
        r = c.get(path, headers={"Accept": "application/msgpack"})
    assert isinstance(msgpack.unpackb(r.content), dict)


def test_max_seq_len_reaches_the_rollouts(logic_served: Served, model_server: ScriptedServer) -> None:
    # The scripted prompts are 10 tokens: a budget of 5 ends each rollout as truncated, masks aligned.
    body = rollouts_body(model_server, example_ids=[0, 1], max_seq_len=5)
    with logic_served.client() as c:
        short = c.post("/rollouts", json=body).json()["rollouts"]
        normal = c.post("/rollouts", json={**body, "max_seq_len": None}).json()["rollouts"]
    for row in short:
        result = RolloutResult.model_validate(row)
        assert result.is_truncated
        step = result.trajectory[0]
        assert step.overlong_prompt and len(step.prompt_ids) == len(step.prompt_mask) == 5
    assert not any(r["is_truncated"] for r in normal)  # other requests keep the environment's setting
