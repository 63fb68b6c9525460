"""The Alembic migrations are the schema: they match the models, go down and up, and the app refuses an
unmigrated database (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient

from hub_server import migrate
from hub_server.app import create_app
from hub_server.db import Database
from hub_server.models import Base
from hub_server.settings import HubSettings


def schema_diff(url: str) -> list[object]:
    db = Database(url)
    try:
        with db.engine.connect() as conn:
            return list(
                compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
            )
    finally:
        db.dispose()


def test_migrations_match_the_models_and_round_trip(database_url: str) -> None:
    assert schema_diff(database_url) == []
    migrate.downgrade(database_url, "base")
    db = Database(database_url)
    assert migrate.current_revision(db) is None
    migrate.upgrade(database_url)
    assert migrate.current_revision(db) == migrate.head_revision(database_url)
    db.dispose()
    assert schema_diff(database_url) == []


def test_app_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    app = create_app(HubSettings(data_dir=tmp_path))
    with pytest.raises(RuntimeError, match="vf-hub db upgrade"), TestClient(app):
        pass


def test_migration_scripts_ship_inside_the_package() -> None:
    import hub_server

    versions = Path(hub_server.__file__).parent / "migrations" / "versions"
    assert (versions.parent / "env.py").is_file() and (versions.parent / "script.py.mako").is_file()
    assert list(versions.glob("0001_*.py"))
