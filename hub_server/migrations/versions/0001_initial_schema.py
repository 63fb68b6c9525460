"""Initial schema: owners, users, orgs, tokens, environments, versions, files, stars, evals.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _pk(table: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}"))


def _fk(table: str, col: str, ref: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [col], [f"{ref}.id"], name=op.f(f"fk_{table}_{col}_{ref}"), ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "hub_state",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_hub_state")),
    )
    op.create_table(
        "owners",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        _ts("created_at"),
        _pk("owners"),
        sa.UniqueConstraint("name", name=op.f("uq_owners_name")),
    )
    op.create_table(
        "environments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("visibility", sa.String(8), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.Column("download_count", sa.BigInteger(), nullable=False),
        sa.Column("star_count", sa.Integer(), nullable=False),
        _fk("environments", "owner_id", "owners", "RESTRICT"),
        _pk("environments"),
        sa.UniqueConstraint("name", name=op.f("uq_environments_name")),
    )
    for col in ("download_count", "owner_id", "star_count", "updated_at"):
        op.create_index(op.f(f"ix_environments_{col}"), "environments", [col])
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        _ts("created_at"),
        _fk("users", "owner_id", "owners", "CASCADE"),
        _pk("users"),
        sa.UniqueConstraint("owner_id", name=op.f("uq_users_owner_id")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        _ts("created_at"),
        _ts("expires_at", nullable=True),
        _ts("revoked_at", nullable=True),
        _ts("last_used_at", nullable=True),
        _fk("api_tokens", "user_id", "users", "CASCADE"),
        _pk("api_tokens"),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_user_id"), "api_tokens", ["user_id"])
    op.create_table(
        "environment_tags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(50), nullable=False),
        _fk("environment_tags", "environment_id", "environments", "CASCADE"),
        _pk("environment_tags"),
        sa.UniqueConstraint("environment_id", "tag", name=op.f("uq_environment_tags_environment_id")),
    )
    op.create_index(op.f("ix_environment_tags_tag"), "environment_tags", ["tag"])
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("org_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        _fk("memberships", "org_id", "owners", "CASCADE"),
        _fk("memberships", "user_id", "users", "CASCADE"),
        _pk("memberships"),
        sa.UniqueConstraint("org_id", "user_id", name=op.f("uq_memberships_org_id")),
    )
    op.create_index(op.f("ix_memberships_org_id"), "memberships", ["org_id"])
    op.create_index(op.f("ix_memberships_user_id"), "memberships", ["user_id"])
    op.create_table(
        "stars",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        _ts("created_at"),
        _fk("stars", "environment_id", "environments", "CASCADE"),
        _fk("stars", "user_id", "users", "CASCADE"),
        _pk("stars"),
        sa.UniqueConstraint("user_id", "environment_id", name=op.f("uq_stars_user_id")),
    )
    op.create_index(op.f("ix_stars_environment_id"), "stars", ["environment_id"])
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("requires_python", sa.String(200), nullable=True),
        sa.Column("dependencies", sa.JSON(), nullable=False),
        sa.Column("readme", sa.Text(), nullable=False),
        sa.Column("readme_content_type", sa.String(100), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("sdist_files", sa.JSON(), nullable=False),
        sa.Column("yanked", sa.Boolean(), nullable=False),
        sa.Column("yanked_reason", sa.Text(), nullable=False),
        sa.Column("uploader_id", sa.Integer(), nullable=True),
        _ts("created_at"),
        _fk("versions", "environment_id", "environments", "CASCADE"),
        _fk("versions", "uploader_id", "users", "SET NULL"),
        _pk("versions"),
        sa.UniqueConstraint("environment_id", "version", name=op.f("uq_versions_environment_id")),
    )
    op.create_table(
        "evals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("avg_reward", sa.Float(), nullable=False),
        sa.Column("num_examples", sa.Integer(), nullable=False),
        sa.Column("rollouts_per_example", sa.Integer(), nullable=False),
        sa.Column("pass_at_k", sa.JSON(), nullable=False),
        sa.Column("uploader_id", sa.Integer(), nullable=True),
        _ts("created_at"),
        _fk("evals", "uploader_id", "users", "SET NULL"),
        _fk("evals", "version_id", "versions", "CASCADE"),
        _pk("evals"),
    )
    op.create_index(op.f("ix_evals_version_id"), "evals", ["version_id"])
    op.create_table(
        "files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(300), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(400), nullable=False),
        sa.Column("core_metadata", sa.Text(), nullable=True),
        sa.Column("core_metadata_sha256", sa.String(64), nullable=True),
        _ts("created_at"),
        _fk("files", "version_id", "versions", "CASCADE"),
        _pk("files"),
        sa.UniqueConstraint("blob_key", name=op.f("uq_files_blob_key")),
        sa.UniqueConstraint("filename", name=op.f("uq_files_filename")),
    )
    op.create_index(op.f("ix_files_version_id"), "files", ["version_id"])
    op.bulk_insert(
        sa.table("hub_state", sa.column("key", sa.String), sa.column("value", sa.BigInteger)),
        [{"key": "index_generation", "value": 0}],
    )


def downgrade() -> None:
    for table in (
        "files",
        "evals",
        "versions",
        "stars",
        "memberships",
        "environment_tags",
        "api_tokens",
        "users",
        "environments",
        "owners",
        "hub_state",
    ):
        op.drop_table(table)
