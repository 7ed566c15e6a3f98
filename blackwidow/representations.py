"""API output shapes of the store's rows. Pure: the one place that decides what clients see."""
from datetime import datetime
from typing import Iterable, Mapping

from blackwidow import census_plan
from blackwidow.models import Reload, Subscription
from blackwidow.dump_plan import set_state
from blackwidow.members_plan import set_state as category_state
from blackwidow.store.dashboard import DashboardData
from blackwidow.store.dumps import FileView, SetView
from blackwidow.store.feeds import FeedView
from blackwidow.store.nodes import NodeLoad
from blackwidow.store.pagination import as_utc
from blackwidow.store.tenants import TenantUsage
from blackwidow.upstream.clock_check import ClockReading, certainly_off, reference
from shared.wire import STATES


def timestamp(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).isoformat().replace("+00:00", "Z")


def tenant(usage: TenantUsage) -> dict:
    t = usage.tenant
    used = int(usage.used)
    # reserved by quota leases (sum of charges after the last tick) and not delivered yet
    leased = max(0, (t.reserved or 0) - used) if t.quota is not None else 0
    return {"id": t.id, "name": t.name, "quota": t.quota, "weight": t.weight, "used": used, "leased": leased,
            "subscriptions": int(usage.subscriptions),
            "created_at": timestamp(t.created_at), "updated_at": timestamp(t.updated_at)}


def subscription(s: Subscription, watermarks: Mapping[str, datetime | None] | None = None) -> dict:
    """`watermarks`: {wiki: its feed's watermark} (blackwidow.store.feeds), which a settled subscription shows."""
    mark = (watermarks or {}).get(s.wiki) if s.settled else s.watermark
    return {"id": s.id, "tenant_id": s.tenant_id, "wiki": s.wiki, "title": s.title,
            "source_uuid": s.source_uuid, "page_key": s.page_key, "quota": s.quota, "content": s.content,
            "enabled": s.enabled,
            "state": s.state, "node": s.node_id, "revisions": s.revisions, "last_rev_id": s.last_rev_id,
            "last_error": s.last_error, "complete": s.complete, "settled": s.settled, "watermark": timestamp(mark),
            "created_at": timestamp(s.created_at),
            "updated_at": timestamp(s.updated_at)}


def feed(f: FeedView, *, now: datetime) -> dict:
    lag = None if f.watermark is None else round(max(0.0, (now - as_utc(f.watermark)).total_seconds()), 1)
    return {"wiki": f.wiki, "position": f.position, "watermark": timestamp(f.watermark), "lag_s": lag,
            "reader": f.reader, "reported_at": timestamp(f.reported_at), "error": f.error, "changes": f.changes,
            "gaps": f.gaps, "last_gap": f.last_gap, "subscriptions": f.subscriptions, "requests": f.requests}


def wiki_set(s: SetView, *, census_every_s: float) -> dict:
    """A set subscription with its bootstrap's progress, in total and per file, and its catch-up; a category set
    with its listing and its members' subscriptions."""
    c, listing = s.catch_up, s.listing
    census_settings = census_plan.Settings(0, census_every_s)
    if listing is not None:
        state = category_state((f.state for f in s.files), s.enabled, listing.held is not None)
    else:
        state = set_state((f.state for f in s.files), s.enabled, s.dumped_at,
                          c.caught_up_to if c is not None else None)
    body = {"id": s.id, "kind": s.kind, "tenant_id": s.tenant_id, "wiki": s.wiki,
            "namespaces": None if s.namespaces is None else list(s.namespaces), "dbname": s.dbname,
            "content": s.content, "enabled": s.enabled, "parallel": s.parallel, "state": state,
            "dumped_at": timestamp(s.dumped_at), "created_at": timestamp(s.created_at),
            "progress": dump_progress(s.files), "files": [dump_file(f) for f in s.files],
            "catch_up": None if c is None else {
                "node": c.node, "position": timestamp(c.position), "caught_up_to": timestamp(c.caught_up_to),
                "revisions_written": c.revisions + c.current, "requests": c.requests, "error": c.error,
                "reported_at": timestamp(c.reported_at)},
            "census_interval_s": s.census_interval_s,
            "census": None if c is None else census_plan.summary(
                c.census_last, c.census_running, census_plan.interval(c.census_interval_s, census_settings)),
            "category": None, "depth": None, "members": None}
    if listing is not None:
        counts = dict(s.members or {})
        body.update({"category": listing.category, "depth": listing.depth, "members": {
            "node": listing.node, "listed": listing.total, "read_at": timestamp(listing.read_at),
            "requests": listing.requests, "error": listing.error,
            "pages": counts.pop("members", 0), "subscribed": counts.pop("subscribed", 0),
            "complete": counts.pop("complete", 0),
            "states": {name.removeprefix("state_"): n for name, n in sorted(counts.items())}}})
    return body


