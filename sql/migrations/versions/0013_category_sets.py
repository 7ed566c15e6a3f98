"""Category sets: `wiki_sets` gains the category, its depth and where its listing stands; `set_members` holds the
pages of the listing held whole, each with the subscription that harvests it; `subscriptions.set_id` names the set
that made a subscription, which goes when its page leaves the category (docs/sets.md).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_SET_COLUMNS = ("category", "depth", "members_node", "members_digest", "members_receiving", "members_next_part",
                "members_total", "members_read_at", "members_requests", "members_error", "members_dirty")


def upgrade() -> None:
    with op.batch_alter_table("wiki_sets") as batch:
        batch.add_column(sa.Column("category", sa.String(255), nullable=True))
        batch.add_column(sa.Column("depth", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("members_node", sa.String(36), nullable=True))
        batch.add_column(sa.Column("members_digest", sa.String(32), nullable=True))
        batch.add_column(sa.Column("members_receiving", sa.String(32), nullable=True))
        batch.add_column(sa.Column("members_next_part", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("members_total", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("members_read_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("members_requests", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("members_error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("members_dirty", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "set_members",
        sa.Column("set_id", sa.String(36), nullable=False),
        sa.Column("page_id", sa.BigInteger(), nullable=False),
        sa.Column("ns", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("listing", sa.String(32), nullable=False),
        sa.Column("subscription_id", sa.String(36), nullable=True),
        sa.ForeignKeyConstraint(["set_id"], ["wiki_sets.id"], name="fk_set_members_set_id_wiki_sets",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("set_id", "page_id", name="pk_set_members"),
    )
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("set_id", sa.String(36), nullable=True))
        batch.create_index("ix_subscriptions_set_id", ["set_id"])


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_index("ix_subscriptions_set_id")
        batch.drop_column("set_id")
    op.drop_table("set_members")
    with op.batch_alter_table("wiki_sets") as batch:
        for name in reversed(_SET_COLUMNS):
            batch.drop_column(name)
