"""The JSON API: search, detail, resolve, yank, stars, evals, tokens, admin delete (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.context import Hub
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

API = "/api/v1"


@pytest.fixture
def catalogue(client: TestClient, actors: Actors) -> None:
    """alice: demo-env 0.1.0, 0.2.0, 0.3.0b1 and math-env; bob: code-env (private) and zeta-env."""
    for version in ("0.1.0", "0.2.0", "0.3.0b1"):
        assert publish(client, actors.alice, *Dist(version=version).pair()).status_code == 201
    math = Dist(name="math-env", summary="Competition maths", keywords=["math", "reasoning"])
    assert publish(client, actors.alice, *math.pair(), name="math-env").status_code == 201
    code = Dist(name="code-env", summary="Code tasks", keywords=["code"])
    assert (
        publish(
            client, actors.bob, *code.pair(), owner="bob", name="code-env", visibility="private"
        ).status_code
        == 201
    )
    zeta = Dist(name="zeta-env", summary="Last by name", keywords=["math"])
    assert publish(client, actors.bob, *zeta.pair(), owner="bob", name="zeta-env").status_code == 201


def names(page: dict) -> list[str]:  # type: ignore[type-arg]
    return [item["full_name"] for item in page["items"]]


def test_publish_response_and_detail(client: TestClient, actors: Actors) -> None:
    r = publish(client, actors.alice, *Dist().pair())
    assert r.status_code == 201
    body = r.json()
    assert (
        body["environment"] == "alice/demo-env" and body["version"] == "0.1.0" and body["uploader"] == "alice"
    )
    assert {f["kind"] for f in body["files"]} == {"bdist_wheel", "sdist"}
    detail = client.get(f"{API}/environments/alice/demo-env").json()
    assert detail["latest_version"] == "0.1.0"
    assert detail["module"] == "demo_env"
    assert detail["install_command"] == "vf-install alice/demo-env"
    assert detail["tags"] == ["demo"]
    version = client.get(f"{API}/environments/alice/demo-env/versions/0.1.0").json()
    assert version["readme"].startswith("# Demo") and version["uploader"] == "alice"
    files = client.get(f"{API}/environments/alice/demo-env/versions/0.1.0/files").json()
    assert {
        "path": "demo_env/__init__.py",
        "size": len(Dist().module_files()["demo_env/__init__.py"]),
    } in files
    assert {f["path"] for f in files} >= {"PKG-INFO", "pyproject.toml"}


@pytest.mark.usefixtures("catalogue")
def test_search_filters_sorts_and_pages(client: TestClient, actors: Actors) -> None:
    everything = client.get(f"{API}/environments", params={"sort": "name"}).json()
    assert names(everything) == ["alice/demo-env", "alice/math-env", "bob/zeta-env"]  # code-env is private
    assert (
        client.get(f"{API}/environments", params={"sort": "name"}, headers=Actors.auth(actors.bob)).json()[
            "total"
        ]
        == 4
    )
    assert names(client.get(f"{API}/environments", params={"q": "competition"}).json()) == ["alice/math-env"]
    assert (
        names(client.get(f"{API}/environments", params={"q": "100%_"}).json()) == []
    )  # LIKE wildcards escaped
    tagged = client.get(f"{API}/environments", params={"tag": "math", "sort": "name"}).json()
    assert names(tagged) == ["alice/math-env", "bob/zeta-env"]
    both = client.get(f"{API}/environments", params=[("tag", "math"), ("tag", "reasoning")]).json()
    assert names(both) == ["alice/math-env"]
    assert names(client.get(f"{API}/environments", params={"owner": "bob"}).json()) == ["bob/zeta-env"]
    page2 = client.get(f"{API}/environments", params={"sort": "name", "per_page": 2, "page": 2}).json()
    assert (names(page2), page2["total"], page2["page"]) == (["bob/zeta-env"], 3, 2)
    # downloads and stars order the list
    client.get("/files/demo-env/demo_env-0.1.0.tar.gz")
    client.get("/files/math-env/math_env-0.1.0.tar.gz")
    # a download counts once per file, client and day: the second one comes from another client (bob)
    client.get("/files/math-env/math_env-0.1.0.tar.gz", headers=Actors.auth(actors.bob))
    assert names(client.get(f"{API}/environments", params={"sort": "downloads"}).json())[:2] == [
        "alice/math-env",
        "alice/demo-env",
    ]
    assert client.put(f"{API}/environments/bob/zeta-env/star", headers=Actors.auth(actors.alice)).json() == {
        "starred": True,
        "stars": 1,
    }
    assert names(client.get(f"{API}/environments", params={"sort": "stars"}).json())[0] == "bob/zeta-env"
    assert names(client.get(f"{API}/environments", params={"sort": "updated"}).json())[0] == "bob/zeta-env"
    assert client.get(f"{API}/environments", params={"sort": "bogus"}).status_code == 422
    assert client.get(f"{API}/environments", params={"per_page": 1000}).status_code == 422


@pytest.mark.usefixtures("catalogue")
@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("alice/demo-env", "0.2.0"),  # final releases beat pre-releases
        ("demo-env", "0.2.0"),
        ("alice/demo-env@>=0.1", "0.2.0"),
        ("alice/demo-env@<0.2", "0.1.0"),
        ("alice/demo-env@0.1.0", "0.1.0"),
        ("alice/demo-env@==0.1.*", "0.1.0"),
        ("alice/demo-env@>=0.3.0b1", "0.3.0b1"),  # a pre-release is chosen when the spec names one
        ("Alice/Demo_Env@~=0.1", "0.2.0"),
    ],
)
def test_resolve(client: TestClient, spec: str, version: str) -> None:
    r = client.get(f"{API}/resolve", params={"spec": spec})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["version"] == version
    assert body["module"] == "demo_env" and body["index_path"] == "/simple/"
    assert len(body["content_hash"]) == 64 and len(body["files"]) == 2


@pytest.mark.usefixtures("catalogue")
def test_resolve_refusals(client: TestClient) -> None:
    assert client.get(f"{API}/resolve", params={"spec": "bob/demo-env"}).status_code == 404  # wrong owner
    assert client.get(f"{API}/resolve", params={"spec": "nope-env"}).status_code == 404
    r = client.get(f"{API}/resolve", params={"spec": "demo-env@>=5"})
    assert r.status_code == 404 and "available: 0.1.0, 0.2.0, 0.3.0b1" in r.json()["detail"]
    assert client.get(f"{API}/resolve", params={"spec": "demo-env@>>1"}).status_code == 422
    assert client.get(f"{API}/resolve", params={"spec": "a/b/c"}).status_code == 422


@pytest.mark.usefixtures("catalogue")
def test_yanked_versions_only_resolve_when_pinned(client: TestClient, actors: Actors) -> None:
    base = f"{API}/environments/alice/demo-env/versions/0.2.0"
    r = client.post(f"{base}/yank", json={"reason": "broken scoring"}, headers=Actors.auth(actors.alice))
    assert r.json()["yanked"] is True and r.json()["yanked_reason"] == "broken scoring"
    assert client.get(f"{API}/resolve", params={"spec": "demo-env"}).json()["version"] == "0.1.0"
    refused = client.get(f"{API}/resolve", params={"spec": "demo-env@>=0.2,<0.3"})
    assert refused.status_code == 404
    # the way to the yanked version is named, not "available: none"
    assert "0.2.0 is yanked, and alice/demo-env@==0.2.0 still installs it" in refused.text
    pinned = client.get(f"{API}/resolve", params={"spec": "demo-env@==0.2.0"}).json()
    assert (pinned["version"], pinned["yanked"]) == ("0.2.0", True)
    assert client.get(f"{API}/environments/alice/demo-env").json()["latest_version"] == "0.1.0"
    assert client.post(f"{base}/unyank", headers=Actors.auth(actors.alice)).json()["yanked"] is False
    assert client.get(f"{API}/resolve", params={"spec": "demo-env"}).json()["version"] == "0.2.0"


@pytest.mark.usefixtures("catalogue")
def test_stars_are_per_user(client: TestClient, actors: Actors) -> None:
    url = f"{API}/environments/alice/demo-env/star"
    assert client.put(url).status_code == 401
    for token in (actors.alice, actors.alice, actors.bob):  # starring twice counts once
        client.put(url, headers=Actors.auth(token))
    assert client.get(f"{API}/environments/alice/demo-env").json()["stars"] == 2
    assert client.delete(url, headers=Actors.auth(actors.bob)).json() == {"starred": False, "stars": 1}


@pytest.mark.usefixtures("catalogue")
def test_evals_feed_the_leaderboard(client: TestClient, actors: Actors) -> None:
    url = f"{API}/environments/alice/demo-env/versions/0.2.0/evals"
    body = {
        "model": "smollm2",
        "avg_reward": 0.42,
        "num_examples": 5,
        "rollouts_per_example": 3,
        "pass_at_k": {"1": 0.4, "3": 0.6},
    }
    assert client.post(url, json=body).status_code == 401
    assert client.post(url, json=body, headers=Actors.auth(actors.alice_read)).status_code == 403
    # results live under the environment: a publish token of another namespace may not write them
    assert client.post(url, json=body, headers=Actors.auth(actors.bob)).status_code == 403
    r = client.post(url, json=body, headers=Actors.auth(actors.alice))
    assert r.status_code == 201 and r.json()["uploader"] == "alice"
    better = {**body, "model": "bigger-model", "avg_reward": 0.9}
    assert client.post(url, json=better, headers=Actors.auth(actors.alice)).status_code == 201
    assert (
        client.post(url, json={**body, "avg_reward": "nan"}, headers=Actors.auth(actors.alice)).status_code
        == 422
    )
    board = client.get(f"{API}/environments/alice/demo-env/evals").json()
    assert [e["model"] for e in board] == ["bigger-model", "smollm2"]
    page = client.get("/alice/demo-env").text
    assert "bigger-model" in page and "0.900" in page and "<td>pass@1 0.400 · pass@3 0.600</td>" in page


def test_update_environment(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    url = f"{API}/environments/alice/demo-env"
    body = {"description": "New words", "tags": ["Math", "math", "rl"], "visibility": "private"}
    assert client.patch(url, json=body, headers=Actors.auth(actors.bob)).status_code == 403
    r = client.patch(url, json=body, headers=Actors.auth(actors.alice))
    assert r.status_code == 200
    assert (r.json()["description"], r.json()["tags"], r.json()["visibility"]) == (
        "New words",
        ["math", "rl"],
        "private",
    )
    assert client.get(url).status_code == 404
    assert (
        client.patch(url, json={"tags": ["bad tag!"]}, headers=Actors.auth(actors.alice)).status_code == 422
    )
    assert client.patch(url, json={"owner": "bob"}, headers=Actors.auth(actors.alice)).status_code == 422


def test_admin_deletes_a_version(client: TestClient, hub: Hub, actors: Actors) -> None:
    for version in ("0.1.0", "0.2.0"):
        assert publish(client, actors.alice, *Dist(version=version).pair()).status_code == 201
    url = f"{API}/environments/alice/demo-env/versions/0.1.0"
    assert client.delete(url, headers=Actors.auth(actors.alice)).status_code == 403
    assert client.delete(url, headers=Actors.auth(actors.root)).status_code == 204
    assert [v["version"] for v in client.get(f"{API}/environments/alice/demo-env/versions").json()] == [
        "0.2.0"
    ]
    assert all("0.1.0" not in key for key in hub.blobs.iter_keys())
    assert b"0.1.0" not in client.get("/simple/demo-env/").content


def test_tokens_api(client: TestClient, actors: Actors) -> None:
    me = client.get(f"{API}/whoami", headers=Actors.auth(actors.alice)).json()
    assert me == {
        "username": "alice",
        "is_admin": False,
        "scopes": ["publish"],
        "namespaces": ["alice", "lab"],
    }
    assert client.get(f"{API}/whoami").status_code == 401
    r = client.post(
        f"{API}/tokens",
        json={"name": "ci", "scopes": ["read"], "expires_in_days": 7},
        headers=Actors.auth(actors.alice),
    )
    assert r.status_code == 201
    created = r.json()
    assert created["token"].startswith("vfh_") and created["expires_at"] is not None
    listed = client.get(f"{API}/tokens", headers=Actors.auth(actors.alice)).json()
    assert created["id"] in [t["id"] for t in listed] and all("token" not in t for t in listed)
    assert client.delete(f"{API}/tokens/{created['id']}", headers=Actors.auth(actors.bob)).status_code == 404
    assert (
        client.delete(f"{API}/tokens/{created['id']}", headers=Actors.auth(actors.alice)).status_code == 204
    )
    assert client.get(f"{API}/whoami", headers=Actors.auth(created["token"])).status_code == 401


def test_services_refuse_bad_names(hub: Hub) -> None:
    for bad in ("-x", "x-", "api", "simple", "a" * 40, "Ünï"):
        with pytest.raises(services.HubError):
            services.create_user(hub, bad)
    services.create_user(hub, "carol")
    with pytest.raises(services.HubError, match="already taken"):
        services.create_org(hub, "Carol")
