"""Issue 24: admin allowances for names the upstream index serves, READMEs rendered at publish, and
whether an eval run's examples were shuffled (what bounds its example ids).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "name_grants",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["owners.id"], name=op.f("fk_name_grants_owner_id_owners"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_name_grants")),
    )
    with op.batch_alter_table("versions") as batch:
        batch.add_column(sa.Column("readme_html", sa.Text(), nullable=True))
    with op.batch_alter_table("eval_runs") as batch:
        batch.add_column(sa.Column("shuffled", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("eval_runs") as batch:
        batch.drop_column("shuffled")
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("readme_html")
    op.drop_table("name_grants")
