"""Issue 10 §5, bounded: a burst of concurrent API and web requests against a live hub gets no 5xx
(today's pool deadlock made such a burst stall for the pool timeout, then fail). Not a timing test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from hub_server.app import create_app
from hub_server.db import DEFAULT_POOL_SIZE, Database, PoolSizeError, is_sqlite, plan_pool
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, LiveHub, publish

CONCURRENT = 100


@pytest.fixture
def seeded(client: TestClient, actors: Actors) -> None:
    for name in ("demo-env", "other-env"):
        assert publish(client, actors.alice, *Dist(name=name).pair(), name=name).status_code == 201


def test_a_burst_of_concurrent_requests_gets_no_5xx(live_hub: LiveHub, actors: Actors, seeded: None) -> None:
    paths = [
        "/api/v1/environments/alice/demo-env",
        "/api/v1/environments?q=env",
        "/api/v1/resolve?spec=alice/demo-env",
        "/api/v1/environments/alice/absent-env",
        "/alice/demo-env",
        "/simple/demo-env/",
    ]

    async def burst() -> list[int]:
        limits = httpx.Limits(max_connections=CONCURRENT, max_keepalive_connections=CONCURRENT)
        async with httpx.AsyncClient(base_url=live_hub.url, limits=limits, timeout=60) as c:

            async def one(i: int) -> int:
                headers = Actors.auth(actors.alice_read) if i % 3 == 0 else {}
                return (await c.get(paths[i % len(paths)], headers=headers)).status_code

            return list(await asyncio.gather(*(one(i) for i in range(CONCURRENT * 2))))

    statuses = asyncio.run(burst())
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200, 404}


def test_pools_must_fit_the_database_connection_limit(database_url: str, tmp_path: Path) -> None:
    if is_sqlite(database_url):
        assert plan_pool(database_url, workers=64, pool_size=None, reserved=5) == DEFAULT_POOL_SIZE
        db = Database(database_url)
        with db.read() as s:
            assert s.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
            assert s.execute(text("PRAGMA busy_timeout")).scalar_one() >= 5000
        db.dispose()
        return
    with Database(database_url).read() as s:
        limit = int(s.execute(text("SHOW max_connections")).scalar_one())
    # the default shrinks to fit many workers; an explicit size that cannot fit is refused, clearly
    many = plan_pool(database_url, workers=limit // 4, pool_size=None, reserved=5)
    assert many >= 2 and many * (limit // 4) <= limit
    with pytest.raises(PoolSizeError, match="max_connections"):
        plan_pool(database_url, workers=4, pool_size=limit, reserved=5)
    settings = HubSettings(data_dir=tmp_path, database_url=database_url, workers=4, db_pool_size=limit)
    with pytest.raises(PoolSizeError, match="--workers"), TestClient(create_app(settings)):
        pass
