"""Hub test fixtures: SQLite and PostgreSQL databases, the app in-process and on a real port, actors
with tokens, and throwaway venvs for pip.

PostgreSQL: ``VF_TEST_POSTGRES_URL`` if set (a server URL whose user may CREATE DATABASE), else a
throwaway PostgreSQL 15 started here (as the ``postgres`` user when we are root). If neither works,
the PostgreSQL half of the suite is skipped — or fails, when ``VF_REQUIRE_POSTGRES=1`` (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import make_url

from hub_server import migrate, services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.tiers import component_missing
from verifiers.clients.local_model import free_port

PG_BIN = Path(os.environ.get("VF_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
ROOT = Path(__file__).resolve().parents[2]


# --- PostgreSQL ---------------------------------------------------------------------------------------
def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root; the Debian packages ship a `postgres` system user for this.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _start_postgres(base: Path) -> tuple[str, Callable[[], None]]:
    if not (PG_BIN / "initdb").exists():
        raise RuntimeError(f"no PostgreSQL binaries at {PG_BIN} (set VF_TEST_PG_BIN)")
    data, sock = base / "data", base / "sock"
    sock.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    run = lambda cmd: subprocess.run(_as_postgres(cmd), capture_output=True, text=True, timeout=120)  # noqa: E731
    proc = run(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]
    )
    if proc.returncode != 0:
        raise RuntimeError(f"initdb failed: {proc.stderr.strip()[-500:]}")
    port = free_port()
    opts = (
        f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=200"
    )
    proc = run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(base / "log"), "-w", "start"])
    if proc.returncode != 0:
        log = (base / "log").read_text() if (base / "log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {proc.stderr.strip()[-300:]} {log[-500:]}")

    def stop() -> None:
        run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])

    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", stop


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """Base URL of a PostgreSQL server we may create databases on."""
    url = os.environ.get("VF_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    base = Path(f"/tmp/vf-hub-pg-{uuid.uuid4().hex[:8]}")
    base.mkdir()
    try:
        url, stop = _start_postgres(base)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        component_missing("VF_REQUIRE_POSTGRES", f"PostgreSQL unavailable: {exc}")
    try:
        yield url
    finally:
        stop()
        shutil.rmtree(base, ignore_errors=True)


def _pg_admin(url: str, sql: str) -> None:
    import psycopg

    u = make_url(url)
    conninfo = f"host={u.host} port={u.port or 5432} user={u.username} dbname={u.database or 'postgres'}"
    if u.password:
        conninfo += f" password={u.password}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def postgres_template(postgres_server: str) -> str:
    """A migrated template database; each test gets a copy (CREATE DATABASE ... TEMPLATE is fast)."""
    name = f"vf_hub_tpl_{uuid.uuid4().hex[:8]}"
    _pg_admin(postgres_server, f"CREATE DATABASE {name}")
    migrate.upgrade(make_url(postgres_server).set(database=name).render_as_string(hide_password=False))
    return name


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tpl") / "hub.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database of each kind."""
    if request.param == "sqlite":
        target = tmp_path / "hub.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), target)
        yield f"sqlite:///{target}"
        return
    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("postgres_template")
    name = f"vf_hub_t_{uuid.uuid4().hex[:10]}"
    _pg_admin(server, f"CREATE DATABASE {name} TEMPLATE {template}")
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        _pg_admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# --- the app ------------------------------------------------------------------------------------------
@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> HubSettings:
    return HubSettings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        cache_poll_seconds=0.2,
        max_file_size=256 * 1024,
        max_unpacked_size=1024 * 1024,
        max_archive_members=200,
        upstream_index="none",  # tests never reach PyPI; test_upstream.py points it at a loopback index
    )


@pytest.fixture
def app(settings: HubSettings) -> FastAPI:
    return create_app(settings)


@pytest.fixture
def hub(app: FastAPI) -> Hub:
    h: Hub = app.state.hub
    return h


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


