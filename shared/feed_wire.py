"""The change feed's JSON shapes between hub and spawns (docs/coordination.md, "The change feed"). Pure.

Hub -> spawn, inside a Poll's first request:
  `feeds`    {wiki api URL: FeedDuty}  the wikis whose feed this node reads (one node per wiki)
  `changes`  [Nudge, ...]              pages of this node's sources that the feed says changed
  `followed` [wiki api URL, ...]       wikis whose feed is followed: their sources skip per-page revisits
Spawn -> hub, in a StatusReport:
  `feeds`    {wiki api URL: FeedReport} what this node's readers read and the hub has not acknowledged yet
"""
from __future__ import annotations

from dataclasses import dataclass

from shared.errors import ValidationError
from shared.wire_fields import required
from shared.wire_values import tenants_field

# What a changed page needs from its source:
HIDE = "hide"               # only remove the fields revision deletion hid (`hide`): no request to the wiki
REVISIONS = "revisions"     # read the history on from the resume point (new revisions, a move, a deletion)
VISIBILITY = "visibility"   # also read these revisions again (revision deletion): hidden fields leave the store
HISTORY = "history"         # compare the whole stored history with the wiki's now (restores, merges, imports):
#                             revisions appeared in the past
CHECK = "check"             # the feed cannot vouch for a span (a gap): every page of the wiki is checked
KINDS = (HIDE, REVISIONS, VISIBILITY, HISTORY, CHECK)
# what one page's kinds come to: each does what the ones before it do (every kind applies its `hide` first)
_RANK = {HIDE: -1, REVISIONS: 0, VISIBILITY: 1, HISTORY: 2}
HIDEABLE = ("content", "comment", "user")       # a revision's fields revision deletion can hide

# {revision id: fields the feed says an action hid}, sorted pairs so that a change stays hashable. The log
# entry is the wiki's word that they are hidden: the source removes them before asking the wiki anything.
Hides = tuple[tuple[int, tuple[str, ...]], ...]


def stronger(a: str, b: str | None) -> str:
    """Of two kinds for one page, the one that does what both ask."""
    return a if b is None or _RANK.get(a, 0) >= _RANK.get(b, 0) else b


def _rev_ids(body: object) -> tuple[int, ...]:
    ids = required(body, "rev_ids", list, optional=True) or []
    if not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids):
        raise ValidationError("'rev_ids' must be a list of revision ids", field="rev_ids")
    return tuple(ids)


def joined(*hides: Hides) -> Hides:
    """Several changes' hides as one: per revision, every field any of them hid. (A later action that shows a
    field again makes its source read the revision again, which writes it back.)"""
    fields: dict[int, set[str]] = {}
    for hide in hides:
        for rev_id, names in hide:
            fields.setdefault(rev_id, set()).update(names)
    return tuple((rev_id, tuple(sorted(names))) for rev_id, names in sorted(fields.items()) if names)


def _hides_to_wire(hide: Hides) -> dict:
    return {str(rev_id): list(names) for rev_id, names in hide}


def _hides(body: object) -> Hides:
    raw = required(body, "hide", dict, optional=True) or {}
    out = []
    for rev_id, names in raw.items():
        if not rev_id.isdigit() or int(rev_id) <= 0:
            raise ValidationError("'hide' keys must be revision ids", field="hide")
        if not isinstance(names, list) or not all(n in HIDEABLE for n in names):
            raise ValidationError(f"'hide' values must be lists of {', '.join(HIDEABLE)}", field="hide")
        out.append((int(rev_id), tuple(names)))
    return joined(tuple(out))


def _kind(body: object) -> str:
    kind = required(body, "kind", str)
    if kind not in KINDS:
        raise ValidationError(f"'kind' must be one of {', '.join(KINDS)}", field="kind")
    return kind


@dataclass(frozen=True)
class FeedDuty:
    """Read this wiki's feed on from `position` (a FeedPosition token; None: from the feed's newest entry)
    every `interval_s`, through the wiki's client for `identity`, in the freshness lane of `tenants`.
    `position` is also the hub's acknowledgement: what the reader reported up to it has been routed."""
    position: str | None
    interval_s: float
    identity: str | None = None
    tenants: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"position": self.position, "interval_s": self.interval_s, "identity": self.identity,
                "tenants": list(self.tenants)}

    @classmethod
    def from_dict(cls, body: dict) -> FeedDuty:
        interval = required(body, "interval_s", (int, float))
        if isinstance(interval, bool) or interval <= 0:
            raise ValidationError("'interval_s' must be positive", field="interval_s")
        return cls(position=required(body, "position", str, optional=True), interval_s=float(interval),
                   identity=required(body, "identity", str, optional=True), tenants=tenants_field(body))


