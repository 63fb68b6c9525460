"""Engine and sessions. SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for write sessions.

Pools: each worker process has one pool of ``pool_size`` connections and no overflow, split by
``split_pool`` between request threads (each uses at most one connection at a time) and request-long
read sessions (``deps.read_session``), so no one ever waits for a connection. On PostgreSQL the pools of
all workers must fit in the server's ``max_connections``; ``plan_pool`` checks that at start-up.

The hot JSON reads and the change-counter read (``Database.hot``) are a few short selects each. On
PostgreSQL, where every statement is a round trip to another process (and on a small machine a context
switch), they run without ``BEGIN``/``ROLLBACK`` (autocommit): under the default READ COMMITTED each
statement saw its own snapshot anyway, so nothing they can read changes. A pooled connection is pinged
before use only when it sat idle in the pool for ``PING_IDLE_SECONDS``; a busy pool's connections were
just used, and if the server drops them anyway the first error invalidates the whole pool
(SQLAlchemy's disconnect handling), so the next checkouts reconnect.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

WRITE_OPTION = "vf_hub_write"
#: SQLite: run without ``BEGIN``, each statement its own transaction (``Database.hot`` with ``snapshot=False``).
AUTOCOMMIT_OPTION = "vf_hub_autocommit"
#: A pooled PostgreSQL connection idle this long is pinged before it is handed out again.
PING_IDLE_SECONDS = 2.0
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
        engine = create_engine(url, **pool)
        _ping_when_idle(engine)
        return engine
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
        options = conn.get_execution_options()
        if options.get(AUTOCOMMIT_OPTION):
            return  # pysqlite without isolation_level is in autocommit until a BEGIN
        conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get(WRITE_OPTION) else "BEGIN")

    return engine


def _ping_when_idle(engine: Engine) -> None:
    """``pool_pre_ping`` for connections that sat in the pool for ``PING_IDLE_SECONDS`` or more only:
    under load a connection goes back and out within milliseconds, and a ping each time would be one
    more round trip per request."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["vf_hub_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("vf_hub_idle_since")
        if since is None or time.monotonic() - since < PING_IDLE_SECONDS:
            return  # new (just connected) or recently used
        try:
            engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as exc:
            # the pool then discards this connection and checks out (or opens) another
            raise DisconnectionError(str(exc)) from exc


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
        if is_sqlite(self.url):
            self._snapshot = self.engine
            self._autocommit = self.engine.execution_options(**{AUTOCOMMIT_OPTION: True})
        else:
            # READ COMMITTED gives each statement its own snapshot, in a transaction or not
            self._snapshot = self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")

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
    def hot(self, *, snapshot: bool = True) -> Iterator[Connection]:
        """A Core connection for a short read (the hot JSON reads, the change counters).

        With ``snapshot`` its statements see one state of the database where a transaction costs
        nothing (SQLite: a local ``BEGIN``); on PostgreSQL they run in autocommit, each with its own
        snapshot as under READ COMMITTED. Without ``snapshot`` (one statement) no transaction either way.
        """
        with (self._snapshot if snapshot else self._autocommit).connect() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on any error."""
        with self._write() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
