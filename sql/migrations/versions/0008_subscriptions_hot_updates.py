"""Let the tick's updates of `subscriptions` stay on their page without touching an index.

A placement or a modulo move changes `node_id` on every subscription, and the tick's counters
(`revisions`, `last_rev_id`) change all the time. PostgreSQL rewrites every index of a row it updates
unless no indexed column changed and the page has room for the new version (a HOT update). So:

* `ix_subscriptions_node` goes: it served only the admin API's `?node=` filter and the per-node counts,
  which read the table instead (a few hundred ms at a million rows) — not a write on every move;
* on PostgreSQL the table keeps 20 % of each page free for updated rows (fillfactor 80).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_subscriptions_node", table_name="subscriptions")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE subscriptions SET (fillfactor = 80)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE subscriptions RESET (fillfactor)")
    op.create_index("ix_subscriptions_node", "subscriptions", ["node_id"])
