"""JSON shapes exchanged between hub and spawns, with strict parsing. Pure: no I/O.

Hub -> spawn:  POST /v1/subscriptions      body = SendBatch (drops and puts) -> SendBatchAck
               POST /v1/status             body = Poll (heartbeat, assigned ids, maybe one page of them)
Spawn -> hub:  POST /v1/nodes              body = Registration -> RegistrationAck
Spawn reply to a poll: StatusReport.
Quota leases (docs/quotas.md) ride on the Poll (Lease) and come back in each SubscriptionStatus
(LeaseStatus); there is no other quota traffic.
Secrets never appear in these shapes; they travel only in the Authorization header.
"""
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping

from shared.errors import BlackWidowError, PayloadTooLarge, ValidationError
from shared.census_wire import ShardDuty, ShardReport
from shared.dump_wire import CatchUpDuty, CatchUpReport, DumpDuty, DumpReport
from shared.members_wire import MembersDuty, MembersReport
from shared.feed_wire import FeedDuty, FeedReport, Nudge
from shared.states import SubState
from shared.wire_fields import keyed, listed, required, strings

STATES = tuple(s.value for s in SubState)
# Drops plus puts in one SendBatch; the spawn refuses more (413). The hub sends at most half of it.
MAX_BATCH_ITEMS = 1000


@dataclass(frozen=True)
class SubscriptionSpec:
    """What a spawn runs for one subscription. Equal specs => sending again changes nothing."""
    id: str
    source_uuid: str
    tenant_id: str
    wiki: str            # the wiki's api.php URL
    title: str
    content: bool = False
    quota: int | None = None    # max revisions for this subscription; None = unlimited
    leased: bool = False        # its tenant has a quota: harvest only within a valid lease from the hub
    # the wiki identity (host + credential) whose upstream Budget paces it; None = legacy per-host pacing
    identity: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "SubscriptionSpec":
        quota = required(body, "quota", int, optional=True)
        if quota is not None and quota < 0:
            raise ValidationError("'quota' must be >= 0", field="quota")
        return cls(
            id=required(body, "id", str),
            source_uuid=required(body, "source_uuid", str),
            tenant_id=required(body, "tenant_id", str),
            wiki=required(body, "wiki", str),
            title=required(body, "title", str),
            content=required(body, "content", bool, optional=True, default=False),
            quota=quota,
            leased=required(body, "leased", bool, optional=True, default=False),
            identity=required(body, "identity", str, optional=True),
        )


@dataclass(frozen=True)
class PutAck:
    """The spawn's answer to one put of a SendBatch; changed=False means it already ran this spec."""
    id: str
    state: str
    changed: bool

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "PutAck":
        return cls(id=required(body, "id", str), state=required(body, "state", str),
                   changed=required(body, "changed", bool))


@dataclass(frozen=True)
class DropAck:
    """The spawn's answer to one drop; removed=False means it did not hold the id (still a success)."""
    id: str
    removed: bool

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "DropAck":
        return cls(id=required(body, "id", str), removed=required(body, "removed", bool))


@dataclass(frozen=True)
class ItemError:
    """One item of a SendBatch the spawn refused ({id, error: {code, message, field}}); the other
    items were applied. `id` is None when the item carried no string id."""
    id: str | None
    code: str
    message: str
    field: str | None = None

    @classmethod
    def of(cls, item_id: str | None, exc: BlackWidowError) -> "ItemError":
        return cls(id=item_id, code=exc.code, message=exc.message, field=exc.field)

    def to_dict(self) -> dict:
        return {"id": self.id, "error": {"code": self.code, "message": self.message, "field": self.field}}

    @classmethod
    def from_dict(cls, body: dict) -> "ItemError":
        error = required(body, "error", dict)
        return cls(id=required(body, "id", str, optional=True), code=required(error, "code", str),
                   message=required(error, "message", str), field=required(error, "field", str, optional=True))


