"""Quota leases: lease state per leased subscription and per holding node, tenants' reserved sum and
unleased_at, nodes' lease_sent_at (docs/quotas.md).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _big(name: str) -> sa.Column:
    return sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("reserved", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("unleased_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("lease_sent_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "leases",
        sa.Column("subscription_id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        _big("gen"), _big("floor"), _big("floor_gen"), _big("seen"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name=op.f("fk_leases_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("subscription_id", name=op.f("pk_leases")),
    )
    op.create_index(op.f("ix_leases_tenant_id"), "leases", ["tenant_id"])
    op.create_table(
        "lease_holders",
        sa.Column("subscription_id", sa.String(36), nullable=False),
        sa.Column("node_id", sa.String(36), nullable=False),
        sa.Column("gen", sa.BigInteger(), nullable=False),
        sa.Column("cap", sa.BigInteger(), nullable=False),
        sa.Column("held", sa.BigInteger(), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewing", sa.Boolean(), nullable=False),
        sa.Column("acked", sa.Boolean(), nullable=False),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.Column("boot", sa.String(64), nullable=True),
        sa.ForeignKeyConstraint(["subscription_id"], ["leases.subscription_id"], ondelete="CASCADE",
                                name=op.f("fk_lease_holders_subscription_id_leases")),
        sa.PrimaryKeyConstraint("subscription_id", "node_id", name=op.f("pk_lease_holders")),
    )


def downgrade() -> None:
    op.drop_table("lease_holders")
    op.drop_index(op.f("ix_leases_tenant_id"), table_name="leases")
    op.drop_table("leases")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("lease_sent_at")
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("unleased_at")
        batch.drop_column("reserved")
