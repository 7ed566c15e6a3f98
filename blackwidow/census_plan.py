"""A set's census, the hub's rules (docs/dumps.md, "The census"). Pure.

The set's catch-up reader lists the wiki into the store; the hub tells it how many shards to list into and not to
start before `after`: the end of the last census the hub holds plus the interval. What the reader reports is kept as
the running census (`heard`). Once its listing is whole, each shard not yet proven goes to the live node its stable
hash names (`prover`: the same `stable_hash % len(nodes)` as subscriptions), and the proofs nodes report are added
to it (`proved`). With every shard proven the hub holds the census finished (its own clock ends it), the last one
is replaced, and the reader is told (`census_closed`) to remove the listing. Nothing moves back: a report of an
older census, or of one already finished, changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Mapping, Sequence

from shared.census_wire import CensusReport, ShardReport
from shared.dump_wire import CatchUpDuty, parse_time, wire_time
from shared.hashing import stable_hash


@dataclass(frozen=True)
class Settings:
    shards: int             # 0: no census
    every_s: float


def after(last: CensusReport | None, every_s: float) -> datetime | None:
    """When the next census may start: the last one's end plus the interval; None (at once) before the first."""
    if last is None or last.finished_at is None:
        return None
    return parse_time(last.finished_at) + timedelta(seconds=every_s)


def interval(own: int | None, settings: Settings) -> float:
    """A set's interval between censuses: its own, else the deployment's; 0: no census for it."""
    return settings.every_s if own is None else float(own)


def duty(d: CatchUpDuty, last: CensusReport | None, own: int | None, settings: Settings) -> CatchUpDuty:
    closed = None if last is None else last.started_at
    every_s = interval(own, settings)
    if every_s <= 0:
        return replace(d, census_shards=0, census_closed=closed)
    start = after(last, every_s)
    return replace(d, census_shards=settings.shards, census_every_s=every_s,
                   census_after=None if start is None else wire_time(start), census_closed=closed)


def heard(last: CensusReport | None, running: CensusReport | None, report: CensusReport | None
          ) -> tuple[CensusReport | None, CensusReport | None]:
    """(last finished, running) after the reader's report. A reader that reports none (it started again) runs
    none; the last finished one stays, and so do the shards already proven of the census it reports."""
    if report is None:
        return last, None
    if report.finished_at is not None:          # proven by the reader itself
        if last is None or last.finished_at is None or \
                parse_time(report.finished_at) > parse_time(last.finished_at):
            return report, None
        return last, None
    if last is not None and report.started_at == last.started_at:
        return last, None                       # finished here; the reader has not been told yet
    proven = {p.shard: p for p in report.shards}
    if running is not None and running.started_at == report.started_at:
        proven.update((p.shard, p) for p in running.shards)
    return last, replace(report, shards=tuple(proven[s] for s in sorted(proven)))


def proved(last: CensusReport | None, running: CensusReport | None, reports: Sequence[tuple[str, ShardReport]],
           now: datetime) -> tuple[CensusReport | None, CensusReport | None]:
    """(last finished, running) after the nodes' shard reports ((node, report) of this set): a proof of the running
    census's shard is kept with the node that proved it, the first one heard; with every shard proven the census
    is finished, now."""
    if running is None or not running.listed_whole:
        return last, running
    proven = {p.shard: p for p in running.shards}
    for node, r in reports:
        if r.proof is not None and r.started_at == running.started_at and r.shard < running.shard_count:
            proven.setdefault(r.shard, replace(r.proof, node=node))
    running = replace(running, shards=tuple(proven[s] for s in sorted(proven)))
    if len(proven) == running.shard_count:
        return replace(running, finished_at=wire_time(now)), None
    return last, running


def unproven(running: CensusReport | None) -> list[int]:
    """The shards of a running census to hand out: once its listing is whole, those without a proof."""
    if running is None or not running.listed_whole:
        return []
    done = {p.shard for p in running.shards}
    return [s for s in range(running.shard_count) if s not in done]


def prover(set_id: str, started_at: str, shard: int, nodes: Sequence[str]) -> str:
    """The node that proves a shard: its key's stable hash modulo the live nodes (sorted). A node joining or
    leaving moves some shards; a moved shard is proven again from its listing, which costs store reads only."""
    return nodes[stable_hash(f"{set_id}|{started_at}|{shard}") % len(nodes)]


def summary(last: CensusReport | None, running: CensusReport | None, every_s: float) -> dict | None:
    """The census as a set shows it: the last finished one, shard by shard, and the one running (`every_s`: the
    set's interval; 0: no next one)."""
    if last is None and running is None:
        return None
    body: dict = {"state": "running" if running is not None else
                  ("proven" if last is not None and proven(last) else "unproven"),
                  "last": None, "running": None, "next_at": None}
    if last is not None:
        shards = last.shards
        body["last"] = {
            "cut": last.cut, "started_at": last.started_at, "finished_at": last.finished_at,
            "shards": last.shard_count, "proven_shards": sum(p.proven for p in shards),
            "pages": sum(p.pages for p in shards), "revisions": sum(p.wiki for p in shards),
            "stored": sum(p.stored for p in shards), "repaired": sum(p.repaired for p in shards),
            "missing": sum(p.missing for p in shards), "extra": sum(p.extra for p in shards),
            "requests": last.all_requests, "nodes": len({p.node for p in shards if p.node is not None}),
            "per_shard": [{**p.to_dict(), "node": p.node, "missing": p.missing, "proven": p.proven}
                          for p in shards]}
        start = after(last, every_s) if every_s > 0 else None
        body["next_at"] = None if start is None else wire_time(start)
    if running is not None:
        body["running"] = {"cut": running.cut, "started_at": running.started_at, "shards": running.shard_count,
                           "listed_whole": running.listed_whole, "shards_done": len(running.shards),
                           "listed": running.listed, "requests": running.all_requests}
    return body


def proven(census: CensusReport) -> bool:
    """Every shard proven: the stored history equals the wiki's up to the census's cut."""
    return len(census.shards) == census.shard_count and all(p.proven for p in census.shards)


def with_census(duties: Mapping[str, tuple[CatchUpDuty, ...]], last: Mapping[str, CensusReport | None],
                own: Mapping[str, int | None], settings: Settings) -> dict[str, tuple[CatchUpDuty, ...]]:
    """Each node's catch-up duties with their census fields (`own`: each set's own interval)."""
    return {node: tuple(duty(d, last.get(d.set_id), own.get(d.set_id), settings) for d in ds)
            for node, ds in duties.items()}
