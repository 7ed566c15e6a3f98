"""Drop `ix_subscriptions_tenant_id`: the unique constraint on (tenant_id, source_uuid) already serves
lookups by tenant, and every index on `subscriptions` is written again each time a tick moves a
subscription (a node joining under modulo routing moves nearly all of them).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_subscriptions_tenant_id", table_name="subscriptions")


def downgrade() -> None:
    op.create_index("ix_subscriptions_tenant_id", "subscriptions", ["tenant_id"])
