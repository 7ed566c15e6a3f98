"""Initial schema: tenants, subscriptions, nodes, assignments, reloads, scheduler lease.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("boot_id", sa.String(64), nullable=True),
        _ts("registered_at"),
        _ts("last_seen", nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nodes")),
        sa.UniqueConstraint("url", name=op.f("uq_nodes_url")),
    )
    op.create_table(
        "reloads",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("sends", sa.Integer(), nullable=False),
        sa.Column("drops", sa.Integer(), nullable=False),
        _ts("at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reloads")),
    )
    op.create_table(
        "scheduler_lease",
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("holder", sa.String(100), nullable=False),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_scheduler_lease")),
    )
    op.create_table(
        "tenants",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("quota", sa.BigInteger(), nullable=True),
        sa.Column("used", sa.BigInteger(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("name", name=op.f("uq_tenants_name")),
    )
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("wiki", sa.String(2048), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("source_uuid", sa.String(36), nullable=False),
        sa.Column("quota", sa.BigInteger(), nullable=True),
        sa.Column("content", sa.Boolean(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("revisions", sa.BigInteger(), nullable=False),
        sa.Column("last_rev_id", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("node_id", sa.String(36), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name=op.f("fk_subscriptions_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
        sa.UniqueConstraint("tenant_id", "source_uuid", name="uq_subscription_tenant_source"),
    )
    op.create_index("ix_subscriptions_node", "subscriptions", ["node_id"])
    op.create_index("ix_subscriptions_state", "subscriptions", ["state"])
    op.create_index("ix_subscriptions_created_id", "subscriptions", ["created_at", "id"])
    op.create_index(op.f("ix_subscriptions_source_uuid"), "subscriptions", ["source_uuid"])
    op.create_index(op.f("ix_subscriptions_tenant_id"), "subscriptions", ["tenant_id"])
    op.create_table(
        "assignments",
        sa.Column("subscription_id", sa.String(36), nullable=False),
        sa.Column("node_id", sa.String(36), nullable=False),
        sa.Column("acked", sa.Boolean(), nullable=False),
        _ts("sent_at", nullable=True),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], ondelete="CASCADE",
                                name=op.f("fk_assignments_node_id_nodes")),
        sa.ForeignKeyConstraint(["subscription_id"], ["subscriptions.id"], ondelete="CASCADE",
                                name=op.f("fk_assignments_subscription_id_subscriptions")),
        sa.PrimaryKeyConstraint("subscription_id", name=op.f("pk_assignments")),
    )
    op.create_index(op.f("ix_assignments_node_id"), "assignments", ["node_id"])


def downgrade() -> None:
    op.drop_table("assignments")
    op.drop_table("subscriptions")
    op.drop_table("tenants")
    op.drop_table("scheduler_lease")
    op.drop_table("reloads")
    op.drop_table("nodes")
