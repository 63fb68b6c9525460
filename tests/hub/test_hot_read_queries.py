"""Issue 24: what the hot JSON reads (detail, search, resolve) ask of the database on a cache miss, and
that a pooled connection which died while idle is replaced rather than failing a request (SQLite and
PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, event, text
from sqlalchemy.pool import NullPool

from hub_server import db as db_module
from hub_server.context import Hub
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

API = "/api/v1"
_nonce = count()


@contextmanager
def statements(hub: Hub) -> Iterator[list[tuple[str, bool]]]:
    """Each statement sent as (its first word, whether the driver had a transaction open for it)."""
    seen: list[tuple[str, bool]] = []

    def record(_conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        dbapi = cursor.connection
        # psycopg opens a transaction (its own BEGIN round trip) unless in autocommit
        in_transaction = dbapi.in_transaction if hub.db.url.startswith("sqlite") else not dbapi.autocommit
        seen.append((statement.split()[0].upper(), in_transaction))

    event.listen(hub.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(hub.db.engine, "before_cursor_execute", record)


@pytest.fixture
def published(client: TestClient, actors: Actors) -> None:
    for version in ("0.1.0", "0.2.0"):
        dist = Dist(name="hot-env", version=version, keywords=["zeta", "alpha", "b-c"])
        assert publish(client, actors.alice, *dist.pair(), name="hot-env").status_code == 201


@pytest.mark.parametrize(
    "path",
    [
        f"{API}/environments/alice/hot-env?",
        f"{API}/environments?q=hot&",
        f"{API}/resolve?spec=alice/hot-env&",
    ],
)
@pytest.mark.usefixtures("published")
def test_a_cache_miss_costs_three_selects_and_no_transaction_on_postgresql(
    client: TestClient, hub: Hub, path: str
) -> None:
    with statements(hub) as seen:
        r = client.get(f"{path}_={next(_nonce)}")  # an unseen URL: the anonymous cache misses
    assert r.status_code == 200
    selects = [s for s in seen if s[0] != "BEGIN"]
    # the change counters, then the environments (tags aggregated) and their versions (with files)
    assert [s for s, _ in selects] == ["SELECT"] * 3, seen
    if hub.db.url.startswith("sqlite"):
        # the counters in autocommit; the answer's two selects in one (local) snapshot
        assert [s for s, _ in seen] == ["SELECT", "BEGIN", "SELECT", "SELECT"], seen
    else:
        assert not any(in_transaction for _, in_transaction in seen), seen


@pytest.mark.usefixtures("published")
def test_tags_come_sorted_as_the_orm_rows_give_them(client: TestClient, actors: Actors) -> None:
    detail = client.get(f"{API}/environments/alice/hot-env").json()
    assert detail["tags"] == ["alpha", "b-c", "zeta"]
    # a PATCH answers from ORM rows; the hot read from Core rows with aggregated tags: same order
    patched = client.patch(
        f"{API}/environments/alice/hot-env", json={"description": "new"}, headers=Actors.auth(actors.alice)
    )
    assert patched.status_code == 200 and patched.json()["tags"] == detail["tags"]
    found = client.get(f"{API}/environments?q=hot").json()["items"]
    assert [item["tags"] for item in found] == [detail["tags"]]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.usefixtures("published")
def test_a_connection_that_died_idle_in_the_pool_is_replaced(
    client: TestClient, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "PING_IDLE_SECONDS", 0.0)  # every pooled connection counts as idle
    assert client.get(f"{API}/environments/alice/hot-env?_={next(_nonce)}").status_code == 200
    # the server drops every connection of the hub's pool (as on a restart or an idle timeout)
    admin = create_engine(hub.db.url, poolclass=NullPool)
    with admin.connect() as conn:
        killed = conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
    admin.dispose()
    assert killed >= 1
    for _ in range(3):
        assert client.get(f"{API}/environments/alice/hot-env?_={next(_nonce)}").status_code == 200
