"""The requests a wiki's feed reader spent: `wiki_feeds.requests`, as its reader last reported them.

Counted since the current reader took the feed (a new reader starts at 0), for GET /v1/feeds. Not null with a
server default: existing rows read 0 until their reader's next report is written.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("wiki_feeds", sa.Column("requests", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("wiki_feeds") as batch:
        batch.drop_column("requests")
