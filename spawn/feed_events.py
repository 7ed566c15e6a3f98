"""A wiki's change feed as typed events: one `list=recentchanges` item (formatversion=2, rcprop
ids|title|timestamp|loginfo) in, one event or None out. Pure: no I/O.

What MediaWiki 1.39 puts in the feed, checked on the local writable wiki
(tests/unit/spawn/recentchanges_writable_wiki.json records it):
* `new` and `edit` items are revisions; a page's first one is `new`.
* Log items name the page they act on (`pageid`, `title`). Several add a revision without an edit
  item: a move (on the moved page), an import (a null revision "N revisions imported"), a protection.
  Their `revid` is that revision; 0 when none was added.
* A move keeps the page id; `logparams.suppressredirect` says whether the old title was left without a
  redirect. The redirect left behind is a new page whose revision has no item of its own.
* Deleting a page removes its `new`/`edit` items from the feed; the `delete` log item stays. An
  undeletion (`delete/restore`) brings the page back under its old id with its old revisions.
* Revision deletion is `delete/revision` with the revision ids and the visibility before and after.
  Suppression (`suppress/revision`, and a page deleted with suppression: `suppress/delete`) never reaches
  recentchanges, not even for a suppressor: it is only in `list=logevents` (the same parameters), whose
  entries parse(from_logevent(entry)) reads.
* A history merge is logged on the source page only, naming the destination by title and the merge point.
* Imports from a file (`import/upload`) or another wiki (`import/interwiki`) add revisions with old
  timestamps; an import with importDump.php leaves no trace at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from shared.feed_wire import HIDEABLE


class MalformedItem(ValueError):
    """An item lacks a field its kind needs, or has one of the wrong type."""


@dataclass(frozen=True)
class Change:
    """What every event has: the feed entry (rcid, timestamp) and the page it is about."""
    rcid: int
    timestamp: datetime
    page_id: int
    ns: int
    title: str


@dataclass(frozen=True)
class NewRevision(Change):
    """A revision added to the page: an edit, or a log action's revision (`log`: "move/move", ...)."""
    rev_id: int
    parent_id: int
    log: str | None = None


@dataclass(frozen=True)
class PageCreated(NewRevision):
    """The page's first revision: a new page id to route."""


@dataclass(frozen=True)
class PageMoved(Change):
    """Same page id, new title; `title` is the old one. `rev_id`: the revision the move added."""
    new_ns: int
    new_title: str
    redirect_left: bool
    rev_id: int


@dataclass(frozen=True)
class PageDeleted(Change):
    """The page and its revisions were archived (`delete/delete`), or a redirect deleted by a move
    over it (`delete/delete_redir`)."""


@dataclass(frozen=True)
class PageRestored(Change):
    """An undeletion: archived revisions came back with their old ids and timestamps."""
    revisions: int | None


@dataclass(frozen=True)
class VisibilityChanged(Change):
    """Revision deletion (`suppressed` False) or suppression of `rev_ids`: the fields hidden before and
    after the action, among HIDEABLE."""
    rev_ids: tuple[int, ...]
    hidden_before: frozenset[str]
    hidden_after: frozenset[str]
    suppressed: bool

    @property
    def newly_hidden(self) -> frozenset[str]:
        return self.hidden_after - self.hidden_before

    @property
    def unhidden(self) -> frozenset[str]:
        return self.hidden_before - self.hidden_after


@dataclass(frozen=True)
class HistoryMerged(Change):
    """Revisions of the source page (page_id, title) up to `merge_point` moved to the destination page."""
    dest_ns: int
    dest_title: str
    merge_point: datetime


@dataclass(frozen=True)
class Imported(Change):
    """Revisions with old timestamps added by an import (`source`: "upload" or "interwiki")."""
    source: str
    revisions: int | None
    rev_id: int


Event = NewRevision | PageMoved | PageDeleted | PageRestored | VisibilityChanged | HistoryMerged | Imported


def parse(item: dict) -> Event | None:
    """The event an item stands for; None for what changes no page's history (tag management, user
    rights, patrol, a log item whose action is hidden). Raises MalformedItem."""
    kind = item.get("type")
    if kind in ("new", "edit"):
        return _revision(item)
    if kind != "log" or item.get("actionhidden"):
        return None
    action = (str(item.get("logtype")), str(item.get("logaction")))
    params = item.get("logparams", {})
    if not isinstance(params, dict):
        params = {}         # PHP writes an empty array as a JSON list: no parameters
    rule = _LOG_RULES.get(action)
    if rule is not None:
        return rule(item, params)
    rev_id = _int(item, "revid", 0)
    if rev_id:              # protection and the like: a null revision on the page
        return NewRevision(**_change(item), rev_id=rev_id, parent_id=_int(item, "old_revid", 0),
                           log=f"{action[0]}/{action[1]}")
    return None


