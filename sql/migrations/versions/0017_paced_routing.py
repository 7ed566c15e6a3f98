"""`scheduler_epoch.routing`: the layers paced modulo routing moves through (blackwidow.rebalance), as JSON.
A node joining or leaving under modulo re-routes nearly every page; the scheduler moves them band by band
over many ticks, and a scheduler that takes over mid-way goes on from these layers instead of moving
everything left at once.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("scheduler_epoch") as batch:
        batch.add_column(sa.Column("routing", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scheduler_epoch") as batch:
        batch.drop_column("routing")
