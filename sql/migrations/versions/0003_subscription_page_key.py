"""Subscriptions' page_key: the article a spawn resolved the title to (a redirect's target), as a
source uuid; routing prefers it to the source uuid (docs/coordination.md).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""
from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("page_key", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("page_key")
