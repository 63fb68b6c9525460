"""Token parents (revoking a token revokes the tokens it minted) and per-client daily download events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch: SQLite cannot add a foreign key to an existing table, so Alembic rebuilds it there.
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_api_tokens_parent_id_api_tokens"),
            "api_tokens",
            ["parent_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch.create_index(op.f("ix_api_tokens_parent_id"), ["parent_id"])
    op.create_table(
        "download_events",
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("client", sa.String(32), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.ForeignKeyConstraint(
            ["file_id"], ["files.id"], name=op.f("fk_download_events_file_id_files"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("file_id", "client", "day", name=op.f("pk_download_events")),
    )
    op.create_index(op.f("ix_download_events_day"), "download_events", ["day"])


def downgrade() -> None:
    op.drop_table("download_events")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_index(op.f("ix_api_tokens_parent_id"))
        batch.drop_constraint(op.f("fk_api_tokens_parent_id_api_tokens"), type_="foreignkey")
        batch.drop_column("parent_id")
