"""Show whether a subscription's stored history was proven equal to the wiki's.

Its spawn compares the page's stored revision ids with the wiki's once the history is caught up, writes what
is missing (revisions that appeared in the past: an undeletion, a history merge, an import with old
timestamps) and reports `complete`; the hub copies it here. Nullable: unknown until a spawn checked, and for
rows written before this column existed. A nullable column without a default is added without rewriting the
table.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("subscriptions", sa.Column("complete", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("complete")
