"""A set's census, the hub's rules (docs/dumps.md, "The census"). Pure.

The census runs on the set's catch-up reader, which the hub tells how many shards to prove and not to start before
`after`: the end of the last census the hub heard of plus the interval. What the reader reports is kept: a
finished census replaces the last one when it is newer, a running one shows its progress; neither moves back.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Mapping

from shared.census_wire import CensusReport
from shared.dump_wire import CatchUpDuty, parse_time, wire_time


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
    every_s = interval(own, settings)
    if every_s <= 0:
        return replace(d, census_shards=0)
    start = after(last, every_s)
    return replace(d, census_shards=settings.shards, census_every_s=every_s,
                   census_after=None if start is None else wire_time(start))


def absorbed(last: CensusReport | None, running: CensusReport | None, report: CensusReport | None
             ) -> tuple[CensusReport | None, CensusReport | None]:
    """(last finished, running) after the reader's report. A reader that reports none (it started again) runs
    none; the last finished one stays."""
    if report is None:
        return last, None
    if report.finished_at is None:
        return last, report
    if last is None or last.finished_at is None or parse_time(report.finished_at) > parse_time(last.finished_at):
        return report, None
    return last, None


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
            "requests": last.requests,
            "per_shard": [{**p.to_dict(), "missing": p.missing, "proven": p.proven} for p in shards]}
        start = after(last, every_s) if every_s > 0 else None
        body["next_at"] = None if start is None else wire_time(start)
    if running is not None:
        body["running"] = {"cut": running.cut, "started_at": running.started_at, "shards": running.shard_count,
                           "shards_done": len(running.shards), "listed": running.listed,
                           "requests": running.requests}
    return body


def proven(census: CensusReport) -> bool:
    """Every shard proven: the stored history equals the wiki's up to the census's cut."""
    return len(census.shards) == census.shard_count and all(p.proven for p in census.shards)


def with_census(duties: Mapping[str, tuple[CatchUpDuty, ...]], last: Mapping[str, CensusReport | None],
                own: Mapping[str, int | None], settings: Settings) -> dict[str, tuple[CatchUpDuty, ...]]:
    """Each node's catch-up duties with their census fields (`own`: each set's own interval)."""
    return {node: tuple(duty(d, last.get(d.set_id), own.get(d.set_id), settings) for d in ds)
            for node, ds in duties.items()}
