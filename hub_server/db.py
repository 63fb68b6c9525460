"""Engine and sessions. SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for write sessions.

Pools: each worker process has one pool of ``pool_size`` connections and no overflow, split by
``split_pool`` between request threads (each uses at most one connection at a time) and request-long
read sessions (``deps.read_session``), so no one ever waits for a connection. On PostgreSQL the pools of
all workers must fit in the server's ``max_connections``; ``plan_pool`` checks that at start-up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session, sessionmaker

WRITE_OPTION = "vf_hub_write"
#: Connections per worker when nothing says otherwise (also the worker's thread count).
DEFAULT_POOL_SIZE = 32
#: A wait this long for a pooled connection means something is wrong: fail the request, don't hang.
POOL_TIMEOUT_SECONDS = 10


class PoolSizeError(RuntimeError):
    """The configured workers and pools cannot fit in the database's connection limit."""


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> Engine:
    parsed = make_url(url)
    pool = {"pool_size": pool_size, "max_overflow": 0, "pool_timeout": POOL_TIMEOUT_SECONDS}
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, **pool)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **pool)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from pysqlite so ``begin`` below decides how each one starts.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A deferred transaction that reads and then writes can fail at once with SQLITE_BUSY when
        # another writer got in between; taking the write lock up front makes writers queue instead.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN")

    return engine


def plan_pool(url: str, *, workers: int, pool_size: int | None, reserved: int) -> int:
    """Connections per worker: ``pool_size`` if given, else the default capped so that all ``workers``
    fit in PostgreSQL's ``max_connections`` minus its superuser slots and ``reserved`` for admin tools.
    ``PoolSizeError`` with what to change when they cannot fit. SQLite has no limit to fit.
    """
    if is_sqlite(url):
        return pool_size or DEFAULT_POOL_SIZE
    engine = create_engine(url, pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            limit = int(conn.execute(text("SHOW max_connections")).scalar_one())
            superuser = int(conn.execute(text("SHOW superuser_reserved_connections")).scalar_one())
    finally:
        engine.dispose()
    budget = limit - superuser - reserved
    size = pool_size or min(DEFAULT_POOL_SIZE, budget // max(workers, 1))
    if size < 2 or workers * size > budget:
        raise PoolSizeError(
            f"{workers} worker(s) × {size} database connections do not fit in PostgreSQL's "
            f"max_connections={limit} (minus {superuser} superuser and {reserved} reserved slots = {budget}); "
            "use fewer workers (--workers), a smaller VF_HUB_DB_POOL_SIZE, or raise max_connections"
        )
    return size


def split_pool(pool_size: int) -> tuple[int, int]:
    """(worker threads, request sessions) that together use at most ``pool_size`` connections."""
    threads = max(1, pool_size // 2)
    return threads, max(1, pool_size - threads)


class Database:
    """One engine plus a read and a write session factory."""

    def __init__(self, url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self.url = url
        self._build(pool_size)

    def _build(self, pool_size: int) -> None:
        self.pool_size = pool_size
        self.engine = make_engine(self.url, pool_size=pool_size)
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(
            self.engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
        )

    def resize(self, pool_size: int) -> None:
        """Rebuild the engine with another pool size (at start-up, before requests are served)."""
        if pool_size != self.pool_size:
            self.engine.dispose()
            self._build(pool_size)

    def session(self) -> Session:
        """A read session the caller closes (no connection is taken until its first query)."""
        return self._read()

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on any error."""
        with self._write() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