def dump_progress(files: tuple[FileView, ...]) -> dict:
    """Totals over a set's files. `eta_s`: the bytes left at the current rate of the files being read, once
    every file's size is known (a file's size is learnt when it is first opened); null before."""
    reading = [f for f in files if f.state == "reading"]
    rate = sum(f.bytes_per_s for f in reading)
    sized = all(f.bytes_total is not None for f in files)
    left = sum(max((f.bytes_total or 0) - (f.bytes_read if f.state == "reading" else 0), 0)
               for f in files if f.state not in ("done",))
    return {"files": len(files), "files_done": sum(f.state == "done" for f in files),
            "files_failed": sum(f.state == "failed" for f in files), "files_reading": len(reading),
            "bytes_read": sum(f.bytes_read for f in files),
            "bytes_total": sum(f.bytes_total or 0 for f in files) if sized else None,
            "revisions_read": sum(f.revisions_read for f in files),
            "revisions_written": sum(f.revisions for f in files), "pages_written": sum(f.pages for f in files),
            "revisions_per_s": round(sum(f.revisions_per_s for f in reading), 1),
            "bytes_per_s": round(rate, 1),
            "eta_s": _eta(left, rate) if sized else None}


def _eta(bytes_left: int, bytes_per_s: float) -> float | None:
    if bytes_left == 0:
        return 0.0
    return round(bytes_left / bytes_per_s, 1) if bytes_per_s > 0 else None


def dump_file(f: FileView) -> dict:
    return {"id": f.id, "position": f.position, "url": f.url, "state": f.state, "node": f.node_id,
            "pages_written": f.pages, "revisions_written": f.revisions, "bytes_read": f.bytes_read,
            "bytes_total": f.bytes_total, "revisions_read": f.revisions_read,
            "revisions_per_s": round(f.revisions_per_s, 1), "bytes_per_s": round(f.bytes_per_s, 1),
            "error": f.error, "attempts": f.attempts, "retry_at": timestamp(f.retry_at),
            "reported_at": timestamp(f.reported_at), "finished_at": timestamp(f.finished_at)}


def node(load: NodeLoad, skew_s: float, consensus_s: float = 0.0) -> dict:
    """`consensus_s`: clock_consensus() of the nodes listed with it."""
    n = load.node
    return {"id": n.id, "url": n.url, "state": n.state, "last_seen": timestamp(n.last_seen),
            "registered_at": timestamp(n.registered_at), "consecutive_failures": n.consecutive_failures,
            "subscriptions": int(load.subscriptions),
            "clock": clock(n.clock_offset_s, n.clock_error_s, skew_s, consensus_s)}


def clock_consensus(loads: Iterable[NodeLoad]) -> float:
    """What the scheduler judges nodes' clocks against (clock_check.reference), from the live nodes' last
    readings."""
    return reference(load.node.clock_offset_s for load in loads
                     if load.node.state == "live" and load.node.clock_offset_s is not None)


def clock(offset_s: float | None, error_s: float | None, skew_s: float, consensus_s: float) -> dict | None:
    """The node's wall clock less the hub's at its last poll, within +- error_s; `trusted`: upstream budgets
    give it slot holds (not certainly beyond BW_MAX_CLOCK_SKEW_S of the nodes' consensus). None: not measured
    (no poll answered yet, or a spawn that does not say its clock)."""
    if offset_s is None or error_s is None:
        return None
    reading = ClockReading(offset_s - error_s, offset_s + error_s)
    return {"offset_s": round(offset_s, 3), "error_s": round(error_s, 3), "consensus_s": round(consensus_s, 3),
            "bound_s": skew_s, "trusted": not certainly_off(reading, skew_s, consensus_s)}


def page(items: list[dict], next_cursor: str | None) -> dict:
    return {"items": items, "next_cursor": next_cursor}


def reload(r: Reload) -> dict:
    return {"id": r.id, "kind": r.kind, "reason": r.reason, "sends": r.sends, "drops": r.drops,
            "at": timestamp(r.at)}


def dashboard(data: DashboardData, *, state: str | None, now: datetime, skew_s: float,
              census_every_s: float) -> dict:
    """Every subscription state appears, zero or not, in the wire protocol's order."""
    marks = {f.wiki: f.watermark for f in data.feeds}
    return {
        "generated_at": timestamp(now),
        "nodes": [node(n, skew_s, consensus) for consensus in (clock_consensus(data.nodes),) for n in data.nodes],
        "subscriptions": {
            "total": sum(data.subscription_states.values()),
            "revisions": int(data.revisions),
            "by_state": {name: data.subscription_states.get(name, 0) for name in STATES},
            "state": state,
            "recent": [{**subscription(s, marks), "tenant": tenant_name} for s, tenant_name in data.recent],
        },
        "tenants": {"total": data.tenant_count, "items": [tenant(t) for t in data.tenants]},
        "reloads": [reload(r) for r in data.reloads],
        "feeds": [feed(f, now=now) for f in data.feeds],
        "sets": [wiki_set(s, census_every_s=census_every_s) for s in data.sets],
    }