@dataclass(frozen=True)
class SendBatch:
    """Hub -> spawn: POST /v1/subscriptions, many sends in one request. The spawn applies every drop,
    then every put, each idempotently (an unknown drop and an equal put change nothing), and answers a
    SendBatchAck. Puts stay spec bodies here: the spawn parses each on its own, so a bad spec fails
    only itself. At most MAX_BATCH_ITEMS items (413 naming the list that crosses it)."""
    drops: tuple[str, ...] = ()
    puts: tuple[dict, ...] = ()

    @classmethod
    def of(cls, drops: Iterable[str] = (), specs: Iterable[SubscriptionSpec] = ()) -> "SendBatch":
        return cls(drops=tuple(drops), puts=tuple(s.to_dict() for s in specs))

    def to_dict(self) -> dict:
        return {"drops": list(self.drops), "puts": list(self.puts)}

    @classmethod
    def from_dict(cls, body: dict) -> "SendBatch":
        drops = required(body, "drops", list, optional=True, default=[])
        puts = required(body, "puts", list, optional=True, default=[])
        if not all(isinstance(d, str) for d in drops):
            raise ValidationError("'drops' must be a list of ids", field="drops")
        if len(drops) + len(puts) > MAX_BATCH_ITEMS:
            raise PayloadTooLarge(f"a batch holds at most {MAX_BATCH_ITEMS} drops and puts",
                                  field="drops" if len(drops) > MAX_BATCH_ITEMS else "puts")
        return cls(drops=tuple(drops), puts=tuple(puts))


@dataclass(frozen=True)
class SendBatchAck:
    """Spawn -> hub: one answer per item of the SendBatch, in its order (drops, then puts)."""
    drops: tuple[DropAck | ItemError, ...] = ()
    puts: tuple[PutAck | ItemError, ...] = ()

    def to_dict(self) -> dict:
        return {"drops": [a.to_dict() for a in self.drops], "puts": [a.to_dict() for a in self.puts]}

    @classmethod
    def from_dict(cls, body: dict) -> "SendBatchAck":
        def items(name: str, ack) -> tuple:
            try:
                return tuple(ItemError.from_dict(item) if isinstance(item, dict) and "error" in item
                             else ack.from_dict(item) for item in required(body, name, list))
            except ValidationError as exc:
                raise ValidationError(f"{name}: {exc.message}", field=name) from None
        return cls(drops=items("drops", DropAck), puts=items("puts", PutAck))


def _count(body: dict, name: str, *, minimum: int = 0) -> int:
    value = required(body, name, int)
    if value < minimum:
        raise ValidationError(f"'{name}' must be >= {minimum}", field=name)
    return value


@dataclass(frozen=True)
class Lease:
    """Hub -> spawn, inside a Poll: the subscription may hold up to `cap` revisions delivered, for
    `ttl_s` seconds after the spawn received it and never at or after `expires_at` (hub clock, epoch
    seconds; a poll that arrives late does not extend the lease). A higher `gen` replaces a lower one; an
    equal gen only renews (same cap)."""
    cap: int
    ttl_s: float
    gen: int
    expires_at: float | None = None

    def to_dict(self) -> dict:
        body = asdict(self)
        if self.expires_at is None:
            del body["expires_at"]
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "Lease":
        ttl = float(required(body, "ttl_s", (int, float)))
        if not ttl > 0:
            raise ValidationError("'ttl_s' must be > 0", field="ttl_s")
        expires_at = required(body, "expires_at", (int, float), optional=True)
        return cls(cap=_count(body, "cap"), ttl_s=ttl, gen=_count(body, "gen", minimum=1),
                   expires_at=None if expires_at is None else float(expires_at))


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """Spawn -> hub: the lease a subscriber applies. `synced`: its count was checked against the
    revision store after this generation arrived (so it includes every other writer's revisions).
    `caught_up`: its source has fetched the page's whole history and waits for new edits."""
    gen: int
    cap: int
    expires_in_s: float          # <= 0: expired, nothing more is spent
    synced: bool = False
    caught_up: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "LeaseStatus":
        return cls(gen=_count(body, "gen", minimum=1), cap=_count(body, "cap"),
                   expires_in_s=float(required(body, "expires_in_s", (int, float))),
                   synced=required(body, "synced", bool, optional=True, default=False),
                   caught_up=required(body, "caught_up", bool, optional=True, default=False))


