"""Eval results as records: eval runs (linked to a version and its content hash) and their rollouts.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _fk(table: str, col: str, ref: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [col], [f"{ref}.id"], name=op.f(f"fk_{table}_{col}_{ref}"), ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("run_key", sa.String(64), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("sampling_args", sa.JSON(), nullable=False),
        sa.Column("env_args", sa.JSON(), nullable=False),
        sa.Column("sdk_version", sa.String(64), nullable=False),
        sa.Column("visibility", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("num_examples", sa.Integer(), nullable=False),
        sa.Column("rollouts_per_example", sa.Integer(), nullable=False),
        _ts("started_at", nullable=True),
        _ts("finished_at", nullable=True),
        sa.Column("uploader_id", sa.Integer(), nullable=True),
        _ts("created_at"),
        _ts("finalized_at", nullable=True),
        sa.Column("rollout_count", sa.Integer(), nullable=False),
        sa.Column("scored_count", sa.Integer(), nullable=False),
        sa.Column("avg_reward", sa.Float(), nullable=True),
        sa.Column("std_reward", sa.Float(), nullable=True),
        sa.Column("reward_ci95", sa.Float(), nullable=True),
        sa.Column("pass_at_k", sa.JSON(), nullable=False),
        sa.Column("avg_metrics", sa.JSON(), nullable=False),
        sa.Column("error_counts", sa.JSON(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        _fk("eval_runs", "environment_id", "environments", "CASCADE"),
        _fk("eval_runs", "version_id", "versions", "CASCADE"),
        _fk("eval_runs", "uploader_id", "users", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
        sa.UniqueConstraint("environment_id", "run_key", name=op.f("uq_eval_runs_environment_id")),
    )
    op.create_index(op.f("ix_eval_runs_version_id"), "eval_runs", ["version_id"])
    op.create_index(op.f("ix_eval_runs_model"), "eval_runs", ["model"])
    op.create_table(
        "eval_rollouts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("example_id", sa.Integer(), nullable=False),
        sa.Column("rollout_index", sa.Integer(), nullable=False),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("error_category", sa.String(16), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        _fk("eval_rollouts", "run_id", "eval_runs", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_rollouts")),
        sa.UniqueConstraint("run_id", "example_id", "rollout_index", name=op.f("uq_eval_rollouts_run_id")),
    )


def downgrade() -> None:
    op.drop_table("eval_rollouts")
    op.drop_index(op.f("ix_eval_runs_model"), "eval_runs")
    op.drop_index(op.f("ix_eval_runs_version_id"), "eval_runs")
    op.drop_table("eval_runs")
