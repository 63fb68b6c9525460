"""``vf-hub``: run and administer the Environments Hub.

Admin commands (user, org, token, db, gc) work on the database directly, with the same ``VF_HUB_*``
settings as the server; ``login`` is the client side and talks to a running hub over HTTP.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # the CLI imports the server lazily, so `vf-hub --help` stays fast
    from hub_server.context import Hub
    from hub_server.settings import HubSettings

app = typer.Typer(help="The verifiers Environments Hub server and its admin tasks.", no_args_is_help=True)
db_app = typer.Typer(help="Database migrations (Alembic).", no_args_is_help=True)
user_app = typer.Typer(help="Users.", no_args_is_help=True)
org_app = typer.Typer(help="Organisations (shared namespaces).", no_args_is_help=True)
token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(user_app, name="user")
app.add_typer(org_app, name="org")
app.add_typer(token_app, name="token")

DbUrl = Annotated[
    str | None,
    typer.Option("--database-url", envvar="VF_HUB_DATABASE_URL", help="SQLAlchemy URL (default: SQLite)."),
]
DataDir = Annotated[
    Path | None, typer.Option("--data-dir", envvar="VF_HUB_DATA_DIR", help="Where hub.db and blobs/ live.")
]


def _settings(database_url: str | None = None, data_dir: Path | None = None) -> HubSettings:
    from hub_server.settings import HubSettings

    settings = HubSettings()
    if database_url:
        settings = settings.model_copy(update={"database_url": database_url})
    if data_dir:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


def _hub(database_url: str | None, data_dir: Path | None) -> Hub:
    from hub_server.context import Hub

    return Hub.from_settings(_settings(database_url, data_dir))


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(1)


@contextmanager
def _refusals() -> Iterator[None]:
    """A ``HubError`` from the services becomes a one-line error and exit status 1."""
    from hub_server.services import HubError

    try:
        yield
    except HubError as exc:
        raise _fail(exc.detail) from None


@app.command()
def serve(
    host: Annotated[str, typer.Option(envvar="VF_HUB_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="VF_HUB_PORT")] = 8000,
    database_url: DbUrl = None,
    data_dir: DataDir = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    migrate_db: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Apply migrations first.")
    ] = True,
    access_log: Annotated[bool, typer.Option("--access-log/--no-access-log")] = True,
    log_level: str = "info",
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Start with content: publish the bundled environments (as verifiers/<name>) and a sample "
            "eval run into a fresh database (a new temporary data dir unless --data-dir is given).",
        ),
    ] = False,
) -> None:
    """Serve the API, the simple index and the web UI (SQLite under the data dir unless told otherwise)."""
    import uvicorn

    from hub_server import migrate
    from hub_server.db import PoolSizeError, plan_pool

    # Workers are separate processes that build their own settings from the environment.
    if database_url:
        os.environ["VF_HUB_DATABASE_URL"] = database_url
    if data_dir:
        os.environ["VF_HUB_DATA_DIR"] = str(data_dir)
    os.environ["VF_HUB_WORKERS"] = str(workers)  # each worker sizes its pool by the number of workers
    # Smoke checks fetch requirements beyond the SDK from this hub's own index (vf-smoke, run by hub_server.services.smoke).
    local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    os.environ.setdefault("VF_HUB_SMOKE_INDEX_URL", f"http://{local}:{port}/simple/")
    settings = _settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if demo and not (data_dir or database_url or os.environ.get("VF_HUB_DATA_DIR")):
        import tempfile

        os.environ["VF_HUB_DATA_DIR"] = tempfile.mkdtemp(prefix="vf-hub-demo-")
        settings = _settings()
    if (migrate_db and settings.auto_migrate) or demo:
        migrate.upgrade(settings.resolved_database_url)
    demo_hub = _seed_demo(settings) if demo else None
    try:  # the workers check it too; here it is one clear error instead of one per worker
        pool = plan_pool(
            settings.resolved_database_url,
            workers=workers,
            pool_size=settings.db_pool_size,
            reserved=settings.db_reserved_connections,
        )
    except PoolSizeError as exc:
        raise _fail(str(exc)) from None
    typer.echo(
        f"hub data: {settings.data_dir}  database: {_redact(settings.resolved_database_url)}  "
        f"workers: {workers} × {pool} connections"
    )
    uvicorn.run(
        "hub_server.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=access_log,
        log_level=log_level,
        proxy_headers=True,
    )
    if demo_hub is not None and demo_hub.smoke is not None:
        demo_hub.smoke.shutdown()  # smoke checks of the demo's publishes still queued


def _seed_demo(settings: HubSettings) -> Hub:
    from hub_server.context import Hub
    from hub_server.demo import seed_demo

    hub = Hub.from_settings(settings)
    report = seed_demo(hub)
    typer.echo(f"demo: published {len(report.published)} environments: {', '.join(report.published)}")
    for run in report.runs:
        typer.echo(f"demo: sample eval run {run}")
    for skipped in report.skipped:
        typer.secho(f"demo: skipped {skipped}", fg=typer.colors.YELLOW, err=True)
    return hub


def _redact(url: str) -> str:
    from sqlalchemy import make_url

    return make_url(url).render_as_string(hide_password=True)


@db_app.command("upgrade")
def db_upgrade(database_url: DbUrl = None, data_dir: DataDir = None, revision: str = "head") -> None:
    """Apply migrations up to REVISION (default: head)."""
    from hub_server import migrate

    settings = _settings(database_url, data_dir)
    migrate.upgrade(settings.resolved_database_url, revision)
    typer.echo(f"database at {revision}: {_redact(settings.resolved_database_url)}")


@db_app.command("current")
def db_current(database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """Print the database's migration revision."""
    from hub_server import migrate

    hub = _hub(database_url, data_dir)
    typer.echo(migrate.current_revision(hub.db) or "none")