@dataclass(frozen=True, slots=True)
class SubscriptionStatus:
    id: str
    state: str
    revisions: int = 0
    last_rev_id: int | None = None
    last_error: str | None = None
    spec: dict | None = None      # the spec the spawn runs, so the hub can diff without guessing
    lease: LeaseStatus | None = None   # leased specs only; None = no lease received yet
    # the article its source resolved the title to, as a source uuid (the wiki's own title after
    # normalisation and redirects); None until resolved. The hub routes on it (docs/coordination.md).
    page_key: str | None = None
    # its page's stored history was compared with the wiki's by revision id and found equal (after writing
    # what was missing); False: it differs; None (absent from older spawns' reports): not checked yet
    complete: bool | None = None
    # its source has the history up to now and no change the hub routed to it is waiting: the feed's
    # watermark holds for it (None: an older spawn, or no source)
    settled: bool | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "SubscriptionStatus":
        # a state this version does not know (a newer spawn in a rolling upgrade) is kept as it is: the hub
        # ignores it rather than failing the node's whole poll
        state = required(body, "state", str)
        return cls(
            id=required(body, "id", str), state=state,
            revisions=required(body, "revisions", int, optional=True, default=0),
            last_rev_id=required(body, "last_rev_id", int, optional=True),
            last_error=required(body, "last_error", str, optional=True),
            spec=required(body, "spec", dict, optional=True),
            lease=_optional_lease(body),
            page_key=required(body, "page_key", str, optional=True),
            complete=required(body, "complete", bool, optional=True),
            settled=required(body, "settled", bool, optional=True),
        )


def _optional_lease(body: dict) -> LeaseStatus | None:
    lease = required(body, "lease", dict, optional=True)
    try:
        return None if lease is None else LeaseStatus.from_dict(lease)
    except ValidationError as exc:
        raise ValidationError(f"lease: {exc.message}", field="lease") from None


def _number(body: dict, name: str, *, positive: bool = False) -> float:
    """A required number >= 0 (> 0 with `positive`)."""
    value = required(body, name, (int, float))
    if isinstance(value, bool) or value < 0 or positive and not value > 0:
        raise ValidationError(f"'{name}' must be {'> 0' if positive else '>= 0'}", field=name)
    return float(value)


def _number_or(body: dict, name: str, default: float | None, *, positive: bool = False) -> float | None:
    return default if body.get(name) is None else _number(body, name, positive=positive)


def _count_or(body: dict, name: str, default: int | None, *, minimum: int = 0) -> int | None:
    return default if body.get(name) is None else _count(body, name, minimum=minimum)


def _amounts(body: dict, name: str, kind, cast) -> dict:
    """An optional {str: amount >= 0} object; amounts must be `kind` (never a bool)."""
    out = {}
    for key, value in required(body, name, dict, optional=True, default={}).items():
        if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
            raise ValidationError(f"'{name}.{key}' must be a number >= 0", field=name)
        out[key] = cast(value)
    return out


DEFAULT_BUDGET_CYCLE_S = 900.0     # BW_BUDGET_CYCLE_S's default: shares are balanced over this span


@dataclass(frozen=True)
class Window:
    """A slot window of an identity's upstream budget, in hub wall-clock epoch seconds: during
    [start, end) the node may have at most `slots` requests in flight and start at most `rate_per_s`
    requests per second, and every request it starts must end before `end`."""
    start: float
    end: float
    slots: int
    rate_per_s: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "Window":
        start, end = _number(body, "start"), _number(body, "end")
        if not end > start:
            raise ValidationError("'end' must be after 'start'", field="end")
        return cls(start=start, end=end, slots=_count(body, "slots", minimum=1),
                   rate_per_s=_number(body, "rate_per_s", positive=True))


