"""Eval uploads keep to the run they declared (issue 24 item 18): example ids within ``num_examples``
(0 .. n-1, or for a shuffled selection at most n distinct dataset positions), on SQLite and PostgreSQL,
including the client that pushes a shuffled run directory."""

from __future__ import annotations

import os
from pathlib import Path

from fastapi.testclient import TestClient

from hub_server import services
from tests.hub.conftest import Actors, LiveHub
from tests.hub.test_e2e import make_project, vf_push
from tests.hub.test_eval_push import RULES, _cli_env, _run_dirs, _vf
from tests.hub.test_eval_runs import API, RUNS, _published, rollout, run_body
from tests.scripted_server import ScriptedServer
from verifiers.hub.results import read_results


def post(client: TestClient, run_id: int, rollouts: list[dict[str, object]], token: str):  # type: ignore[no-untyped-def]
    return client.post(
        f"{API}/runs/{run_id}/rollouts", json={"rollouts": rollouts}, headers=Actors.auth(token)
    )


def test_example_ids_beyond_num_examples_are_422(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    run_id = client.post(RUNS, json=run_body(h), headers=Actors.auth(actors.alice)).json()["id"]  # 3 examples
    for bad in (
        [rollout(3, 0, 1.0)],
        [rollout(0, 0, 1.0), rollout(10**6, 0, 1.0)],
        [rollout(2**31 - 1, 1, 0.0)],
    ):
        r = post(client, run_id, bad, actors.alice)
        assert r.status_code == 422 and "out of range" in r.json()["detail"], r.text
    assert (
        post(client, run_id, [rollout(2, 1, 1.0)], actors.alice).json()["total"] == 1
    )  # nothing else stored
    done = client.post(f"{API}/runs/{run_id}/finalize", headers=Actors.auth(actors.alice)).json()
    assert done["rollout_count"] == 1


def test_a_shuffled_run_may_use_any_ids_but_no_more_than_it_declared(
    client: TestClient, actors: Actors
) -> None:
    h = _published(client, actors)
    body = run_body(h, shuffle=True, num_examples=2)
    run_id = client.post(RUNS, json=body, headers=Actors.auth(actors.alice)).json()["id"]
    assert post(client, run_id, [rollout(17, 0, 1.0), rollout(17, 1, 0.0)], actors.alice).status_code == 200
    assert post(client, run_id, [rollout(903, 0, 1.0)], actors.alice).status_code == 200
    r = post(client, run_id, [rollout(903, 1, 1.0), rollout(5, 0, 1.0)], actors.alice)  # a third id
    assert r.status_code == 422 and "distinct example ids to 3" in r.json()["detail"]
    assert post(client, run_id, [rollout(903, 1, 1.0)], actors.alice).json()["total"] == 4


def test_vf_eval_push_of_a_shuffled_selection(live_hub: LiveHub, tmp_path: Path) -> None:
    """The client says a run is shuffled, so its dataset-position ids (here beyond 0..1) are accepted."""
    services.create_user(live_hub.hub, "alice")
    token = services.create_token(live_hub.hub, "alice", scopes=["publish"])[0]
    work = tmp_path / "work"
    project = make_project(work / "environments")
    assert vf_push(project, live_hub.url, token).returncode == 0
    env = {**_cli_env(live_hub.url, token), "VF_HUB_CONFIG": os.devnull}
    with ScriptedServer(rules=RULES, default="no idea") as model:
        args = [
            "demo-env",
            "-m",
            "scripted/m",
            "-b",
            model.url,
            "-n",
            "2",
            "-r",
            "1",
            "--shuffle",
            "--seed",
            "5",
        ]
        ran = _vf("verifiers.cli.eval", *args, "--push", cwd=work, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run_dir,) = _run_dirs(work)
    ids = {r["example_id"] for r in read_results(run_dir)}
    assert len(ids) == 2 and max(ids) >= 2, ids  # the seed picks positions beyond the first two
    assert "pushed eval run" in ran.stdout and "2 rollouts sent" in ran.stdout