@dataclass(frozen=True)
class Actors:
    """alice (owner of her namespace and of org `lab`), bob (another user), root (hub admin)."""

    alice: str  # publish
    alice_read: str
    bob: str  # publish
    root: str  # admin

    @staticmethod
    def auth(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def actors(hub: Hub) -> Actors:
    services.create_user(hub, "alice")
    services.create_user(hub, "bob")
    services.create_user(hub, "root", admin=True)
    services.create_org(hub, "lab", ["alice"])
    return Actors(
        alice=services.create_token(hub, "alice", scopes=["publish"])[0],
        alice_read=services.create_token(hub, "alice", scopes=["read"])[0],
        bob=services.create_token(hub, "bob", scopes=["publish"])[0],
        root=services.create_token(hub, "root", scopes=["admin"])[0],
    )


def web_session(hub: Hub, token: str) -> str:
    """A web session signed in with API token ``token``, as ``/login`` makes one: the cookie's value."""
    return services.start_session(hub, hub.principal(token).token_id).session_id


def publish(
    client: TestClient,
    token: str | None,
    wheel: tuple[str, bytes],
    sdist: tuple[str, bytes],
    *,
    owner: str = "alice",
    name: str = "demo-env",
    visibility: str | None = None,
):  # type: ignore[no-untyped-def]
    data = {"visibility": visibility} if visibility else {}
    return client.post(
        f"/api/v1/environments/{owner}/{name}/versions",
        files={"wheel": (wheel[0], wheel[1]), "sdist": (sdist[0], sdist[1])},
        data=data,
        headers=Actors.auth(token) if token else {},
    )


@contextmanager
def serve_app(app: FastAPI, port: int | None = None) -> Iterator[str]:
    """``app`` served by uvicorn on a loopback port (a free one unless given), in a thread; yields its URL."""
    import uvicorn

    port = port or free_port()
    hub = getattr(app.state, "hub", None)  # proxy headers as `vf-hub serve` takes them (local views: none)
    proxy = hub.settings.uvicorn_proxy_options() if isinstance(hub, Hub) else {"proxy_headers": False}
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            access_log=False,
            # uvicorn closes a keep-alive connection idle for 5 s; on a loaded machine a client reusing it at
            # that moment reads a reset (httpx.ReadError), a race of the harness, not an answer of the hub.
            timeout_keep_alive=300,
            **proxy,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 300  # only a guard against a hang
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the hub did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@dataclass
class LiveHub:
    url: str
    hub: Hub


@pytest.fixture
def live_hub(app: FastAPI) -> Iterator[LiveHub]:
    """The app served by uvicorn on a free loopback port, in a thread."""
    with serve_app(app) as url:
        yield LiveHub(url=url, hub=app.state.hub)


# --- throwaway venvs ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def shared_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This venv's site-packages as symlinks, minus .pth files and any `demo_env` install, so a fresh
    venv gets every dependency (and pip) without the network and without seeing a stray demo-env."""
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    out = tmp_path_factory.mktemp("shared-site")
    for entry in site.iterdir():
        if entry.suffix == ".pth" or entry.name.lower().startswith(("demo_env", "demo-env")):
            continue
        (out / entry.name).symlink_to(entry)
    return out


@pytest.fixture
def make_venv(tmp_path: Path, shared_site: Path) -> Callable[[str], Path]:
    """``make_venv(name)`` -> the python of a new venv that can import verifiers (from this checkout)."""

    def make(name: str) -> Path:
        venv = tmp_path / name
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        py = venv / "bin" / "python"
        purelib = subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        Path(purelib, "_vf_test_shared.pth").write_text(f"{ROOT}\n{shared_site}\n")
        return py

    return make


def clean_pip_env() -> dict[str, str]:
    """Environment for pip that ignores this machine's pip config (extra indexes, find-links)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["UV_NO_CONFIG"] = "1"
    env["UV_NO_CACHE"] = "1"
    return env
