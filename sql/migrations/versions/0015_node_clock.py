"""`nodes.clock_offset_s`, `nodes.clock_error_s`: each node's wall clock against the hub's, read at its last
poll (blackwidow.upstream.clock_check). Upstream budget windows are safe only while every node's clock is
within BW_MAX_CLOCK_SKEW_S of the hub's; the admin API and the dashboard show what the hub measured.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""
import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("clock_offset_s", sa.Float(), nullable=True))
        batch.add_column(sa.Column("clock_error_s", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("clock_error_s")
        batch.drop_column("clock_offset_s")