@dataclass(frozen=True)
class FeedChange:
    """A page the feed says changed: its title as the wiki spells it (prefixed), what its source must do,
    and the feed entry it came from (`at`, a position token: the hub skips what it already routed).
    `rev_ids`: with VISIBILITY, the revisions to read again; `hide`: the fields revision deletion hid."""
    title: str
    kind: str
    at: str
    page_id: int = 0
    rev_ids: tuple[int, ...] = ()
    hide: Hides = ()

    def to_dict(self) -> dict:
        body: dict[str, object] = {"title": self.title, "kind": self.kind, "at": self.at, "page_id": self.page_id}
        if self.rev_ids:
            body["rev_ids"] = list(self.rev_ids)
        if self.hide:
            body["hide"] = _hides_to_wire(self.hide)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> FeedChange:
        page_id = required(body, "page_id", int, optional=True) or 0
        return cls(title=required(body, "title", str), kind=_kind(body), at=required(body, "at", str), page_id=page_id,
                   rev_ids=_rev_ids(body), hide=_hides(body))


@dataclass(frozen=True)
class FeedGap:
    """The feed no longer covered (start, end] (ISO timestamps): every page of the wiki needs a check."""
    start: str
    end: str | None

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end}

    @classmethod
    def from_dict(cls, body: dict) -> FeedGap:
        return cls(start=required(body, "start", str), end=required(body, "end", str, optional=True))


@dataclass(frozen=True)
class FeedReport:
    """A reader's account: the changes it read after `since` (the position the hub last acknowledged, as it
    received it) up to `position`; `covered_to` (ISO, the wiki's clock): nothing up to then is unread
    (`position`'s own time while entries are left); `gaps` found on the way; `error`: why the last read failed."""
    since: str | None
    position: str | None
    changes: tuple[FeedChange, ...] = ()
    covered_to: str | None = None
    gaps: tuple[FeedGap, ...] = ()
    error: str | None = None
    requests: int = 0           # feed requests since the reader started, for the hub's metrics

    def to_dict(self) -> dict:
        return {"since": self.since, "position": self.position, "changes": [c.to_dict() for c in self.changes],
                "covered_to": self.covered_to, "gaps": [g.to_dict() for g in self.gaps], "error": self.error,
                "requests": self.requests}

    @classmethod
    def from_dict(cls, body: dict) -> FeedReport:
        changes = tuple(FeedChange.from_dict(c) for c in required(body, "changes", list, optional=True) or [])
        gaps = tuple(FeedGap.from_dict(g) for g in required(body, "gaps", list, optional=True) or [])
        requests = required(body, "requests", int, optional=True) or 0
        return cls(since=required(body, "since", str, optional=True),
                   position=required(body, "position", str, optional=True), changes=changes,
                   covered_to=required(body, "covered_to", str, optional=True), gaps=gaps,
                   error=required(body, "error", str, optional=True), requests=requests)


@dataclass(frozen=True)
class Nudge:
    """Hub -> the node holding a page's sources: `key` is the page key (source_uuid of the wiki and the title
    the feed names, which is also what a subscription's source uuid or reported page key is); None with
    kind CHECK: every source of the wiki. `rev_ids`: with VISIBILITY, the revisions to read again; `hide`: the
    fields revision deletion hid, removed from the store before anything is read."""
    wiki: str
    kind: str
    key: str | None = None
    rev_ids: tuple[int, ...] = ()
    hide: Hides = ()

    def to_dict(self) -> dict:
        body: dict[str, object] = {"wiki": self.wiki, "kind": self.kind, "key": self.key}
        if self.rev_ids:
            body["rev_ids"] = list(self.rev_ids)
        if self.hide:
            body["hide"] = _hides_to_wire(self.hide)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> Nudge:
        kind = _kind(body)
        key = required(body, "key", str, optional=True)
        if key is None and kind != CHECK:
            raise ValidationError("'key' is required", field="key")
        return cls(wiki=required(body, "wiki", str), kind=kind, key=key, rev_ids=_rev_ids(body), hide=_hides(body))
