"""`wiki_sets.census_last`, `wiki_sets.census_running`: a set's census, the proof shard by shard that its stored
history equals the wiki's (docs/dumps.md, "The census"), as its catch-up reader reported it: the last finished
one and the one running, each the report's JSON; `wiki_sets.census_interval_s`: the set's own interval between
censuses (None: the deployment's BW_CENSUS_INTERVAL_S; 0: none).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""
import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("wiki_sets") as batch:
        batch.add_column(sa.Column("census_last", sa.Text(), nullable=True))
        batch.add_column(sa.Column("census_running", sa.Text(), nullable=True))
        batch.add_column(sa.Column("census_interval_s", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("wiki_sets") as batch:
        batch.drop_column("census_interval_s")
        batch.drop_column("census_running")
        batch.drop_column("census_last")
