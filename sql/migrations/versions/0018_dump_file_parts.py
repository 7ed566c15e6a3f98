"""`dump_files.part_page_id`, `dump_files.part_revisions`: a resume point inside a long page. A dump walk hands a
long page's history over in parts (some pages have a million revisions), and a file that resumes on another node
skips the parts already written instead of writing the page again from its first revision.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dump_files") as batch:
        batch.add_column(sa.Column("part_page_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("part_revisions", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("dump_files") as batch:
        batch.drop_column("part_revisions")
        batch.drop_column("part_page_id")
