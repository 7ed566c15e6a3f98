"""`identity_windows.after_give_back`: a hold that starts where another node gave the slot back, planned in the
same allocation that cut that node's hold, so without the handover gap (docs/upstream.md, "Handovers between
ticks"). Stored so that the safety rule stays a check over every hold written.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""
import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("identity_windows") as batch:
        batch.add_column(sa.Column("after_give_back", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("identity_windows") as batch:
        batch.drop_column("after_give_back")
