"""The catalogue change counter: bumped by every change a JSON API answer shows, so workers key their
cached answers on it (``hub_server.changes``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_HUB_STATE = sa.table("hub_state", sa.column("key", sa.String), sa.column("value", sa.BigInteger))


def upgrade() -> None:
    op.bulk_insert(_HUB_STATE, [{"key": "catalogue_generation", "value": 0}])


def downgrade() -> None:
    op.execute(_HUB_STATE.delete().where(_HUB_STATE.c.key == "catalogue_generation"))
