"""Set subscriptions bootstrapped from dump files: `wiki_sets` (a tenant's whole wiki or some of its namespaces, with where
its catch-up from the dump's date stands) and `dump_files` (each file with its resume point and its node's latest figures), for the
scheduler's dump duties (docs/dumps.md).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wiki_sets",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("wiki", sa.String(2048), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("namespaces", sa.String(512), nullable=True),
        sa.Column("dbname", sa.String(64), nullable=True),
        sa.Column("content", sa.Boolean(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("parallel", sa.Integer(), nullable=False),
        sa.Column("dumped_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("catchup_node", sa.String(36), nullable=True),
        sa.Column("catchup_position", sa.DateTime(timezone=True), nullable=True),
        sa.Column("caught_up_to", sa.DateTime(timezone=True), nullable=True),
        sa.Column("catchup_revisions", sa.BigInteger(), nullable=False),
        sa.Column("catchup_current", sa.BigInteger(), nullable=False),
        sa.Column("catchup_requests", sa.BigInteger(), nullable=False),
        sa.Column("catchup_error", sa.Text(), nullable=True),
        sa.Column("catchup_reported_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("parallel > 0", name="ck_wiki_sets_parallel_positive"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name="fk_wiki_sets_tenant_id_tenants",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_wiki_sets"),
    )
    op.create_index("ix_wiki_sets_tenant_id", "wiki_sets", ["tenant_id"])
    op.create_table(
        "dump_files",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("set_id", sa.String(36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("node_id", sa.String(36), nullable=True),
        sa.Column("pages", sa.BigInteger(), nullable=False),
        sa.Column("last_page_id", sa.BigInteger(), nullable=True),
        sa.Column("revisions", sa.BigInteger(), nullable=False),
        sa.Column("bytes_read", sa.BigInteger(), nullable=False),
        sa.Column("bytes_total", sa.BigInteger(), nullable=True),
        sa.Column("revisions_read", sa.BigInteger(), nullable=False),
        sa.Column("revisions_per_s", sa.Float(), nullable=False),
        sa.Column("bytes_per_s", sa.Float(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["set_id"], ["wiki_sets.id"], name="fk_dump_files_set_id_wiki_sets",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_dump_files"),
        sa.UniqueConstraint("set_id", "position", name="uq_dump_files_set_position"),
    )


def downgrade() -> None:
    op.drop_table("dump_files")
    op.drop_index("ix_wiki_sets_tenant_id", table_name="wiki_sets")
    op.drop_table("wiki_sets")
