"""Follow each wiki's change feed: where it stands, and each subscription's freshness watermark.

`wiki_feeds` holds one row per followed wiki: the feed position up to which every change was routed to the
nodes fetching those pages and delivered, the watermark that proves (the wiki's clock up to which nothing is
unread), the node reading it, and its gaps. `subscriptions.settled` is what its spawn reports (caught up past
every change routed to it); `subscriptions.watermark` keeps the watermark it had when it last was settled.
Nullable columns without defaults: added without rewriting the table.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("subscriptions", sa.Column("settled", sa.Boolean(), nullable=True))
    op.add_column("subscriptions", sa.Column("watermark", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "wiki_feeds",
        sa.Column("wiki", sa.String(2048), nullable=False),
        sa.Column("position", sa.String(40), nullable=True),
        sa.Column("watermark", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reader", sa.String(36), nullable=True),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("changes", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("gaps", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_gap", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("wiki", name="pk_wiki_feeds"),
    )


def downgrade() -> None:
    op.drop_table("wiki_feeds")
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("watermark")
        batch.drop_column("settled")