@user_app.command("create")
def user_create(
    username: str,
    email: Annotated[str | None, typer.Option()] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="Hub admin (may delete, may hold admin tokens).")
    ] = False,
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Create a user (and its namespace)."""
    from hub_server.services import create_user

    with _refusals():
        user = create_user(_hub(database_url, data_dir), username, email=email, admin=admin)
    typer.echo(f"created user {user.username}{' (admin)' if admin else ''}")


@org_app.command("create")
def org_create(
    name: str,
    member: Annotated[
        list[str] | None, typer.Option("--member", help="Member username (repeatable).")
    ] = None,
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Create an organisation namespace; the first member becomes its owner."""
    from hub_server.services import create_org

    with _refusals():
        create_org(_hub(database_url, data_dir), name, member or [])
    typer.echo(f"created organisation {name.lower()}")


@org_app.command("add-member")
def org_add_member(
    org: str,
    username: str,
    role: Annotated[str, typer.Option(help="member or owner")] = "member",
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Add USERNAME to ORG."""
    from hub_server.services import add_member

    with _refusals():
        add_member(_hub(database_url, data_dir), org, username, role)
    typer.echo(f"{username} is now a {role} of {org}")


@token_app.command("create")
def token_create(
    username: str,
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="read, publish or admin (repeatable).")
    ] = None,
    name: Annotated[str, typer.Option(help="A label to tell tokens apart.")] = "",
    expires_days: Annotated[int | None, typer.Option(min=1, help="Expire after this many days.")] = None,
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Create a token for USERNAME and print it (it is shown once; only its hash is stored)."""
    from hub_server.services import create_token

    with _refusals():
        token, row = create_token(
            _hub(database_url, data_dir),
            username,
            scopes=scope or ["read"],
            name=name,
            expires_in=timedelta(days=expires_days) if expires_days else None,
        )
    typer.echo(f"token id {row.id} for {username}, scopes {','.join(row.scopes)} (store it now):", err=True)
    typer.echo(token)


@token_app.command("revoke")
def token_revoke(token_id: int, database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """Revoke the token with id TOKEN_ID."""
    from hub_server.services import revoke_token

    with _refusals():
        revoke_token(_hub(database_url, data_dir), token_id)
    typer.echo(f"revoked token {token_id}")


@token_app.command("list")
def token_list(username: str, database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """List USERNAME's tokens (ids, prefixes, scopes; never the tokens)."""
    from hub_server.services import find_user, list_tokens

    hub = _hub(database_url, data_dir)
    with hub.db.read() as session:
        user = find_user(session, username)
        if user is None:
            raise _fail(f"user {username!r} does not exist")
        for t in list_tokens(session, user.id):
            state = (
                "revoked"
                if t.revoked_at
                else (f"expires {t.expires_at:%Y-%m-%d}" if t.expires_at else "active")
            )
            typer.echo(f"{t.id}\t{t.prefix}…\t{','.join(t.scopes)}\t{state}\t{t.name}")


@app.command()
def login(
    url: Annotated[
        str, typer.Option(envvar="VF_HUB_URL", prompt="Hub URL", help="e.g. http://127.0.0.1:8000")
    ],
    token: Annotated[str, typer.Option(envvar="VF_HUB_TOKEN", prompt=True, hide_input=True)],
) -> None:
    """Check TOKEN against the hub at URL and store both for vf-push / vf-install (file mode 0600)."""
    import httpx

    from verifiers.hub.wire import HubClientError, WhoAmI, clean_url, problem_detail, save_config

    try:
        base = clean_url(url)
        response = httpx.get(
            f"{base}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
    except HubClientError as exc:
        raise _fail(str(exc)) from None
    except httpx.HTTPError as exc:
        raise _fail(f"cannot reach the hub at {base}: {exc}") from None
    if not response.is_success:
        raise _fail(f"GET /api/v1/whoami: HTTP {response.status_code}: {problem_detail(response.text)}")
    me = WhoAmI.model_validate(response.json())
    path = save_config(url, token)
    typer.echo(f"logged in to {url} as {me.username} (scopes {','.join(me.scopes)}); saved to {path}")


@app.command()
def gc(
    grace_hours: Annotated[float, typer.Option(help="Keep unreferenced blobs younger than this.")] = 1.0,
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Delete artifact blobs that no version references (left behind by a crash mid-publish)."""
    from hub_server.services import collect_garbage

    removed = collect_garbage(_hub(database_url, data_dir), grace=timedelta(hours=grace_hours))
    typer.echo(f"removed {len(removed)} unreferenced blob(s)")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