@dataclass(frozen=True)
class Budget:
    """Hub -> spawn, inside a Poll: this node's share of one wiki identity's upstream limits. A higher
    `gen` replaces a lower one. `credential` is the *name* of a credential in the spawn's own
    credentials file, never a secret. `weights` are tenant weights for the backfill lane."""
    gen: int
    wiki_host: str
    credential: str | None = None
    windows: tuple[Window, ...] = ()
    slow_after_s: float = 1.0
    slow_wait_s: float = 5.0
    maxlag: int = 5
    paused_until: float | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    # this node may log in with the credential now: the login's first request is anonymous at the wiki's
    # edge (no session yet), so the hub lets one node of the deployment do it at a time
    login: bool = False
    # a node elsewhere waits with freshness demand: give these windows back as soon as nothing is in flight
    give_back: bool = False
    # backfill requests the other nodes started per tenant over the last `cycle_s`, as they reported them:
    # the node adds its own and serves the tenant furthest behind per weight, cluster-wide
    served: Mapping[str, float] = field(default_factory=dict)
    cycle_s: float = DEFAULT_BUDGET_CYCLE_S

    def to_dict(self) -> dict:
        body = asdict(self)
        body["windows"] = [w.to_dict() for w in self.windows]
        body["weights"], body["served"] = dict(self.weights), dict(self.served)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "Budget":
        windows = []
        for item in required(body, "windows", list, optional=True, default=[]):
            try:
                windows.append(Window.from_dict(item))
            except ValidationError as exc:
                raise ValidationError(f"windows: {exc.message}", field="windows") from None
        if len(windows) > 2:
            raise ValidationError("'windows' holds at most 2 windows", field="windows")
        if any(b.start < a.end for a, b in zip(windows, windows[1:])):
            raise ValidationError("'windows' must be sorted and must not overlap", field="windows")
        return cls(gen=_count(body, "gen", minimum=1), wiki_host=required(body, "wiki_host", str),
                   credential=required(body, "credential", str, optional=True), windows=tuple(windows),
                   slow_after_s=_number_or(body, "slow_after_s", 1.0, positive=True) or 1.0,
                   slow_wait_s=_number_or(body, "slow_wait_s", 5.0) or 0.0,
                   maxlag=_count_or(body, "maxlag", 5) or 0,
                   paused_until=_number_or(body, "paused_until", None),
                   weights=_amounts(body, "weights", (int, float), float),
                   login=required(body, "login", bool, optional=True, default=False),
                   give_back=required(body, "give_back", bool, optional=True, default=False),
                   served=_amounts(body, "served", (int, float), float),
                   cycle_s=_number_or(body, "cycle_s", DEFAULT_BUDGET_CYCLE_S, positive=True)
                   or DEFAULT_BUDGET_CYCLE_S)


