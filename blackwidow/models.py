"""SQLAlchemy models of the hub's configuration store. Mirrors sql/migrations; no logic here."""
from datetime import datetime, timezone

from sqlalchemy import (BigInteger, Boolean, CheckConstraint, DateTime, Float, ForeignKey, Integer, MetaData,
                        String, Text, UniqueConstraint, Index, false)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# Named constraints, so that later migrations (batch mode on SQLite) can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True, nullable=False)
    quota: Mapped[int | None] = mapped_column(BigInteger, nullable=True)   # None = unlimited
    used: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # quota leases (docs/quotas.md): the sum of charges after the last tick, and the last time a copy
    # of its subscriptions may have started running without a lease (a quota set on an unlimited tenant)
    reserved: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    unleased_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # share of upstream slot-time against other tenants with demand on the same wiki (docs/upstream.md)
    weight: Mapped[float] = mapped_column(Float, CheckConstraint("weight > 0", name="weight_positive"),
                                          nullable=False, default=1.0, server_default="1.0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)


class Subscription(Base):
    __tablename__ = "subscriptions"
    __table_args__ = (
        UniqueConstraint("tenant_id", "source_uuid", name="uq_subscription_tenant_source"),
        Index("ix_subscriptions_state", "state"),
        # no index on node_id: a move rewrites it on every subscription (migration 0008)
        Index("ix_subscriptions_created_id", "created_at", "id"),   # stable pagination order
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # looked up by tenant through uq_subscription_tenant_source (its leading column): no index of its own
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"),
                                           nullable=False)
    wiki: Mapped[str] = mapped_column(String(2048), nullable=False)      # canonical api.php URL
    title: Mapped[str] = mapped_column(String(255), nullable=False)      # normalized title
    source_uuid: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    # the article a spawn resolved the title to (source uuid of the wiki's own title); routes when known
    page_key: Mapped[str | None] = mapped_column(String(36), nullable=True)
    quota: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    content: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    state: Mapped[str] = mapped_column(String(20), nullable=False, default="pending")
    revisions: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    last_rev_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # reported by its spawn: the stored history proven equal to the wiki's (False: differs; None: unknown)
    complete: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # reported by its spawn: caught up past every change the feed routed to it (None: unknown); while
    # settled the wiki feed's watermark holds for it, else `watermark`, the one it had when it last was
    settled: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    watermark: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    node_id: Mapped[str | None] = mapped_column(String(36), nullable=True)   # where it is assigned now
    # the category set that made it (blackwidow.store.members): it goes when the page leaves the category
    set_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)


class SubscriptionChange(Base):
    """A subscription the admin API created, changed or deleted, under the sequence number of its transaction
    (blackwidow.store.changes): between ticks the scheduler re-reads only these rows."""
    __tablename__ = "subscription_changes"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    subscription_id: Mapped[str] = mapped_column(String(36), primary_key=True)


class ChangeHead(Base):
    """The newest sequence number handed to a transaction that noted changes. Writers take it in turn (the row
    is locked until commit), so every number up to the committed head belongs to a committed transaction."""
    __tablename__ = "change_heads"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)


class Node(Base):
    __tablename__ = "nodes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)      # shared.hashing.node_id_for(url)
    url: Mapped[str] = mapped_column(String(2048), unique=True, nullable=False)
    state: Mapped[str] = mapped_column(String(20), nullable=False, default="live")   # live | dead
    boot_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    registered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)
    last_seen: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # last poll that may have carried leases: renewing lease holders were sent theirs then
    lease_sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # process restarts (boot_id changes) counted since restarts_since; a flapping node is quarantined
    restarts: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    restarts_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    quarantined_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # the node's wall clock less the hub's at its last answered poll, and how far off that may be (half the
    # round trip): blackwidow.upstream.clock_check
    clock_offset_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    clock_error_s: Mapped[float | None] = mapped_column(Float, nullable=True)


class Assignment(Base):
    """What the hub has sent (or must send) to which node; survives a hub restart."""
    __tablename__ = "assignments"

    subscription_id: Mapped[str] = mapped_column(String(36), ForeignKey("subscriptions.id", ondelete="CASCADE"),
                                                 primary_key=True)
    node_id: Mapped[str] = mapped_column(String(36), ForeignKey("nodes.id", ondelete="CASCADE"),
                                         nullable=False, index=True)
    acked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # consecutive re-sends of a subscription its node reported failed, and when the next may go
    failures: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    retry_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class SubscriptionLease(Base):
    """A leased subscription's lease state (blackwidow.quota.arithmetic.SubLease). No foreign key to the
    subscription: a deleted subscription's lease counts until no node may spend it."""
    __tablename__ = "leases"

    subscription_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"),
                                           nullable=False, index=True)
    gen: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    floor: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    floor_gen: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    seen: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)


