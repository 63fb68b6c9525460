"""Issue 32 item 2: a private environment shared with one user (a read grant) is readable by that user on
every read path — the JSON API, search and its counts, tag counts, both forms of the simple index, files,
pages, public runs and the leaderboard — and by no one else; private runs stay private; only owners and
admins of its namespace share, and a revoked grant is a 404 from the next request on, on every worker,
whatever the caches kept (SQLite and PostgreSQL)."""

from __future__ import annotations

import base64

import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.app import create_app
from hub_server.auth import COOKIE_NAME
from hub_server.context import Hub
from hub_server.principal_cache import PrincipalCache
from hub_server.settings import HubSettings
from hub_server.simple_index import JSON_V1
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish, web_session
from tests.hub.test_eval_runs import rollout, run_body

API = "/api/v1"
ENV = f"{API}/environments/alice/demo-env"
GRANTS = f"{ENV}/grants"
WHEEL = Dist().wheel()[0]
#: Every read path of the environment itself (runs are checked apart: private ones stay private).
READS = [
    ENV,
    f"{ENV}/versions",
    f"{ENV}/versions/0.1.0",
    f"{ENV}/versions/0.1.0/files",
    f"{ENV}/evals",
    f"{ENV}/runs",
    f"{ENV}/leaderboard",
    f"{ENV}/versions/0.1.0/smoke-check",
    f"{API}/resolve?spec=alice/demo-env",
    f"{API}/resolve?spec=demo-env@==0.1.0",
    "/simple/demo-env/",
    "/simple/demo-env/?format=json",
    f"/files/demo-env/{WHEEL}",
    f"/files/demo-env/{WHEEL}.metadata",
    "/alice/demo-env",
    "/alice/demo-env/source/0.1.0/demo_env/__init__.py",
]


def _private_env_with_runs(client: TestClient, actors: Actors) -> tuple[int, int]:
    """alice/demo-env, private, with one complete public run and one private run: their ids."""
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    alice = Actors.auth(actors.alice)
    content_hash = client.get(ENV, headers=alice).json()["versions"][0]["content_hash"]
    ids = []
    for key, visibility in (("run-public-0001", "public"), ("run-private-001", "private")):
        body = run_body(
            content_hash, run_key=key, visibility=visibility, num_examples=1, rollouts_per_example=1
        )
        run = client.post(f"{ENV}/runs", json=body, headers=alice)
        assert run.status_code == 201, run.text
        run_id = run.json()["id"]
        chunk = {"rollouts": [rollout(0, 0, 1.0)]}
        assert client.post(f"{API}/runs/{run_id}/rollouts", json=chunk, headers=alice).status_code == 200
        assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).status_code == 200
        ids.append(run_id)
    return ids[0], ids[1]


def _carol(hub: Hub) -> str:
    services.create_user(hub, "carol")
    return services.create_token(hub, "carol", scopes=["read"])[0]


def _sees(client: TestClient, headers: dict[str, str]) -> dict[str, int]:
    return {url: client.get(url, headers=headers).status_code for url in READS}