@dataclass(frozen=True)
class IdentityUse:
    """Spawn -> hub, per identity: the newest Budget gen applied, lane demand per tenant (sources
    waiting for a slot or with a request in flight), counters since process start, backfill requests
    started per tenant over the last Budget.cycle_s, a pause this node saw (429, Retry-After, maxlag;
    local wall clock) and the wiki's reason when it refused the credentials."""
    gen: int | None = None
    fresh: Mapping[str, int] = field(default_factory=dict)
    backfill: Mapping[str, int] = field(default_factory=dict)
    requests: int = 0
    throttled: int = 0
    busy_s: float = 0.0
    paused_until: float | None = None
    pause_reason: str | None = None
    auth_error: str | None = None
    needs_login: bool = False       # a source waits for this node's session with the credential
    # the node gave back its windows of every Budget gen up to this one: it had nothing to ask and starts
    # no request under them, so the hub may cut its holds and hand the slot time on
    released_gen: int | None = None
    served: Mapping[str, float] = field(default_factory=dict)
    following: bool = False         # a feed reader of the identity runs here and keeps its windows between reads

    def to_dict(self) -> dict:
        body = asdict(self)
        body["fresh"], body["backfill"], body["served"] = dict(self.fresh), dict(self.backfill), dict(self.served)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "IdentityUse":
        return cls(gen=_count_or(body, "gen", None, minimum=1),
                   fresh=_amounts(body, "fresh", int, int),
                   backfill=_amounts(body, "backfill", int, int),
                   requests=_count_or(body, "requests", 0) or 0,
                   throttled=_count_or(body, "throttled", 0) or 0,
                   busy_s=_number_or(body, "busy_s", 0.0) or 0.0,
                   paused_until=_number_or(body, "paused_until", None),
                   pause_reason=required(body, "pause_reason", str, optional=True),
                   auth_error=required(body, "auth_error", str, optional=True),
                   needs_login=required(body, "needs_login", bool, optional=True, default=False),
                   released_gen=_count_or(body, "released_gen", None, minimum=1),
                   served=_amounts(body, "served", (int, float), float),
                   following=required(body, "following", bool, optional=True, default=False))


@dataclass(frozen=True)
class StatusReport:
    node_id: str | None
    boot_id: str                   # changes when the spawn process restarts
    attached: bool
    subscriptions: tuple[SubscriptionStatus, ...] = ()
    sources: int = 0
    identities: Mapping[str, IdentityUse] = field(default_factory=dict)   # {identity id: use}
    # items of the report that did not parse ("index: reason"); they are skipped, the rest of the poll stands
    rejected: tuple[str, ...] = ()
    # a bounded report (the poll asked for a ReportPage) that stopped early: the last id it holds; the hub
    # asks again from there. None: nothing after these (or an unbounded report of everything).
    next: str | None = None
    # this report's token, for the next poll's ReportPage.since (None: a spawn that answers no deltas)
    token: str | None = None
    # True: `subscriptions` holds only the statuses that changed since the poll's `since`, and `removed` the
    # ids the node no longer holds; the rest is as that report said (docs/coordination.md, "Bounded polls")
    delta: bool = False
    removed: tuple[str, ...] = ()
    # what this node's change feed readers read and the hub has not acknowledged (shared.feed_wire)
    feeds: Mapping[str, FeedReport] = field(default_factory=dict)
    # how far the dump files this node was given got (shared.dump_wire), on a report's first page
    dumps: Mapping[str, DumpReport] = field(default_factory=dict)
    catch_up: Mapping[str, CatchUpReport] = field(default_factory=dict)     # {set id: report}, first page too
    # the category listings this node reads (shared.members_wire), first page too
    members: Mapping[str, MembersReport] = field(default_factory=dict)     # {set id: report}
    # the census shards this node proves (shared.census_wire), first page too
    census: tuple[ShardReport, ...] = ()
    # the node's wall clock (epoch seconds) while it built this report: the hub checks the node's clock
    # against its own with it (blackwidow.upstream.clock_check); None: a spawn that does not say
    clock: float | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["subscriptions"] = [s.to_dict() for s in self.subscriptions]
        d.pop("rejected")
        d.pop("identities")
        d.pop("feeds")
        d.pop("dumps")
        d.pop("catch_up")
        d.pop("members")
        d.pop("census")
        if self.identities:      # absent when the node holds no identity-paced subscription
            d["identities"] = {key: use.to_dict() for key, use in self.identities.items()}
        if self.feeds:           # absent when the node reads no feed
            d["feeds"] = {wiki: report.to_dict() for wiki, report in self.feeds.items()}
        if self.dumps:           # absent when the node reads no dump file
            d["dumps"] = {file_id: report.to_dict() for file_id, report in self.dumps.items()}
        if self.catch_up:
            d["catch_up"] = {set_id: report.to_dict() for set_id, report in self.catch_up.items()}
        if self.members:
            d["members"] = {set_id: report.to_dict() for set_id, report in self.members.items()}
        if self.census:
            d["census"] = [report.to_dict() for report in self.census]
        for name in ("next", "token", "clock"):
            if d[name] is None:
                d.pop(name)
        if not self.delta:
            d.pop("delta")
            d.pop("removed")
        else:
            d["removed"] = list(self.removed)
        return d

    @classmethod
    def from_dict(cls, body: dict) -> "StatusReport":
        subs, rejected = [], []
        for index, item in enumerate(required(body, "subscriptions", list, optional=True, default=[])):
            try:
                subs.append(SubscriptionStatus.from_dict(item))
            except ValidationError as exc:
                rejected.append(f"subscriptions[{index}]: {exc.message}")
        return cls(
            node_id=required(body, "node_id", str, optional=True),
            boot_id=required(body, "boot_id", str),
            attached=required(body, "attached", bool),
            subscriptions=tuple(subs),
            rejected=tuple(rejected),
            sources=required(body, "sources", int, optional=True, default=0),
            identities=keyed(body, "identities", IdentityUse.from_dict),
            next=required(body, "next", str, optional=True),
            token=required(body, "token", str, optional=True),
            delta=required(body, "delta", bool, optional=True, default=False),
            removed=tuple(strings(body, "removed")),
            feeds=keyed(body, "feeds", FeedReport.from_dict),
            dumps=keyed(body, "dumps", DumpReport.from_dict),
            catch_up=keyed(body, "catch_up", CatchUpReport.from_dict),
            members=keyed(body, "members", MembersReport.from_dict),
            census=listed(body, "census", ShardReport.from_dict),
            clock=_number_or(body, "clock", None),
        )


