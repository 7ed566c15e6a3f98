"""The change log of subscriptions (blackwidow.store.changes): the scheduler keeps its snapshot of a
million subscriptions between ticks and re-reads only the rows the admin API created, changed or deleted.

* `subscription_changes`: (seq, subscription_id), one row per subscription a transaction wrote.
* `change_heads`: the newest seq handed out; writers take it in turn, so a reader that sees head H has
  every change numbered up to H committed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "subscription_changes",
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("subscription_id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("seq", "subscription_id", name=op.f("pk_subscription_changes")),
    )
    op.create_table(
        "change_heads",
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_change_heads")),
    )


def downgrade() -> None:
    op.drop_table("change_heads")
    op.drop_table("subscription_changes")
