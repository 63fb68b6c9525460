"""The server side of ``vf-hub``: run and administer the Environments Hub (``python -m hub_server.cli``).

``vf-hub`` itself is the SDK's command (``verifiers.cli.hub``: the client verbs login, whoami, search, …);
it hands ``serve``, ``db``, ``user``, ``org``, ``token``, ``name`` and ``gc`` over to this module once the ``hub`` extra
is known to be installed. Admin commands work on the database directly, with the same ``VF_HUB_*``
settings as the server, and bring a database that was never migrated to the current schema first, as
``serve`` does (unless ``VF_HUB_AUTO_MIGRATE=0``: then they say which command to run).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hub_server.usage import run_app

if TYPE_CHECKING:  # the CLI imports the server lazily, so `vf-hub --help` stays fast
    from hub_server.context import Hub
    from hub_server.settings import HubSettings

PROG = "vf-hub"
#: The hub's default port, the one ``verifiers.hub.client.DEFAULT_URL`` points at (kept equal by a test).
DEFAULT_PORT = 8080


def _typer(help: str) -> typer.Typer:
    """A command group with the same plain help and -h as the SDK's vf-* commands (vf-hub's client verbs)."""
    return typer.Typer(
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


app = _typer("The verifiers Environments Hub server and its admin tasks.")
db_app = _typer("Database migrations (Alembic).")
user_app = _typer("Users.")
org_app = _typer("Organisations (shared namespaces): members and their roles (owner, admin, member).")
token_app = _typer("API tokens.")
name_app = _typer(
    "Distribution names set aside for one owner, who alone may publish them first (also names the upstream "
    "index serves)."
)
app.add_typer(db_app, name="db")
app.add_typer(user_app, name="user")
app.add_typer(org_app, name="org")
app.add_typer(token_app, name="token")
app.add_typer(name_app, name="name")

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
    """The hub of these settings for an admin command, its database brought to the current schema."""
    from hub_server.context import Hub

    settings = _settings(database_url, data_dir)
    _ensure_schema(settings)
    return Hub.from_settings(settings)


def _ensure_schema(settings: HubSettings) -> None:
    """Migrate a database ``serve`` never opened (or an older one), as ``serve`` would; with
    ``VF_HUB_AUTO_MIGRATE=0``, fail with the command that does it instead."""
    from alembic.script import ScriptDirectory
    from sqlalchemy import make_url

    from hub_server import migrate
    from hub_server.db import Database, is_sqlite

    url = settings.resolved_database_url
    sqlite_file = make_url(url).database if is_sqlite(url) else None
    if sqlite_file and sqlite_file != ":memory:" and not Path(sqlite_file).exists():
        current = None  # never created: asking would leave an empty file behind
    else:
        db = Database(url)
        try:
            current = migrate.current_revision(db)
        finally:
            db.dispose()
    scripts = ScriptDirectory.from_config(migrate.alembic_config(url))
    head = scripts.get_current_head()
    if current == head:
        return
    where = _redact(url)
    if current is not None and current not in {s.revision for s in scripts.walk_revisions()}:
        raise _fail(
            f"the hub database at {where} is at revision {current}, which this vf-hub does not know "
            "(a newer verifiers-sdk migrated it): upgrade verifiers-sdk"
        )
    if not settings.auto_migrate:
        raise _fail(
            f"the hub database at {where} is at revision {current or 'none (never migrated)'}, this vf-hub "
            f"needs {head}: run `{PROG} db upgrade` with the same --data-dir/--database-url first"
        )
    migrate.upgrade(url)
    state = "a new database" if current is None else f"the database (was at {current})"
    typer.echo(f"migrated {state} at {where} to {head}", err=True)


def _fail(message: str) -> typer.Exit:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)  # one line, as every vf-* error
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
    port: Annotated[
        int, typer.Option(envvar="VF_HUB_PORT", help="Port (8080: model servers take 8000).")
    ] = DEFAULT_PORT,
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
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-proxy",
            help="Address of a reverse proxy whose X-Forwarded-For/-Proto to believe (repeatable; "
            "VF_HUB_TRUSTED_PROXIES, comma-separated). Default: none, not even loopback.",
        ),
    ] = None,
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
    if trusted_proxy:
        os.environ["VF_HUB_TRUSTED_PROXIES"] = ",".join(trusted_proxy)
    # Smoke checks fetch requirements beyond the SDK from this hub's own index (vf-smoke, run by hub_server.smoke_checks).
    local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    os.environ.setdefault("VF_HUB_SMOKE_INDEX_URL", f"http://{local}:{port}/simple/")
    scratch: Path | None = None  # the demo's own temporary data dir, removed on the way out
    if demo and not (data_dir or database_url or os.environ.get("VF_HUB_DATA_DIR")):
        import tempfile

        scratch = Path(tempfile.mkdtemp(prefix="vf-hub-demo-"))
        os.environ["VF_HUB_DATA_DIR"] = str(scratch)
    settings = _settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    demo_hub: Hub | None = None
    # For the demo, SIGINT and SIGTERM end the process through SystemExit(128 + signal), so its clean-up
    # below runs, while seeding too (uvicorn handles them while it serves, then raises them again once
    # it has shut down).
    previous = {sig: signal.signal(sig, _exit_on_signal) for sig in _STOP_SIGNALS} if demo else {}
    try:
        if (migrate_db and settings.auto_migrate) or demo:
            migrate.upgrade(settings.resolved_database_url)
        if demo:
            demo_hub = _seed_demo(settings)
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
            **settings.uvicorn_proxy_options(),  # type: ignore[arg-type]
        )
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        if demo_hub is not None and demo_hub.smoke is not None:
            # the demo's publishes queued smoke checks: drop those, and stop a running one when its data goes
            demo_hub.smoke.shutdown(stop_running=scratch is not None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
            typer.echo(f"demo: removed its data dir {scratch}", err=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _seed_demo(settings: HubSettings) -> Hub:
    from hub_server.context import Hub
    from hub_server.demo import seed_demo

    def progress(line: str) -> None:
        typer.echo(f"demo: {line}", err=True)

    hub = Hub.from_settings(settings)
    started = time.monotonic()
    typer.echo("demo: publishing the bundled environments as verifiers/<name> (a minute or more) …", err=True)
    report = seed_demo(hub, progress=progress)
    typer.echo(
        f"demo: published {len(report.published)} environments in {time.monotonic() - started:.0f} s: "
        f"{', '.join(report.published)}"
    )
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
    """Print the database's migration revision (none: never migrated)."""
    from hub_server import migrate
    from hub_server.db import Database

    db = Database(_settings(database_url, data_dir).resolved_database_url)
    try:
        typer.echo(migrate.current_revision(db) or "none")
    finally:
        db.dispose()


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


