"""Eval runs as records (issue 14): linked to a published version and its content hash, uploaded in
idempotent chunks, finalized into aggregates, read with filters, ranked on the leaderboard, and guarded
by issue 10's authorization rules (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi.testclient import TestClient

from tests.hub._dists import MODULE_SOURCE, Dist
from tests.hub.conftest import Actors, publish
from verifiers.hub import wire

API = "/api/v1"
RUNS = f"{API}/environments/alice/demo-env/runs"


def _hash(client: TestClient, actors: Actors, version: str = "0.1.0") -> str:
    """The content hash the hub computed for ``alice/demo-env`` ``version``."""
    detail = client.get(f"{API}/environments/alice/demo-env", headers=Actors.auth(actors.alice_read)).json()
    return str(next(v["content_hash"] for v in detail["versions"] if v["version"] == version))


def run_body(content_hash: str, **over: Any) -> dict[str, Any]:
    body = {
        "run_key": "run-0001-abcdef",
        "version": "0.1.0",
        "content_hash": content_hash,
        "model": "org/model-a",
        "sampling_args": {"temperature": 0.5},
        "env_args": {},
        "sdk_version": "0.1.0",
        "num_examples": 3,
        "rollouts_per_example": 2,
        "visibility": "public",
    }
    return {**body, **over}


def rollout(example_id: int, index: int, reward: float | None, **over: Any) -> dict[str, Any]:
    row = {
        "example_id": example_id,
        "rollout_index": index,
        "task": "demo",
        "prompt": [{"role": "user", "content": f"q{example_id}"}],
        "completion": [{"role": "assistant", "content": f"a{example_id}"}],
        "answer": f"a{example_id}",
        "reward": reward,
        "metrics": {"exact": reward or 0.0},
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
        "timing": {"generation": 0.1, "scoring": 0.01, "total": 0.11},
    }
    return {**row, **over}


def _published(client: TestClient, actors: Actors, visibility: str | None = None) -> str:
    assert publish(client, actors.alice, *Dist().pair(), visibility=visibility).status_code == 201
    return _hash(client, actors)


def test_a_run_links_to_an_existing_version_and_its_hash(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    created = client.post(RUNS, json=run_body(h), headers=alice)
    assert created.status_code == 201, created.text
    run = created.json()
    assert (run["status"], run["version"], run["content_hash"], run["environment"]) == (
        "uploading",
        "0.1.0",
        h,
        "alice/demo-env",
    )
    assert run["url"] == f"/alice/demo-env/evals/{run['id']}"
    # the same run key again is the same run: an interrupted upload resumes
    again = client.post(RUNS, json=run_body(h), headers=alice)
    assert again.status_code == 200 and again.json()["id"] == run["id"]

    wrong = client.post(RUNS, json=run_body("0" * 64, run_key="run-0002-abcdef"), headers=alice)
    assert wrong.status_code == 409
    assert "does not match alice/demo-env 0.1.0" in wrong.json()["detail"]
    assert "publish this code as a new version first" in wrong.json()["detail"]

    changed = Dist(version="0.2.0", files={"demo_env/__init__.py": MODULE_SOURCE + b"# v2\n"})
    assert publish(client, actors.alice, *changed.pair()).status_code == 201
    h2 = _hash(client, actors, "0.2.0")
    assert h2 != h
    # the hash of another version: the refusal says which one it matches
    other = client.post(RUNS, json=run_body(h2, run_key="run-0003-abcdef"), headers=alice)
    assert other.status_code == 409 and "matches version(s) 0.2.0" in other.json()["detail"]

    missing = client.post(RUNS, json=run_body(h, version="9.9.9", run_key="run-0004-abcdef"), headers=alice)
    assert missing.status_code == 404 and "has no version 9.9.9" in missing.json()["detail"]
    # pushing never creates an environment
    nowhere = client.post(f"{API}/environments/alice/absent-env/runs", json=run_body(h), headers=alice)
    assert nowhere.status_code == 404
    assert client.get(f"{API}/environments/alice/absent-env", headers=alice).status_code == 404


def test_chunks_are_idempotent_and_finalize_computes_aggregates(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    run_id = client.post(RUNS, json=run_body(h), headers=alice).json()["id"]
    first = [rollout(0, 0, 1.0), rollout(0, 1, 0.0), rollout(1, 0, 1.0)]
    r = client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": first}, headers=alice)
    assert r.json() == {"stored": 3, "duplicates": 0, "total": 3}
    errored = rollout(2, 1, None, error={"category": "model", "type": "EmptyResponse", "message": "no text"})
    second = [first[2], rollout(1, 1, 1.0), rollout(2, 0, 0.5), errored]  # one resent
    r = client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": second}, headers=alice)
    assert r.json() == {"stored": 3, "duplicates": 1, "total": 6}
    assert client.get(f"{API}/runs/{run_id}/rollout-keys", headers=alice).json()["keys"] == [
        [0, 0],
        [0, 1],
        [1, 0],
        [1, 1],
        [2, 0],
        [2, 1],
    ]
    out_of_range = client.post(
        f"{API}/runs/{run_id}/rollouts", json={"rollouts": [rollout(0, 2, 1.0)]}, headers=alice
    )
    assert out_of_range.status_code == 422 and "rollout_index 2" in out_of_range.json()["detail"]

    done = client.post(f"{API}/runs/{run_id}/finalize", headers=alice)
    assert done.status_code == 200, done.text
    run = done.json()
    rewards = [1.0, 0.0, 1.0, 1.0, 0.5]  # the errored rollout is counted as an error, never as 0
    mean = sum(rewards) / 5
    sample_sd = math.sqrt(sum((x - mean) ** 2 for x in rewards) / 4)
    assert run["status"] == "complete" and run["rollout_count"] == 6 and run["scored_count"] == 5
    assert math.isclose(run["avg_reward"], mean)
    assert math.isclose(run["reward_ci95"], 1.959963984540054 * sample_sd / math.sqrt(5))  # older clients
    low, high = wire.wilson_interval(mean, 5)  # the interval every page and client shows
    assert math.isclose(run["reward_ci_low"], low) and math.isclose(run["reward_ci_high"], high)
    assert run["error_counts"] == {"model": 1}
    # pass@1 over examples with >= 1 scored rollout: ex0 1/2, ex1 2/2, ex2 0/1; pass@2 only ex0, ex1
    assert math.isclose(run["pass_at_k"]["1"], (0.5 + 1.0 + 0.0) / 3)
    assert math.isclose(run["pass_at_k"]["2"], (1.0 + 1.0) / 2)
    assert math.isclose(run["avg_metrics"]["exact"], mean)
    assert (run["prompt_tokens"], run["completion_tokens"]) == (60, 18)

    late = client.post(
        f"{API}/runs/{run_id}/rollouts", json={"rollouts": [rollout(0, 0, 1.0)]}, headers=alice
    )
    assert late.status_code == 409 and "finalized" in late.json()["detail"]
    assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).json() == run  # idempotent


def test_rollouts_page_and_filter(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    run_id = client.post(RUNS, json=run_body(h), headers=alice).json()["id"]
    rows = [
        rollout(0, 0, 1.0),
        rollout(0, 1, 0.0),
        rollout(1, 0, 0.25),
        rollout(1, 1, None, error={"category": "infra", "type": "Timeout", "message": "slow"}),
    ]
    client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice)
    base = f"{API}/runs/{run_id}/rollouts"

    def keys(query: str) -> list[tuple[int, int]]:
        body = client.get(f"{base}?{query}").json()
        return [(r["example_id"], r["rollout_index"]) for r in body["items"]]

    assert keys("") == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert keys("min_reward=0.2") == [(0, 0), (1, 0)]
    assert keys("max_reward=0.3") == [(0, 1), (1, 0)]
    assert keys("error=infra") == [(1, 1)] and keys("error=any") == [(1, 1)]
    assert keys("error=none") == [(0, 0), (0, 1), (1, 0)]
    assert keys("example_id=1") == [(1, 0), (1, 1)]
    page = client.get(f"{base}?per_page=3&page=2").json()
    assert page["total"] == 4 and [(r["example_id"], r["rollout_index"]) for r in page["items"]] == [(1, 1)]
    one = client.get(f"{base}/1/1").json()
    assert one["error"] == {"category": "infra", "type": "Timeout", "message": "slow"}
    assert one["completion"][0] == {
        "role": "assistant",
        "content": "a1",
        "reasoning_content": None,
        "tool_calls": [],
        "tool_call_id": None,
        "name": None,
    }
    assert client.get(f"{base}/5/0").status_code == 404
    assert client.get(f"{base}?min_reward=nan").status_code == 422


def test_runs_list_filters_and_the_leaderboard(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)

    def finished(key: str, model: str, rewards: list[float], visibility: str = "public") -> int:
        body = run_body(h, run_key=key, model=model, visibility=visibility, rollouts_per_example=1)
        run_id = int(client.post(RUNS, json=body, headers=alice).json()["id"])
        rows = [rollout(i, 0, r) for i, r in enumerate(rewards)]
        client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice)
        assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).status_code == 200
        return run_id

    a_good = finished("key-a-good-01", "model-a", [1.0, 1.0])
    a_late = finished("key-a-late-01", "model-a", [0.0, 1.0])
    b_only = finished("key-b-only-01", "model-b", [0.0, 0.0])
    finished("key-c-priv-01", "model-c", [1.0, 1.0], visibility="private")

    assert client.get(RUNS).json()["total"] == 3  # anonymous: the public runs
    assert client.get(RUNS, headers=alice).json()["total"] == 4  # the owner sees the private one too
    listed = client.get(f"{RUNS}?model=model-a").json()
    assert [r["id"] for r in listed["items"]] == [a_late, a_good]  # newest first
    assert client.get(f"{RUNS}?version=0.1.0").json()["total"] == 3

    best = client.get(f"{API}/environments/alice/demo-env/leaderboard").json()
    assert [(e["model"], e["run_id"]) for e in best["entries"]] == [("model-a", a_good), ("model-b", b_only)]
    assert best["entries"][0]["avg_reward"] == 1.0 and best["entries"][0]["rollout_count"] == 2
    assert set(best["entries"][0]) >= {"reward_ci95", "reward_ci_low", "reward_ci_high", "pass_at_k", "date"}
    latest = client.get(f"{API}/environments/alice/demo-env/leaderboard?pick=latest").json()
    assert [(e["model"], e["run_id"]) for e in latest["entries"]] == [
        ("model-a", a_late),
        ("model-b", b_only),
    ]


def test_writes_need_a_publisher_of_the_namespace(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    body = run_body(h)
    assert client.post(RUNS, json=body).status_code == 401  # before anything about the target is looked up
    assert client.post(f"{API}/environments/nobody/nothing/runs", json=body).status_code == 401
    bob = client.post(RUNS, json=body, headers=Actors.auth(actors.bob))
    assert bob.status_code == 403 and "namespace" in bob.json()["detail"]
    assert client.post(RUNS, json=body, headers=Actors.auth(actors.alice_read)).status_code == 403
    run_id = client.post(RUNS, json=body, headers=Actors.auth(actors.alice)).json()["id"]
    chunk = {"rollouts": [rollout(0, 0, 1.0)]}
    assert client.post(f"{API}/runs/{run_id}/rollouts", json=chunk).status_code == 401
    assert (
        client.post(f"{API}/runs/{run_id}/rollouts", json=chunk, headers=Actors.auth(actors.bob)).status_code
        == 403
    )
    assert client.post(f"{API}/runs/{run_id}/finalize", headers=Actors.auth(actors.bob)).status_code == 403
    # values no real eval produces are refused, never stored
    auth = {**Actors.auth(actors.alice), "Content-Type": "application/json"}
    for bad in ('{"reward": NaN}', '{"reward": 1e999}', '{"reward": 1e9}', '{"metrics": {"m": Infinity}}'):
        payload = '{"rollouts": [' + _merge(rollout(0, 1, 0.0), bad) + "]}"
        r = client.post(f"{API}/runs/{run_id}/rollouts", content=payload, headers=auth)
        assert r.status_code == 422, bad
    nul = rollout(0, 1, 0.0, answer="a\x00b")
    assert (
        client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": [nul]}, headers=auth).status_code
        == 422
    )


def _merge(row: dict[str, Any], raw_fields: str) -> str:
    """``row`` as JSON text with ``raw_fields`` (JSON that Python's json would not write) spliced in."""
    base = json.dumps({k: v for k, v in row.items() if k not in ("reward", "metrics")})
    return base[:-1] + ", " + raw_fields[1:]


def test_private_results_follow_the_environment(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    private_run = client.post(RUNS, json=run_body(h, visibility="private"), headers=alice).json()["id"]
    public_run = client.post(RUNS, json=run_body(h, run_key="public-run-01"), headers=alice).json()["id"]
    for run_id in (private_run, public_run):
        client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": [rollout(0, 0, 1.0)]}, headers=alice)
        client.post(f"{API}/runs/{run_id}/finalize", headers=alice)
    absent = client.get(f"{API}/runs/999999")
    for who in ({}, Actors.auth(actors.bob)):
        for path in ("", "/rollouts", "/rollouts/0/0", "/rollout-keys"):
            r = client.get(f"{API}/runs/{private_run}{path}", headers=who)
            assert r.status_code == 404, (path, who)
        assert client.get(f"{API}/runs/{public_run}", headers=who).status_code == 200
    assert absent.status_code == 404
    assert client.get(f"{API}/runs/{private_run}", headers=Actors.auth(actors.alice_read)).status_code == 200

    # the environment made private: even its public runs are invisible to others
    client.patch(f"{API}/environments/alice/demo-env", json={"visibility": "private"}, headers=alice)
    for who in ({}, Actors.auth(actors.bob)):
        assert client.get(f"{API}/runs/{public_run}", headers=who).status_code == 404
        assert client.get(RUNS, headers=who).status_code == 404
        assert client.get(f"{API}/environments/alice/demo-env/leaderboard", headers=who).status_code == 404
    assert client.get(f"{API}/runs/{public_run}", headers=Actors.auth(actors.alice_read)).status_code == 200
