"""Alembic, driven programmatically: the scripts ship inside the package (``hub_server/migrations``)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect

from hub_server.db import Database

SCRIPT_LOCATION = "hub_server:migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    # ConfigParser interpolation would choke on a '%' in a URL-encoded password.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with db.engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return MigrationContext.configure(conn).get_current_revision()


def head_revision(url: str) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()