Role = Annotated[str, typer.Argument(metavar="ROLE", help="owner, admin or member (see docs/hub.md).")]


@org_app.command("add-member")
def org_add_member(
    org: str,
    username: str,
    role: Annotated[str, typer.Option(help="owner, admin or member")] = "member",
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Add USERNAME to ORG (refused if already a member: `set-role` changes a role)."""
    from hub_server.services.members import add_member

    with _refusals():
        member = add_member(_hub(database_url, data_dir), org, username, role)
    typer.echo(f"{member.username} is now {_a(member.role)} of {org.lower()}")


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


@org_app.command("members")
def org_members(org: str, database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """List ORG's members and their roles, owners first."""
    from hub_server.services.members import list_members

    hub = _hub(database_url, data_dir)
    with _refusals(), hub.db.read() as session:
        rows = list_members(session, None, org)
    width = max([len("USER"), *(len(m.username) for m in rows)])
    typer.echo(f"{'USER':<{width}}  ROLE")
    for m in rows:
        typer.echo(f"{m.username:<{width}}  {m.role}")


@org_app.command("set-role")
def org_set_role(
    org: str, username: str, role: Role, database_url: DbUrl = None, data_dir: DataDir = None
) -> None:
    """Give member USERNAME of ORG the role ROLE (an organisation always keeps one owner)."""
    from hub_server.services.members import set_role

    with _refusals():
        member = set_role(_hub(database_url, data_dir), org, username, role)
    typer.echo(f"{member.username} is now {_a(member.role)} of {org.lower()}")


@org_app.command("remove-member")
def org_remove_member(org: str, username: str, database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """Take USERNAME out of ORG: its tokens stop reading and publishing there at once (never the last owner)."""
    from hub_server.services.members import remove_member

    with _refusals():
        remove_member(_hub(database_url, data_dir), org, username)
    typer.echo(f"{username.lower()} is no longer a member of {org.lower()}")


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


@name_app.command("allow")
def name_allow(
    name: str,
    owner: Annotated[str, typer.Option("--owner", help="The user or organisation that may publish it.")],
    database_url: DbUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Set NAME aside for OWNER: only OWNER may publish it first, also when the upstream index serves a
    project of that name (publishing it then shadows the upstream project for everyone installing through
    this hub)."""
    from hub_server.services.names import allow_name

    with _refusals():
        canonical = allow_name(_hub(database_url, data_dir), name, owner)
    typer.echo(f"{owner} may now publish {canonical} (it shadows the upstream project of that name)")


@name_app.command("revoke")
def name_revoke(name: str, database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """Withdraw an allowance (versions already published stay)."""
    from hub_server.services.names import revoke_name

    if not revoke_name(_hub(database_url, data_dir), name):
        raise _fail(f"no allowance for {name!r}")
    typer.echo(f"withdrew the allowance for {name}")


@name_app.command("list")
def name_list(database_url: DbUrl = None, data_dir: DataDir = None) -> None:
    """The allowances: NAME and the owner that may publish it."""
    from hub_server.services.names import allowed_names

    for name, owner in allowed_names(_hub(database_url, data_dir)):
        typer.echo(f"{name}\t{owner}")


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


def main(args: list[str] | None = None) -> None:
    run_app(app, PROG, args)


if __name__ == "__main__":
    main()
