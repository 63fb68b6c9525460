"""Hot reads answered from memory for signed-in callers (``PrincipalCache.answers``): the token is
checked on every request, an answer is only ever replayed to a caller who may read exactly the same
environments, and token use is still recorded (SQLite and PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from hub_server import services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.models import ApiToken, utcnow
from hub_server.principal_cache import PrincipalCache
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish
from tests.hub.test_side_channels import counting_queries

API = "/api/v1"
SECRET = f"{API}/environments/alice/secret-env"
HOT = (SECRET, f"{API}/environments?q=env", f"{API}/resolve?spec=alice/secret-env")


def _principals(app: FastAPI) -> PrincipalCache:
    principals: PrincipalCache = app.state.principals
    return principals


def _publish_secret(client: TestClient, actors: Actors) -> None:
    r = publish(
        client, actors.alice, *Dist(name="secret-env").pair(), name="secret-env", visibility="private"
    )
    assert r.status_code == 201


def _reads_environments(
    client: TestClient, hub: Hub, url: str, headers: dict[str, str]
) -> tuple[bool, bytes]:
    """Whether answering ``url`` queried the environments table, and the answer's body."""
    with counting_queries(hub) as statements:
        r = client.get(url, headers=headers)
    assert r.status_code == 200, (url, r.text)
    return any("environments" in s for s in statements), r.content


def test_a_second_read_is_the_first_ones_bytes_without_a_query(
    app: FastAPI, client: TestClient, hub: Hub, actors: Actors
) -> None:
    _publish_secret(client, actors)
    read = Actors.auth(actors.alice_read)
    for url in HOT:
        first = client.get(url, headers=read)
        assert first.status_code == 200, url
        queried, body = _reads_environments(client, hub, url, read)
        assert not queried and body == first.content, url
        again = client.get(url, headers=read)
        assert again.headers.items() == first.headers.items(), url
    assert len(_principals(app).answers) == len(HOT)


def test_the_owner_sees_a_private_environment_and_no_one_else_gets_her_answer(
    app: FastAPI, client: TestClient, hub: Hub, actors: Actors
) -> None:
    _publish_secret(client, actors)
    alice, bob = Actors.auth(actors.alice_read), Actors.auth(actors.bob)
    for _ in range(2):
        assert client.get(SECRET, headers=alice).status_code == 200
    kept = len(_principals(app).answers)
    for _ in range(2):
        assert client.get(SECRET, headers=bob).status_code == 404
        assert client.get(f"{API}/resolve?spec=alice/secret-env", headers=bob).status_code == 404
        assert client.get(f"{API}/environments?q=secret", headers=bob).json()["total"] == 0
        assert client.get(SECRET).status_code == 404
    assert len(_principals(app).answers) == kept + 1  # bob's empty search; 404s are never kept
    # the hub admin reads everything, from its own entry
    root = Actors.auth(actors.root)
    for _ in range(2):
        assert client.get(SECRET, headers=root).status_code == 200


def test_callers_in_different_organisations_never_share_an_answer(
    app: FastAPI, client: TestClient, hub: Hub, actors: Actors
) -> None:
    services.create_org(hub, "other", ["bob"])
    for token, owner, name in ((actors.alice, "lab", "lab-env"), (actors.bob, "other", "other-env")):
        r = publish(client, token, *Dist(name=name).pair(), owner=owner, name=name, visibility="private")
        assert r.status_code == 201
    url = f"{API}/environments?q=env&sort=name"
    seen: dict[str, list[str]] = {}
    for _ in range(2):  # interleaved: each second answer comes from memory
        for who, token in (("alice", actors.alice_read), ("bob", actors.bob)):
            names = [e["name"] for e in client.get(url, headers=Actors.auth(token)).json()["items"]]
            assert seen.setdefault(who, names) == names
    assert seen == {"alice": ["lab-env"], "bob": ["other-env"]}
    assert len(_principals(app).answers) == 2


def test_a_revoked_token_is_refused_at_once_though_its_answers_were_kept(
    settings: HubSettings, app: FastAPI, client: TestClient, actors: Actors
) -> None:
    _publish_secret(client, actors)
    alice, read = Actors.auth(actors.alice), Actors.auth(actors.alice_read)
    for url in HOT:
        for _ in range(2):
            assert client.get(url, headers=read).status_code == 200
    assert len(_principals(app).answers) == len(HOT)
    # revoked through another worker (its own caches) on the same database
    with TestClient(create_app(settings.model_copy(update={"cache_poll_seconds": 3600.0}))) as other:
        (token,) = [t for t in other.get(f"{API}/tokens", headers=alice).json() if t["scopes"] == ["read"]]
        assert other.delete(f"{API}/tokens/{token['id']}", headers=alice).status_code == 204
    for url in HOT:
        r = client.get(url, headers=read)
        assert r.status_code == 401 and "revoked" in r.json()["detail"], url
    assert client.get(SECRET, headers=alice).status_code == 200  # the owner's other token still reads


def test_token_use_is_still_recorded_when_answers_come_from_memory(
    app: FastAPI, client: TestClient, hub: Hub, actors: Actors
) -> None:
    _publish_secret(client, actors)
    read = Actors.auth(actors.alice_read)
    for _ in range(2):
        assert client.get(SECRET, headers=read).status_code == 200
    principals = _principals(app)
    check = principals.get(actors.alice_read)
    assert check is not None and principals.generation is not None
    # as if this worker had answered from memory for an hour since the last recorded use
    hour_ago = utcnow() - timedelta(hours=1)
    token_id = check.principal.token_id
    with hub.db.write() as session:
        session.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=hour_ago))
    principals.put(principals.generation, actors.alice_read, replace(check, last_used_at=hour_ago))

    queried, _ = _reads_environments(client, hub, SECRET, read)
    assert queried  # a use due to be recorded takes the query path, which records it
    with hub.db.read() as session:
        used = session.scalar(select(ApiToken.last_used_at).where(ApiToken.id == token_id))
    assert used is not None and used > hour_ago + timedelta(minutes=30)
    queried, _ = _reads_environments(client, hub, SECRET, read)
    assert not queried  # and the next read comes from memory again
