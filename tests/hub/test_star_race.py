"""Stars under concurrency (issue 24 item 12): concurrent ``PUT``/``DELETE …/star`` by one user, and by many,
against the hub on a real port (SQLite and real PostgreSQL): never a 5xx, and the count is exact."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.context import Hub
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, LiveHub, publish

ROUNDS = 12  # concurrent bursts, each of THREADS requests at once
THREADS = 24


def burst(url: str, method: str, tokens: list[str]) -> list[int]:
    """``THREADS`` requests at once, round-robin over ``tokens``, ``ROUNDS`` times; their status codes."""
    with httpx.Client(timeout=120) as c, ThreadPoolExecutor(THREADS) as pool:
        codes: list[int] = []
        for _ in range(ROUNDS):
            calls = [
                pool.submit(c.request, method, url, headers=Actors.auth(tokens[i % len(tokens)]))
                for i in range(THREADS)
            ]
            codes += [f.result().status_code for f in calls]
    return codes


def test_concurrent_stars_by_one_user_are_idempotent(
    client: TestClient, live_hub: LiveHub, hub: Hub, actors: Actors
) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    url = f"{live_hub.url}/api/v1/environments/alice/demo-env/star"
    codes = burst(url, "PUT", [actors.bob])
    assert set(codes) == {200}, sorted(set(codes))
    assert httpx.put(url, headers=Actors.auth(actors.bob)).json() == {"starred": True, "stars": 1}
    codes = burst(url, "DELETE", [actors.bob])
    assert set(codes) == {200}, sorted(set(codes))
    assert httpx.delete(url, headers=Actors.auth(actors.bob)).json() == {"starred": False, "stars": 0}


def test_concurrent_stars_by_many_users_count_exactly(
    client: TestClient, live_hub: LiveHub, hub: Hub, actors: Actors
) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    tokens = []
    for i in range(6):
        services.create_user(hub, f"fan{i}")
        tokens.append(services.create_token(hub, f"fan{i}", scopes=["read"])[0])
    url = f"{live_hub.url}/api/v1/environments/alice/demo-env/star"
    assert set(burst(url, "PUT", tokens)) == {200}
    detail = httpx.get(f"{live_hub.url}/api/v1/environments/alice/demo-env").json()
    assert detail["stars"] == 6
    assert set(burst(url, "DELETE", tokens[:4])) == {200}
    detail = httpx.get(f"{live_hub.url}/api/v1/environments/alice/demo-env").json()
    assert detail["stars"] == 2