def from_logevent(entry: dict) -> dict:
    """A `list=logevents` entry (leprop ids|title|type|timestamp|details) in the shape of a recentchanges
    log item, without an rcid: the suppression log, which recentchanges never shows, reads like the rest."""
    item = {k: v for k, v in entry.items() if k not in ("type", "action", "params")}
    return {**item, "type": "log", "logtype": entry.get("type"), "logaction": entry.get("action"),
            "logparams": entry.get("params", {})}


def _revision(item: dict) -> NewRevision:
    kind = PageCreated if item["type"] == "new" else NewRevision
    return kind(**_change(item), rev_id=_int(item, "revid"), parent_id=_int(item, "old_revid", 0))


def _moved(item: dict, params: dict) -> PageMoved:
    return PageMoved(**_change(item), new_ns=_int(params, "target_ns"), new_title=_str(params, "target_title"),
                     redirect_left=not params.get("suppressredirect", False), rev_id=_int(item, "revid", 0))


def _deleted(item: dict, params: dict) -> PageDeleted:
    return PageDeleted(**_change(item))


def _restored(item: dict, params: dict) -> PageRestored:
    count = params.get("count")
    revisions = count.get("revisions") if isinstance(count, dict) else None
    return PageRestored(**_change(item), revisions=revisions if isinstance(revisions, int) else None)


def _visibility(item: dict, params: dict) -> VisibilityChanged | None:
    if params.get("type") != "revision":     # the same actions hide fields of log entries, not revisions
        return None
    ids = params.get("ids")
    if not isinstance(ids, list) or not ids:
        raise MalformedItem(f"rcid {item.get('rcid')}: revision deletion without 'ids'")
    return VisibilityChanged(**_change(item), rev_ids=tuple(_as_int(i, "ids") for i in ids),
                             hidden_before=_hidden(params.get("old")), hidden_after=_hidden(params.get("new")),
                             suppressed=item.get("logtype") == "suppress")


def _merged(item: dict, params: dict) -> HistoryMerged:
    return HistoryMerged(**_change(item), dest_ns=_int(params, "dest_ns"), dest_title=_str(params, "dest_title"),
                         merge_point=_timestamp(_str(params, "mergepoint")))


def _imported(item: dict, params: dict) -> Imported:
    count = params.get("count")
    return Imported(**_change(item), source=str(item.get("logaction")),
                    revisions=count if isinstance(count, int) else None, rev_id=_int(item, "revid", 0))


_LOG_RULES: dict[tuple[str, str], Callable[[dict, dict], Event | None]] = {
    ("move", "move"): _moved, ("move", "move_redir"): _moved,
    ("delete", "delete"): _deleted, ("delete", "delete_redir"): _deleted, ("suppress", "delete"): _deleted,
    ("delete", "restore"): _restored,
    ("delete", "revision"): _visibility, ("suppress", "revision"): _visibility,
    ("merge", "merge"): _merged,
    ("import", "upload"): _imported, ("import", "interwiki"): _imported,
}


def _hidden(bits: object) -> frozenset[str]:
    """The hidden fields of a visibility (`{"bitmask", "content", "comment", "user", "restricted"}`)."""
    if not isinstance(bits, dict):
        return frozenset()
    return frozenset(f for f in HIDEABLE if bits.get(f) is True)


def _change(item: dict) -> dict:
    # logevents items have no rcid: 0 there
    return {"rcid": _int(item, "rcid", 0), "timestamp": _timestamp(_str(item, "timestamp")),
            "page_id": _int(item, "pageid"), "ns": _int(item, "ns"), "title": _str(item, "title")}


def _timestamp(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        raise MalformedItem(f"not a timestamp: {value!r}") from None


def _int(item: dict, key: str, default: int | None = None) -> int:
    if key not in item and default is not None:
        return default
    return _as_int(item.get(key), key)


def _as_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedItem(f"{key!r} is not an integer: {value!r}")
    return value


def _str(item: dict, key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise MalformedItem(f"{key!r} is not a string: {value!r}")
    return value