@dataclass(frozen=True)
class PollPage:
    """The Poll's `assigned` is page `page` (0-based) of `pages` of round `round`: together the pages
    of one round are the hub's complete list for the node (docs/coordination.md, "Bounded polls")."""
    round: str
    page: int
    pages: int

    @classmethod
    def from_dict(cls, body: dict) -> "PollPage":
        page, pages = _count(body, "page"), _count(body, "pages", minimum=1)
        if page >= pages:
            raise ValidationError("'page' must be < 'pages'", field="assigned")
        return cls(round=required(body, "round", str), page=page, pages=pages)


@dataclass(frozen=True)
class ReportPage:
    """Hub -> spawn, inside a Poll: answer with at most `limit` statuses, those with ids after `after`
    in sorted order (None: from the first), and say where the next page starts (StatusReport.next).
    `since`: the token of the last report the hub received whole from this node; a spawn that issued it
    may answer with what changed since (StatusReport.delta) instead of everything."""
    after: str | None
    limit: int
    since: str | None = None

    def to_dict(self) -> dict:
        body = asdict(self)
        if self.since is None:
            body.pop("since")
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "ReportPage":
        return cls(after=required(body, "after", str, optional=True), limit=_count(body, "limit", minimum=1),
                   since=required(body, "since", str, optional=True))


