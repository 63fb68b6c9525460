"""Issues 32 and 33: per-environment read grants (a private environment shared with one user). Roles of
memberships (owner, admin, member) need no schema change: the column has held the role since 0001.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "read_grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("granted_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["environment_id"],
            ["environments.id"],
            name=op.f("fk_read_grants_environment_id_environments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_read_grants_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["granted_by"], ["users.id"], name=op.f("fk_read_grants_granted_by_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_read_grants")),
        sa.UniqueConstraint("environment_id", "user_id", name=op.f("uq_read_grants_environment_id")),
    )
    op.create_index(op.f("ix_read_grants_environment_id"), "read_grants", ["environment_id"])
    op.create_index(op.f("ix_read_grants_user_id"), "read_grants", ["user_id"])


def downgrade() -> None:
    op.drop_table("read_grants")
