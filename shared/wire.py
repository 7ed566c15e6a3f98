"""JSON shapes exchanged between hub and spawns, with strict parsing. Pure: no I/O.

Hub -> spawn:  PUT /v1/subscriptions/{id}  body = SubscriptionSpec
               POST /v1/status             body = Poll (heartbeat, assigned ids)
Spawn -> hub:  POST /v1/nodes              body = Registration -> RegistrationAck
Spawn reply to a poll: StatusReport.
Secrets never appear in these shapes; they travel only in the Authorization header.
"""
from dataclasses import asdict, dataclass, field

from shared.errors import ValidationError

STATES = ("pending", "assigned", "running", "waiting", "limit_reached", "failed", "disabled")


def _req(body: dict, name: str, kind, *, optional=False, default=None):
    if not isinstance(body, dict):
        raise ValidationError("body must be a JSON object", field=None)
    if name not in body or body[name] is None:
        if optional:
            return default
        raise ValidationError(f"'{name}' is required", field=name)
    value = body[name]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ValidationError(f"'{name}' must be {getattr(kind, '__name__', kind)}", field=name)
    return value


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

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "SubscriptionSpec":
        quota = _req(body, "quota", int, optional=True)
        if quota is not None and quota < 0:
            raise ValidationError("'quota' must be >= 0", field="quota")
        return cls(
            id=_req(body, "id", str),
            source_uuid=_req(body, "source_uuid", str),
            tenant_id=_req(body, "tenant_id", str),
            wiki=_req(body, "wiki", str),
            title=_req(body, "title", str),
            content=_req(body, "content", bool, optional=True, default=False),
            quota=quota,
        )


@dataclass(frozen=True)
class SubscriptionStatus:
    id: str
    state: str
    revisions: int = 0
    last_rev_id: int | None = None
    last_error: str | None = None
    spec: dict | None = None      # the spec the spawn runs, so the hub can diff without guessing

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "SubscriptionStatus":
        state = _req(body, "state", str)
        if state not in STATES:
            raise ValidationError(f"'state' must be one of {', '.join(STATES)}", field="state")
        return cls(
            id=_req(body, "id", str), state=state,
            revisions=_req(body, "revisions", int, optional=True, default=0),
            last_rev_id=_req(body, "last_rev_id", int, optional=True),
            last_error=_req(body, "last_error", str, optional=True),
            spec=_req(body, "spec", dict, optional=True),
        )


@dataclass(frozen=True)
class StatusReport:
    node_id: str | None
    boot_id: str                   # changes when the spawn process restarts
    attached: bool
    subscriptions: tuple[SubscriptionStatus, ...] = ()
    sources: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["subscriptions"] = [s.to_dict() for s in self.subscriptions]
        return d

    @classmethod
    def from_dict(cls, body: dict) -> "StatusReport":
        subs = _req(body, "subscriptions", list, optional=True, default=[])
        return cls(
            node_id=_req(body, "node_id", str, optional=True),
            boot_id=_req(body, "boot_id", str),
            attached=_req(body, "attached", bool),
            subscriptions=tuple(SubscriptionStatus.from_dict(s) for s in subs),
            sources=_req(body, "sources", int, optional=True, default=0),
        )


@dataclass(frozen=True)
class Poll:
    """The hub's heartbeat. `assigned` lists every subscription id the hub wants on this node;
    anything else the spawn holds becomes an orphan candidate."""
    node_id: str
    assigned: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"node_id": self.node_id, "assigned": list(self.assigned)}

    @classmethod
    def from_dict(cls, body: dict) -> "Poll":
        assigned = _req(body, "assigned", list, optional=True, default=[])
        if not all(isinstance(a, str) for a in assigned):
            raise ValidationError("'assigned' must be a list of ids", field="assigned")
        return cls(node_id=_req(body, "node_id", str), assigned=tuple(assigned))


@dataclass(frozen=True)
class Registration:
    url: str

    @classmethod
    def from_dict(cls, body: dict) -> "Registration":
        url = _req(body, "url", str)
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
        return cls(id=_req(body, "id", str),
                   poll_interval_s=float(_req(body, "poll_interval_s", (int, float))),
                   detach_after_s=float(_req(body, "detach_after_s", (int, float))),
                   orphan_after_s=float(_req(body, "orphan_after_s", (int, float))))