def test_a_read_grant_opens_every_read_path_to_its_user_alone(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    public_run, private_run = _private_env_with_runs(client, actors)
    carol = Actors.auth(_carol(hub))
    bob = Actors.auth(actors.bob)
    basic = {"Authorization": "Basic " + base64.b64encode(f"__token__:{actors.bob}".encode()).decode()}
    for who in (bob, basic, carol, {}):
        assert set(_sees(client, who).values()) == {404}, who

    r = client.put(f"{GRANTS}/bob", headers=Actors.auth(actors.alice))
    assert r.status_code == 200, r.text
    assert (r.json()["environment"], r.json()["username"], r.json()["granted_by"]) == (
        "alice/demo-env",
        "bob",
        "alice",
    )
    for who in (bob, basic):  # a Bearer token and pip's Basic form
        assert _sees(client, who) == {url: 200 for url in READS}, who
    # bob finds it: search, its count, the tag counts, the index root in both forms, the home page
    found = client.get(f"{API}/environments?q=demo", headers=bob).json()
    assert found["total"] == 1 and found["items"][0]["full_name"] == "alice/demo-env"
    assert client.get(f"{API}/environments?per_page=1&page=2", headers=bob).json()["total"] == 1
    assert b"demo-env" in client.get("/simple/", headers=bob).content
    root = client.get("/simple/", headers={**bob, "Accept": JSON_V1}).json()
    assert "demo-env" in [p["name"] for p in root["projects"]]
    assert "alice/demo-env" in client.get("/", headers=bob).text
    # the public run and the leaderboard, never the private run
    assert client.get(f"{API}/runs/{public_run}", headers=bob).status_code == 200
    assert client.get(f"{API}/runs/{private_run}", headers=bob).status_code == 404
    assert [r["id"] for r in client.get(f"{ENV}/runs", headers=bob).json()["items"]] == [public_run]
    assert [e["run_id"] for e in client.get(f"{ENV}/leaderboard", headers=bob).json()["entries"]] == [
        public_run
    ]
    assert client.get(f"/alice/demo-env/evals/{public_run}", headers=bob).status_code == 200
    assert client.get(f"/alice/demo-env/evals/{private_run}", headers=bob).status_code == 404
    # the web session signed in with bob's token sees the page too
    client.cookies.set(COOKIE_NAME, web_session(hub, actors.bob))
    assert client.get("/alice/demo-env").status_code == 200
    client.cookies.clear()
    # and it is read access only: no publishing, no yanking, no settings, no sharing on
    assert publish(client, actors.bob, *Dist(version="0.2.0").pair()).status_code == 403
    assert client.post(f"{ENV}/versions/0.1.0/yank", json={}, headers=bob).status_code == 403
    assert client.patch(ENV, json={"visibility": "public"}, headers=bob).status_code == 403
    assert client.put(f"{GRANTS}/carol", headers=bob).status_code == 403
    assert client.get(GRANTS, headers=bob).status_code == 403
    # carol, anonymous callers: nothing changed
    for who in (carol, {}):
        assert set(_sees(client, who).values()) == {404}, who
        assert client.get(f"{API}/environments", headers=who).json()["total"] == 0


def test_a_revoked_grant_is_a_404_at_once_on_every_worker_whatever_was_cached(
    settings: HubSettings,
    app,
    client: TestClient,
    hub: Hub,
    actors: Actors,  # type: ignore[no-untyped-def]
) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    alice, bob = Actors.auth(actors.alice), Actors.auth(actors.bob)
    assert client.put(f"{GRANTS}/bob", headers=alice).status_code == 200
    hot = [ENV, f"{API}/environments?q=demo", f"{API}/resolve?spec=alice/demo-env"]
    for url in [*hot, "/simple/demo-env/", f"/files/demo-env/{WHEEL}"]:
        for _ in range(2):  # the second answer of a hot read comes from this worker's memory
            assert client.get(url, headers=bob).status_code == 200, url
    principals: PrincipalCache = app.state.principals
    assert len(principals.answers) == len(hot)
    # revoked through another worker: its own caches, the same database
    with TestClient(create_app(settings.model_copy(update={"cache_poll_seconds": 3600.0}))) as other:
        assert other.delete(f"{GRANTS}/bob", headers=alice).status_code == 204
        assert other.get(ENV, headers=bob).status_code == 404
    for url in [ENV, f"{API}/resolve?spec=alice/demo-env", "/simple/demo-env/", f"/files/demo-env/{WHEEL}"]:
        assert client.get(url, headers=bob).status_code == 404, url
    assert client.get(f"{API}/environments?q=demo", headers=bob).json()["total"] == 0
    assert b"demo-env" not in client.get("/simple/", headers=bob).content
    assert client.get(ENV, headers=Actors.auth(actors.alice_read)).status_code == 200  # the owner still reads
    # and shared again, bob reads again (the generation moved on again)
    assert client.put(f"{GRANTS}/bob", headers=alice).status_code == 200
    assert client.get(ENV, headers=bob).status_code == 200


def test_signed_in_answers_are_kept_per_set_of_grants(
    app,
    client: TestClient,
    hub: Hub,
    actors: Actors,  # type: ignore[no-untyped-def]
) -> None:
    """Two callers in the same namespaces but with different grants never share a kept answer."""
    for name in ("demo-env", "other-env"):
        r = publish(
            client, actors.alice, *Dist(name=name).pair(), owner="lab", name=name, visibility="private"
        )
        assert r.status_code == 201
    services.create_user(hub, "dave")
    for user in ("bob", "dave"):
        services.add_member(hub, "lab", user)  # both read lab's environments ...
    services.create_org(hub, "other", ["alice"])
    r = publish(
        client,
        actors.alice,
        *Dist(name="third-env").pair(),
        owner="other",
        name="third-env",
        visibility="private",
    )
    assert r.status_code == 201
    assert (
        client.put(
            f"{API}/environments/other/third-env/grants/bob", headers=Actors.auth(actors.alice)
        ).status_code
        == 200
    )
    dave = services.create_token(hub, "dave", scopes=["read"])[0]
    url = f"{API}/environments?sort=name"
    seen: dict[str, list[str]] = {}
    for _ in range(2):  # interleaved: each second answer comes from memory
        for who, token in (("bob", actors.bob), ("dave", dave)):
            names = [e["name"] for e in client.get(url, headers=Actors.auth(token)).json()["items"]]
            assert seen.setdefault(who, names) == names
    assert seen == {"bob": ["demo-env", "other-env", "third-env"], "dave": ["demo-env", "other-env"]}


def test_only_owners_and_admins_of_the_namespace_manage_grants(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    r = publish(client, actors.alice, *Dist().pair(), owner="lab", visibility="private")
    assert r.status_code == 201
    services.create_user(hub, "carol")
    services.add_member(hub, "lab", "bob")  # a member
    services.add_member(hub, "lab", "carol", "admin")
    carol = services.create_token(hub, "carol", scopes=["publish"])[0]
    lab = f"{API}/environments/lab/demo-env/grants"
    services.create_user(hub, "erin")
    r = client.put(f"{lab}/erin", headers=Actors.auth(actors.bob))
    assert r.status_code == 403 and "only owners and admins of lab" in r.json()["detail"], r.text
    assert client.get(lab, headers=Actors.auth(actors.bob)).status_code == 403
    assert client.put(f"{lab}/erin", headers=Actors.auth(carol)).status_code == 200
    again = client.put(f"{lab}/erin", headers=Actors.auth(actors.alice))  # sharing again changes nothing
    assert again.status_code == 200 and again.json()["granted_by"] == "carol"
    assert [g["username"] for g in client.get(lab, headers=Actors.auth(actors.alice)).json()] == ["erin"]
    # a read token of an owner may not share; an anonymous caller learns nothing
    assert client.put(f"{lab}/erin", headers=Actors.auth(actors.alice_read)).status_code == 403
    assert client.put(f"{lab}/erin").status_code == 401
    # clear refusals: an unknown user, an organisation, a grant that is not there
    r = client.put(f"{lab}/nobody", headers=Actors.auth(actors.alice))
    assert r.status_code == 404 and "user 'nobody' does not exist" in r.json()["detail"]
    r = client.put(f"{lab}/lab", headers=Actors.auth(actors.alice))
    assert r.status_code == 422 and "is an organisation" in r.json()["detail"]
    r = client.delete(f"{lab}/bob", headers=Actors.auth(actors.alice))
    assert r.status_code == 404 and "not shared with bob" in r.json()["detail"]
    assert client.delete(f"{lab}/erin", headers=Actors.auth(carol)).status_code == 204
    assert client.get(lab, headers=Actors.auth(actors.alice)).json() == []
    # someone who may not read it gets the 404 of every read path
    assert (
        client.put(
            f"{API}/environments/lab/demo-env/grants/erin", headers=Actors.auth(_carol_like(hub))
        ).status_code
        == 404
    )


def _carol_like(hub: Hub) -> str:
    services.create_user(hub, "frank")
    return services.create_token(hub, "frank", scopes=["publish"])[0]


@pytest.mark.parametrize("visibility", ["public", "private"])
def test_a_public_environment_keeps_its_grants_for_when_it_is_private(
    client: TestClient, actors: Actors, visibility: str
) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility=visibility).status_code == 201
    alice, bob = Actors.auth(actors.alice), Actors.auth(actors.bob)
    assert client.put(f"{GRANTS}/bob", headers=alice).status_code == 200
    assert client.patch(ENV, json={"visibility": "private"}, headers=alice).status_code == 200
    assert client.get("/simple/demo-env/", headers=bob).status_code == 200
    assert client.get("/simple/demo-env/").status_code == 404
