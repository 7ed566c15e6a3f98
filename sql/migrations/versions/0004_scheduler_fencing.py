"""Fencing and fault bookkeeping for the scheduler (docs/coordination.md):

* `scheduler_epoch`: one row per lock name. A scheduler that becomes leader increments `epoch`; every
  write it makes is conditional on the epoch still being its own (a deposed leader writes nothing).
  `last_tick_at` is when the leader last finished a tick, for the hub's /health.
* `nodes.restarts`, `nodes.restarts_since`, `nodes.quarantined_until`: a node whose process keeps
  restarting is evicted and refused registration for a while, instead of keeping its share.
* `assignments.failures`, `assignments.retry_at`: a subscription its node reports failed is re-sent
  with exponential backoff, not every 30 s forever.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduler_epoch",
        sa.Column("name", sa.String(50), primary_key=True),
        sa.Column("epoch", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("holder", sa.String(100), nullable=True),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_tick_at", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("restarts", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("restarts_since", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("quarantined_until", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("assignments") as batch:
        batch.add_column(sa.Column("failures", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.drop_column("retry_at")
        batch.drop_column("failures")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("quarantined_until")
        batch.drop_column("restarts_since")
        batch.drop_column("restarts")
    op.drop_table("scheduler_epoch")
