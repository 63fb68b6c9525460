"""``hub_server.api_reads``: the hot reads' fast path answers exactly as the FastAPI routes do
(status, headers, body), for anonymous and authenticated callers, valid and invalid requests alike
(SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.api_reads import ApiReads
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

API = "/api/v1"
URLS = [
    f"{API}/environments/alice/demo-env",
    f"{API}/environments/alice/secret-env",
    f"{API}/environments/alice/absent-env",
    f"{API}/environments/nobody/demo-env",
    f"{API}/environments",
    f"{API}/environments?q=demo&per_page=5&_=1",
    f"{API}/environments?q=env&sort=name&page=1&per_page=100",
    f"{API}/environments?q=env&sort=stars&page=2&per_page=1",
    f"{API}/environments?owner=alice&tag=a&tag=b",
    f"{API}/environments?owner=",
    f"{API}/environments?q=",
    f"{API}/environments?tag=" + "&tag=".join("x" * 30 for _ in range(10)),
    # out of the declared limits, repeated or malformed: the route's own answer (422 or what it does)
    f"{API}/environments?tag=" + "&tag=".join("x" for _ in range(11)),
    f"{API}/environments?page=0",
    f"{API}/environments?page=007",
    f"{API}/environments?per_page=101",
    f"{API}/environments?per_page=abc",
    f"{API}/environments?sort=nope",
    f"{API}/environments?q={'x' * 201}",
    f"{API}/environments?q=a&q=b",
    f"{API}/environments?owner={'o' * 65}",
    f"{API}/resolve?spec=alice/demo-env",
    f"{API}/resolve?spec=alice/demo-env%40%3E%3D0.1",
    f"{API}/resolve?spec=alice/demo-env%40%3E%3D9",
    f"{API}/resolve?spec=alice/secret-env",
    f"{API}/resolve?spec=demo-env",
    f"{API}/resolve?spec=not%20a%20spec%40%40",
    f"{API}/resolve?spec=",
    f"{API}/resolve",
    f"{API}/resolve?spec={'a' * 301}",
]


def _routes_only(settings: HubSettings) -> FastAPI:
    app = create_app(settings)
    app.user_middleware = [m for m in app.user_middleware if m.cls is not ApiReads]
    return app


@pytest.fixture
def routes(settings: HubSettings) -> Iterator[TestClient]:
    with TestClient(_routes_only(settings)) as c:
        yield c


def _answer(
    client: TestClient, url: str, headers: dict[str, str]
) -> tuple[int, list[tuple[str, str]], bytes]:
    r = client.get(url, headers=headers)
    return r.status_code, sorted(r.headers.items()), r.content


@pytest.mark.parametrize("caller", ["anonymous", "alice", "bob", "revoked", "garbage", "malformed"])
def test_fast_path_answers_as_the_routes_do(
    client: TestClient, routes: TestClient, actors: Actors, caller: str
) -> None:
    alice, bob = Actors.auth(actors.alice), Actors.auth(actors.bob)
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    secret = Dist(name="secret-env")
    assert (
        publish(client, actors.alice, *secret.pair(), name="secret-env", visibility="private").status_code
        == 201
    )
    headers = {
        "anonymous": {},
        "alice": alice,
        "bob": bob,
        "revoked": Actors.auth(actors.alice_read),
        "garbage": Actors.auth("vfh_not-a-token"),
        "malformed": {"Authorization": "Basic !!!"},
    }[caller]
    if caller == "revoked":
        tokens = client.get(f"{API}/tokens", headers=alice).json()
        (read,) = [t for t in tokens if t["scopes"] == ["read"]]
        assert client.delete(f"{API}/tokens/{read['id']}", headers=alice).status_code == 204
    seen: set[int] = set()
    for url in URLS:
        fast = _answer(client, url, headers)
        assert fast == _answer(routes, url, headers), url
        seen.add(fast[0])
    if caller in ("anonymous", "alice", "bob"):
        assert {200, 404, 422} <= seen
    if caller == "alice":  # her private environment is visible to her, through the fast path too
        assert client.get(f"{API}/environments/alice/secret-env", headers=alice).status_code == 200
    if caller in ("revoked", "garbage"):
        assert seen == {401, 422} or seen == {401}


def test_a_cached_principal_is_forgotten_the_moment_its_token_is_revoked_anywhere(
    client: TestClient, routes: TestClient, app: FastAPI, actors: Actors
) -> None:
    """``routes`` is another app (another worker) on the same database: the revocation made there is
    seen here on the next request, though this worker had the token's principal in memory."""
    alice, read = Actors.auth(actors.alice), Actors.auth(actors.alice_read)
    assert (
        publish(
            client, actors.alice, *Dist(name="secret-env").pair(), name="secret-env", visibility="private"
        ).status_code
        == 201
    )
    url = f"{API}/environments/alice/secret-env"
    assert client.get(url, headers=read).status_code == 200
    assert client.get(url, headers=read).status_code == 200
    assert len(app.state.principals) == 1  # the second read took the principal from memory
    tokens = routes.get(f"{API}/tokens", headers=alice).json()
    (token,) = [t for t in tokens if t["scopes"] == ["read"]]
    assert routes.delete(f"{API}/tokens/{token['id']}", headers=alice).status_code == 204
    for path in (url, f"{API}/environments?q=secret", f"{API}/resolve?spec=alice/secret-env"):
        r = client.get(path, headers=read)
        assert r.status_code == 401 and "revoked" in r.json()["detail"], path


def test_a_new_membership_shows_at_once_for_a_cached_principal(
    client: TestClient, app: FastAPI, hub: Hub, actors: Actors
) -> None:
    bob = Actors.auth(actors.bob)
    assert (
        publish(
            client,
            actors.alice,
            *Dist(name="lab-env").pair(),
            owner="lab",
            name="lab-env",
            visibility="private",
        ).status_code
        == 201
    )
    url = f"{API}/environments/lab/lab-env"
    assert client.get(url, headers=bob).status_code == 404
    assert client.get(url, headers=bob).status_code == 404
    services.add_member(hub, "lab", "bob")
    assert client.get(url, headers=bob).status_code == 200
