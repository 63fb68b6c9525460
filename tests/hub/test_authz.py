"""Issue 10 §3: who may write under an environment, what an eval may claim, what a token may mint,
and that an anonymous write learns nothing about its target (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.context import Hub
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

API = "/api/v1"
EVAL = {
    "model": "m",
    "avg_reward": 0.5,
    "num_examples": 4,
    "rollouts_per_example": 4,
    "pass_at_k": {"1": 0.5},
}


def _evals_url(owner: str = "alice", name: str = "demo-env", version: str = "0.1.0") -> str:
    return f"{API}/environments/{owner}/{name}/versions/{version}/evals"


def test_eval_results_need_a_publisher_of_that_namespace(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    assert (
        publish(client, actors.alice, *Dist(name="lab-env").pair(), owner="lab", name="lab-env").status_code
        == 201
    )
    # bob holds a publish token, but not for alice's namespace
    r = client.post(_evals_url(), json=EVAL, headers=Actors.auth(actors.bob))
    assert r.status_code == 403 and "publish" in r.json()["detail"]
    assert client.get(f"{API}/environments/alice/demo-env/evals").json() == []
    assert client.post(_evals_url(), json=EVAL, headers=Actors.auth(actors.alice)).status_code == 201
    # an organisation's member may, an outsider may not
    assert (
        client.post(_evals_url("lab", "lab-env"), json=EVAL, headers=Actors.auth(actors.alice)).status_code
        == 201
    )
    assert (
        client.post(_evals_url("lab", "lab-env"), json=EVAL, headers=Actors.auth(actors.bob)).status_code
        == 403
    )


@pytest.mark.parametrize(
    "change",
    [
        {"avg_reward": 1e300},
        {"avg_reward": -2e6},
        {"pass_at_k": {"one": 0.5}},
        {"pass_at_k": {"0": 0.5}},
        {"pass_at_k": {"-1": 0.5}},
        {"pass_at_k": {"1": 1.5}},
        {"pass_at_k": {"1": -0.1}},
        {"pass_at_k": {"8": 0.5}},  # more than rollouts_per_example
    ],
)
def test_eval_values_are_sane(client: TestClient, actors: Actors, change: dict[str, object]) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    r = client.post(_evals_url(), json={**EVAL, **change}, headers=Actors.auth(actors.alice))
    assert r.status_code == 422, r.text


def _mint(client: TestClient, token: str, **body: object) -> tuple[int, dict[str, object]]:
    r = client.post(f"{API}/tokens", json=body, headers=Actors.auth(token))
    return r.status_code, r.json()


def test_a_token_mints_no_more_scope_and_no_later_expiry(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    status, _ = _mint(client, actors.alice_read, scopes=["publish"])
    assert status == 403
    short, _row = services.create_token(hub, "alice", scopes=["publish"], expires_in=timedelta(days=2))
    status, body = _mint(client, short, scopes=["read"], expires_in_days=30)
    assert status == 403 and "outlive" in str(body["detail"])
    # without an expiry the child inherits the parent's
    status, body = _mint(client, short, scopes=["read"])
    assert status == 201 and body["expires_at"] is not None
    parent_expiry = _row.expires_at
    assert parent_expiry is not None
    assert str(body["expires_at"])[:16] == parent_expiry.isoformat()[:16]
    status, body = _mint(client, short, scopes=["read"], expires_in_days=1)
    assert status == 201


def test_revoking_a_token_revokes_what_it_minted(client: TestClient, hub: Hub, actors: Actors) -> None:
    status, child = _mint(client, actors.alice, scopes=["publish"], name="child")
    assert status == 201
    status, grandchild = _mint(client, str(child["token"]), scopes=["read"], name="grandchild")
    assert status == 201
    _, sibling = _mint(client, actors.alice_read, scopes=["read"], name="unrelated")
    me = Actors.auth(str(grandchild["token"]))
    assert client.get(f"{API}/whoami", headers=me).status_code == 200
    assert client.delete(f"{API}/tokens/{child['id']}", headers=Actors.auth(actors.alice)).status_code == 204
    for token in (child["token"], grandchild["token"]):
        r = client.get(f"{API}/whoami", headers=Actors.auth(str(token)))
        assert r.status_code == 401 and "revoked" in r.json()["detail"]
    assert client.get(f"{API}/whoami", headers=Actors.auth(str(sibling["token"]))).status_code == 200
    assert client.get(f"{API}/whoami", headers=Actors.auth(actors.alice)).status_code == 200


WRITES = [
    ("patch", "/environments/{o}/{n}", {"description": "x"}),
    ("delete", "/environments/{o}/{n}", None),
    ("post", "/environments/{o}/{n}/versions/0.1.0/yank", {"reason": "x"}),
    ("post", "/environments/{o}/{n}/versions/0.1.0/unyank", None),
    ("delete", "/environments/{o}/{n}/versions/0.1.0", None),
    ("post", "/environments/{o}/{n}/versions/0.1.0/evals", EVAL),
    ("put", "/environments/{o}/{n}/star", None),
    ("delete", "/environments/{o}/{n}/star", None),
    ("post", "/environments/{o}/{n}/versions", None),
]


def test_anonymous_writes_are_401_whatever_the_target(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    assert (
        publish(
            client, actors.alice, *Dist(name="secret-env").pair(), name="secret-env", visibility="private"
        ).status_code
        == 201
    )
    targets = [("alice", "demo-env"), ("alice", "secret-env"), ("alice", "absent-env"), ("nobody-here", "x")]
    for method, template, body in WRITES:
        answers = set()
        for owner, name in targets:
            url = API + template.format(o=owner, n=name)
            r = client.request(method, url, json=body)
            answers.add((r.status_code, r.json()["detail"]))
        assert len(answers) == 1 and next(iter(answers))[0] == 401, (method, template, answers)