class LeaseHolder(Base):
    """A node that may apply a lease of a subscription (blackwidow.quota.arithmetic.Holder). A renewing holder
    was sent its lease at its node's lease_sent_at; the others at sent_at."""
    __tablename__ = "lease_holders"

    subscription_id: Mapped[str] = mapped_column(String(36), ForeignKey("leases.subscription_id",
                                                                        ondelete="CASCADE"), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    gen: Mapped[int] = mapped_column(BigInteger, nullable=False)
    cap: Mapped[int] = mapped_column(BigInteger, nullable=False)
    held: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sent_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    renewing: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    acked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    confirmed: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    boot: Mapped[str | None] = mapped_column(String(64), nullable=True)   # "?": unknown process


class Reload(Base):
    """Recent hard/soft reloads, for operators and the dashboard."""
    __tablename__ = "reloads"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    kind: Mapped[str] = mapped_column(String(10), nullable=False)          # hard | soft
    reason: Mapped[str] = mapped_column(String(200), nullable=False)
    sends: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    drops: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)


class SchedulerLease(Base):
    """Single-scheduler guard on SQLite (PostgreSQL uses an advisory lock instead)."""
    __tablename__ = "scheduler_lease"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    holder: Mapped[str] = mapped_column(String(100), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class SchedulerEpoch(Base):
    """Fencing token of the acting scheduler: bumped by each new leader, checked by every write it makes."""
    __tablename__ = "scheduler_epoch"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    epoch: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0, server_default="0")
    holder: Mapped[str | None] = mapped_column(String(100), nullable=True)
    acquired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_tick_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # JSON of blackwidow.rebalance.Routing: the node sets modulo routing moves between, band by band
    routing: Mapped[str | None] = mapped_column(Text, nullable=True)


class Identity(Base):
    """What one wiki meters: its host plus the deployment's credential for it (docs/upstream.md). The
    credential is a name the spawns look up in their own credentials file, never the secret."""
    __tablename__ = "identities"
    __table_args__ = (
        CheckConstraint("in_flight > 0", name="in_flight_positive"),
        CheckConstraint("per_s > 0", name="per_s_positive"),
        CheckConstraint("per_min IS NULL OR per_min > 0", name="per_min_positive"),
    )

    id: Mapped[str] = mapped_column(String(255), primary_key=True)          # the wiki's host[:port]
    credential: Mapped[str | None] = mapped_column(String(64), nullable=True)
    in_flight: Mapped[int] = mapped_column(Integer, nullable=False)
    per_s: Mapped[float] = mapped_column(Float, nullable=False)
    per_min: Mapped[int | None] = mapped_column(Integer, nullable=True)
    slow_after_s: Mapped[float] = mapped_column(Float, nullable=False, default=1.0)
    slow_wait_s: Mapped[float] = mapped_column(Float, nullable=False, default=5.0)
    maxlag: Mapped[int] = mapped_column(Integer, nullable=False, default=5)
    # generation of the budgets sent for it: bumped whenever a window or a setting changes
    gen: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0, server_default="0")
    paused_until: Mapped[float | None] = mapped_column(Float, nullable=True)       # hub epoch seconds
    pause_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    auth_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    auth_error_node: Mapped[str | None] = mapped_column(String(36), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)


class IdentityWindow(Base):
    """Write-ahead record of one slot of an identity held by one node over [start_s, end_s) (hub epoch
    seconds). Rows of one slot never overlap, and rows of different nodes on a slot are at least the
    handover gap apart (none after a give-back: `after_give_back`), which is what makes the in-flight limit
    checkable. No foreign key to the node:
    a window counts until it ends, whatever became of its node."""
    __tablename__ = "identity_windows"

    identity_id: Mapped[str] = mapped_column(String(255), ForeignKey("identities.id", ondelete="CASCADE"),
                                             primary_key=True)
    slot: Mapped[int] = mapped_column(Integer, primary_key=True)
    start_s: Mapped[float] = mapped_column(Float, primary_key=True)
    end_s: Mapped[float] = mapped_column(Float, nullable=False)
    node_id: Mapped[str] = mapped_column(String(36), nullable=False)
    rate_per_s: Mapped[float] = mapped_column(Float, nullable=False)
    gen: Mapped[int] = mapped_column(BigInteger, nullable=False)      # the identity's gen when last written
    # starts where another node gave the slot back, cut in the same allocation: no handover gap before it
    after_give_back: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False,
                                                  server_default=false())


