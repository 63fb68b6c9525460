"""The JSON API's fast path (``hub_server.api_cache``): cached anonymous answers are the routes' bytes,
every change a JSON answer shows reaches every worker at once, and credentials never meet the cache
(SQLite and PostgreSQL)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server.api_cache import ApiCache, is_cached_route
from hub_server.app import create_app
from hub_server.auth import COOKIE_NAME
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish, web_session

API = "/api/v1"
HOT = (
    f"{API}/environments/alice/demo-env",
    f"{API}/environments?q=demo&per_page=20",
    f"{API}/resolve?spec=alice%2Fdemo-env%40%3E%3D0.1",
)


def _cache(app: FastAPI) -> ApiCache:
    cache: ApiCache = app.state.api_cache
    return cache


def test_only_the_hot_reads_are_cached() -> None:
    assert is_cached_route(f"{API}/environments")
    assert is_cached_route(f"{API}/environments/alice/demo-env")
    assert is_cached_route(f"{API}/resolve")
    for path in (
        f"{API}/environments/alice/demo-env/versions",
        f"{API}/environments/alice/demo-env/evals",
        f"{API}/environments/alice/",
        f"{API}/whoami",
        f"{API}/tokens",
        "/simple/",
    ):
        assert not is_cached_route(path), path


def test_cached_answers_are_the_routes_bytes(app: FastAPI, client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    cache = _cache(app)
    for url in HOT:
        slow = client.get(url)
        assert slow.status_code == 200, url
        assert (url.split("?")[0], url.partition("?")[2].encode()) in cache._answers, url
        fast = client.get(url)
        assert fast.content == slow.content, url
        assert fast.headers.items() == slow.headers.items(), url
    # errors are never cached: a 404 is answered by the route every time
    before = len(cache)
    assert client.get(f"{API}/environments/alice/absent-env").status_code == 404
    assert len(cache) == before


def test_every_change_a_json_answer_shows_reaches_another_worker_at_once(
    settings: HubSettings, client: TestClient, actors: Actors
) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    detail = f"{API}/environments/alice/demo-env"
    alice = Actors.auth(actors.alice)
    # another process would build its own app (its own caches) on the same database
    with TestClient(create_app(settings.model_copy(update={"cache_poll_seconds": 3600.0}))) as other:
        for _ in range(2):  # the second answer comes from the other worker's cache
            assert other.get(detail).json()["stars"] == 0
        assert client.put(f"{detail}/star", headers=alice).status_code == 200
        assert other.get(detail).json()["stars"] == 1

        assert client.get(f"/files/demo-env/{Dist().sdist()[0]}").status_code == 200
        assert other.get(detail).json()["downloads"] == 1

        r = client.patch(detail, json={"description": "now with tags", "tags": ["math"]}, headers=alice)
        assert r.status_code == 200
        body = other.get(detail).json()
        assert body["description"] == "now with tags" and body["tags"] == ["math"]
        assert other.get(f"{API}/environments?q=now+with").json()["total"] == 1

        assert publish(client, actors.alice, *Dist(version="0.2.0").pair()).status_code == 201
        assert other.get(f"{API}/resolve?spec=alice/demo-env").json()["version"] == "0.2.0"

        assert client.patch(detail, json={"visibility": "private"}, headers=alice).status_code == 200
        assert other.get(detail).status_code == 404
        assert other.get(f"{API}/resolve?spec=alice/demo-env").status_code == 404
        assert other.get(f"{API}/environments?q=demo").json()["total"] == 0


def test_credentials_never_meet_the_cache(app: FastAPI, client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    detail = f"{API}/environments/alice/demo-env"
    cache = _cache(app)
    for _ in range(2):
        assert client.get(detail, headers=Actors.auth(actors.alice_read)).status_code == 200
        assert (
            client.get(f"{API}/environments?q=demo", headers=Actors.auth(actors.alice_read)).json()["total"]
            == 1
        )
    assert len(cache) == 0  # answers for a caller with credentials are not kept
    assert client.get(detail).status_code == 404
    assert client.get(f"{API}/environments?q=demo").json()["total"] == 0
    # the web session cookie is a credential too; a bad token is still a 401, never a cached answer
    assert client.get(f"{API}/environments?q=demo").status_code == 200  # now cached, anonymously
    assert client.get(f"{API}/environments?q=demo", headers=Actors.auth("vfh_nope")).status_code == 401
    client.cookies.set(COOKIE_NAME, web_session(app.state.hub, actors.alice_read))
    try:
        assert client.get(f"{API}/environments?q=demo").json()["total"] == 1
    finally:
        client.cookies.clear()


def test_the_cache_stays_within_its_bounds() -> None:
    from hub_server.api_cache import CachedAnswer

    cache = ApiCache(max_entries=3, max_bytes=10)
    cache.observe(1)
    for i in range(5):
        cache.put(1, (f"/p{i}", b""), CachedAnswer((), b"xx"))
    assert len(cache) == 3 and cache.get(("/p0", b"")) is None and cache.get(("/p4", b"")) is not None
    cache.put(1, ("/big", b""), CachedAnswer((), b"x" * 9))
    assert cache.get(("/big", b"")) is not None and len(cache) == 1
    cache.put(0, ("/old", b""), CachedAnswer((), b"x"))  # made under an older generation: dropped
    assert cache.get(("/old", b"")) is None
    cache.observe(2)
    assert len(cache) == 0
