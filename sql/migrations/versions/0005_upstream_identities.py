"""Upstream identities (docs/upstream.md):

* `identities`: one row per wiki host the deployment harvests, with the limits that wiki meters for
  the deployment's credential (a credential *name*, never a secret), the budgets' generation, the pause
  any node reported (429, Retry-After, maxlag) and the last authentication error.
* `identity_windows`: the write-ahead record of the slot windows handed out to nodes, one row per slot
  and hold, so that a new leader never grants a slot an earlier leader's window still covers.
* `tenants.weight`: a tenant's share of slot-time against the other tenants with demand.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""
from alembic import op
import sqlalchemy as sa

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identities",
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("credential", sa.String(64), nullable=True),
        sa.Column("in_flight", sa.Integer(), nullable=False),
        sa.Column("per_s", sa.Float(), nullable=False),
        sa.Column("per_min", sa.Integer(), nullable=True),
        sa.Column("slow_after_s", sa.Float(), nullable=False),
        sa.Column("slow_wait_s", sa.Float(), nullable=False),
        sa.Column("maxlag", sa.Integer(), nullable=False),
        sa.Column("gen", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("paused_until", sa.Float(), nullable=True),
        sa.Column("pause_reason", sa.String(500), nullable=True),
        sa.Column("auth_error", sa.String(500), nullable=True),
        sa.Column("auth_error_node", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("in_flight > 0", name=op.f("ck_identities_in_flight_positive")),
        sa.CheckConstraint("per_s > 0", name=op.f("ck_identities_per_s_positive")),
        sa.CheckConstraint("per_min IS NULL OR per_min > 0", name=op.f("ck_identities_per_min_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identities")),
    )
    op.create_table(
        "identity_windows",
        sa.Column("identity_id", sa.String(255), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("node_id", sa.String(36), nullable=False),
        sa.Column("rate_per_s", sa.Float(), nullable=False),
        sa.Column("gen", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["identity_id"], ["identities.id"], ondelete="CASCADE",
                                name=op.f("fk_identity_windows_identity_id_identities")),
        sa.PrimaryKeyConstraint("identity_id", "slot", "start_s", name=op.f("pk_identity_windows")),
    )
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("weight", sa.Float(), nullable=False, server_default="1.0"))
        batch.create_check_constraint("weight_positive", "weight > 0")


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_constraint("weight_positive", type_="check")
        batch.drop_column("weight")
    op.drop_table("identity_windows")
    op.drop_table("identities")