class WikiFeed(Base):
    """One wiki's change feed as the scheduler follows it (docs/coordination.md, "The change feed"): the
    position every change up to which was routed and delivered, and the watermark it proves."""
    __tablename__ = "wiki_feeds"

    wiki: Mapped[str] = mapped_column(String(2048), primary_key=True)     # canonical api.php URL
    position: Mapped[str | None] = mapped_column(String(40), nullable=True)   # "<YYYYmmddHHMMSS>|<rcid>"
    # the wiki's clock up to which no change is unread and every change read was delivered
    watermark: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reader: Mapped[str | None] = mapped_column(String(36), nullable=True)     # the node reading it
    reported_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    changes: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    gaps: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_gap: Mapped[str | None] = mapped_column(Text, nullable=True)       # "start/end", ISO
    # requests the reader spent on the feed since it took it, as of reported_at
    requests: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)


class WikiSet(Base):
    """A set subscription: a tenant's whole wiki, bootstrapped from the dump files it names (docs/dumps.md,
    "Bootstrapping through the hub")."""
    __tablename__ = "wiki_sets"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False,
                                           index=True)
    wiki: Mapped[str] = mapped_column(String(2048), nullable=False)      # canonical api.php URL
    kind: Mapped[str] = mapped_column(String(16), nullable=False)        # wiki | namespace
    # kind namespace: the namespace numbers it holds, "0|4" (MediaWiki's list form); None: every namespace
    namespaces: Mapped[str | None] = mapped_column(String(512), nullable=True)
    dbname: Mapped[str | None] = mapped_column(String(64), nullable=True)   # the dumps' <siteinfo><dbname>
    content: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    # files read at once: Wikimedia's dump servers allow a client two connections
    parallel: Mapped[int] = mapped_column(Integer, CheckConstraint("parallel > 0", name="parallel_positive"),
                                          nullable=False, default=2)
    # the catch-up after the dump (blackwidow.dump_plan): every revision from `dumped_at` on is read from the wiki
    dumped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    catchup_node: Mapped[str | None] = mapped_column(String(36), nullable=True)
    catchup_position: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    caught_up_to: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    catchup_revisions: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)    # earlier readers'
    catchup_current: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)      # the current reader's
    catchup_requests: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    catchup_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    catchup_reported_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # the census (docs/dumps.md): the last finished and the one running, as their reader reported them (JSON)
    census_last: Mapped[str | None] = mapped_column(Text, nullable=True)
    census_running: Mapped[str | None] = mapped_column(Text, nullable=True)
    census_interval_s: Mapped[int | None] = mapped_column(Integer, nullable=True)    # None: BW_CENSUS_INTERVAL_S
    # kind category (blackwidow.members_plan): the category, how deep its subcategories count, and its listing
    category: Mapped[str | None] = mapped_column(String(255), nullable=True)
    depth: Mapped[int | None] = mapped_column(Integer, nullable=True)
    members_node: Mapped[str | None] = mapped_column(String(36), nullable=True)      # the node listing it
    members_digest: Mapped[str | None] = mapped_column(String(32), nullable=True)    # the listing held whole
    members_receiving: Mapped[str | None] = mapped_column(String(32), nullable=True)  # the one coming in
    members_next_part: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    members_total: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0, server_default="0")
    members_read_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    members_requests: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0, server_default="0")
    members_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # the held listing is not yet turned into the set's subscriptions
    members_dirty: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)


class SetMember(Base):
    """A page of a category set as its latest listing names it, and the subscription that harvests it."""
    __tablename__ = "set_members"

    set_id: Mapped[str] = mapped_column(String(36), ForeignKey("wiki_sets.id", ondelete="CASCADE"), primary_key=True)
    page_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    ns: Mapped[int] = mapped_column(Integer, nullable=False)
    title: Mapped[str] = mapped_column(String(255), nullable=False)
    listing: Mapped[str] = mapped_column(String(32), nullable=False)        # the digest of the listing naming it
    # the set's own subscription, or the tenant's own one to the same page (None: not subscribed yet)
    subscription_id: Mapped[str | None] = mapped_column(String(36), nullable=True)


class DumpFile(Base):
    """One dump file of a set and how far its reading got (blackwidow.dump_plan): the resume point is kept here,
    so a file resumes on any node."""
    __tablename__ = "dump_files"
    __table_args__ = (UniqueConstraint("set_id", "position", name="uq_dump_files_set_position"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    set_id: Mapped[str] = mapped_column(String(36), ForeignKey("wiki_sets.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")
    node_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # the resume point: pages of the file durably written, the last one's id, the revisions they hold
    pages: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    last_page_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    revisions: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # then a long page partly written: its id and how many of its revisions
    part_page_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    part_revisions: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # the current run's figures, as its node last reported them
    bytes_read: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    bytes_total: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    revisions_read: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    revisions_per_s: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    bytes_per_s: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reported_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow,
                                                 onupdate=utcnow)