@dataclass(frozen=True)
class Poll:
    """The hub's heartbeat. `assigned` lists every subscription id the hub wants on this node (or, with
    `page`, one page of that list); anything else the spawn holds becomes an orphan candidate once it
    has the whole list. `leases` renews or changes the quota lease of leased subscriptions
    ({subscription id: Lease}). `budgets` carries this node's upstream budget per wiki identity
    ({identity id: Budget}). `report` bounds the StatusReport the spawn answers (None: everything).
    A paged `assigned` travels as an object, which a spawn that does not know pages refuses (422)
    rather than take one page for the whole list."""
    node_id: str
    assigned: tuple[str, ...] = field(default_factory=tuple)
    leases: Mapping[str, Lease] = field(default_factory=dict)
    budgets: Mapping[str, Budget] = field(default_factory=dict)     # {identity id: Budget}
    page: PollPage | None = None
    report: ReportPage | None = None
    # the change feed (shared.feed_wire), on a poll's first request only
    feeds: Mapping[str, FeedDuty] = field(default_factory=dict)     # {wiki: the feed this node reads}
    changes: tuple[Nudge, ...] = ()
    followed: tuple[str, ...] = ()
    # the dump files this node reads (shared.dump_wire), on a poll's first request only
    dumps: tuple[DumpDuty, ...] = ()
    catch_up: tuple[CatchUpDuty, ...] = ()
    members: tuple[MembersDuty, ...] = ()       # the category listings it reads (shared.members_wire)
    census: tuple[ShardDuty, ...] = ()          # the census shards it proves (shared.census_wire)

    def to_dict(self) -> dict:
        body: dict = {"node_id": self.node_id, "assigned": list(self.assigned)}
        if self.page is not None:
            body["assigned"] = {"ids": list(self.assigned), **asdict(self.page)}
        if self.leases:          # absent when no assigned subscription is leased
            body["leases"] = {sub_id: lease.to_dict() for sub_id, lease in self.leases.items()}
        if self.budgets:         # absent when the node has no upstream budget
            body["budgets"] = {key: budget.to_dict() for key, budget in self.budgets.items()}
        if self.report is not None:
            body["report"] = self.report.to_dict()
        if self.feeds:
            body["feeds"] = {wiki: duty.to_dict() for wiki, duty in self.feeds.items()}
        if self.changes:
            body["changes"] = [n.to_dict() for n in self.changes]
        if self.followed:
            body["followed"] = list(self.followed)
        if self.dumps:
            body["dumps"] = [duty.to_dict() for duty in self.dumps]
        if self.catch_up:
            body["catch_up"] = [duty.to_dict() for duty in self.catch_up]
        if self.members:
            body["members"] = [duty.to_dict() for duty in self.members]
        if self.census:
            body["census"] = [duty.to_dict() for duty in self.census]
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "Poll":
        assigned = required(body, "assigned", (list, dict), optional=True, default=[])
        page = None
        if isinstance(assigned, dict):
            page = PollPage.from_dict(assigned)
            assigned = required(assigned, "ids", list)
        if not all(isinstance(a, str) for a in assigned):
            raise ValidationError("'assigned' must be a list of ids", field="assigned")
        report = required(body, "report", dict, optional=True)
        leases = {}
        for sub_id, lease in required(body, "leases", dict, optional=True, default={}).items():
            try:
                leases[sub_id] = Lease.from_dict(lease)
            except ValidationError as exc:
                raise ValidationError(f"leases.{sub_id}: {exc.message}", field="leases") from None
        return cls(node_id=required(body, "node_id", str), assigned=tuple(assigned), leases=leases,
                   budgets=keyed(body, "budgets", Budget.from_dict), page=page,
                   report=None if report is None else ReportPage.from_dict(report),
                   feeds=keyed(body, "feeds", FeedDuty.from_dict),
                   changes=listed(body, "changes", Nudge.from_dict),
                   followed=tuple(strings(body, "followed")),
                   dumps=listed(body, "dumps", DumpDuty.from_dict),
                   catch_up=listed(body, "catch_up", CatchUpDuty.from_dict),
                   members=listed(body, "members", MembersDuty.from_dict),
                   census=listed(body, "census", ShardDuty.from_dict))


@dataclass(frozen=True)
class Registration:
    url: str

    @classmethod
    def from_dict(cls, body: dict) -> "Registration":
        url = required(body, "url", str)
        if not url.startswith(("http://", "https://")):
            raise ValidationError("'url' must be an http(s) URL", field="url")
        return cls(url=url.rstrip("/"))


@dataclass(frozen=True)
class RegistrationAck:
    id: str
    poll_interval_s: float
    detach_after_s: float
    orphan_after_s: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "RegistrationAck":
        return cls(id=required(body, "id", str),
                   poll_interval_s=float(required(body, "poll_interval_s", (int, float))),
                   detach_after_s=float(required(body, "detach_after_s", (int, float))),
                   orphan_after_s=float(required(body, "orphan_after_s", (int, float))))
