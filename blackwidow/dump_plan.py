"""Dump bootstraps, the tick's rules (docs/dumps.md, "Bootstrapping through the hub"). Pure.

A set subscription that names dump files has one row per file. Each tick the scheduler

  1. `placed(files, live, now, per_node)`: gives each file that still has work a live node, at most the set's
     `parallel` files at once (dump servers limit connections per client) and `per_node` on any node (an ingest
     keeps a core busy); a file already on a live node stays there (moving it re-reads it from its start);
  2. sends each node its `duties(files)` in its poll;
  3. `absorbed(files, reports, now, retry_delay)`: takes what the file's own node reports: the resume point
     (pages durably written) only ever forward, `done`, or `failed` with the error and a backoff before the file
     is read again (from its resume point, on whichever node is free then).

Once every file of a set is written, and the dump's date is known, one node reads on from that date
(`readers`, `catch_up_duties`, `caught_up`): every revision the wiki has from it on, then what is new.

The resume point lives here, not on the spawn: a file whose node dies, detaches or restarts resumes elsewhere
(or there) from the last point a report carried. Pages written after it are written again, which the store's
idempotent writes make harmless.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from blackwidow import census_plan
from shared.census_wire import CensusReport, ShardDuty, ShardReport
from shared.dump_wire import (DONE, FAILED, CatchUpDuty, CatchUpReport, DumpDuty, DumpReport, Resume, parse_time,
                              wire_time)
from shared.hashing import stable_hash, wiki_key

D = TypeVar("D", covariant=True)

PENDING = "pending"         # waiting for a node
READING = "reading"         # placed on `node`, which reads it
FILE_STATES = (PENDING, READING, DONE, FAILED)


@dataclass(frozen=True)
class FileState:
    """One dump file of one set as the tick sees it; the set's settings travel with it."""
    id: str
    set_id: str
    position: int                   # the file's place in its set's list: files are started in this order
    url: str
    wiki: str
    dbname: str | None = None
    content: bool = False
    enabled: bool = True            # the set's
    parallel: int = 2               # the set's files read at once
    state: str = PENDING
    node: str | None = None
    resume: Resume = Resume()
    attempts: int = 0               # failures so far
    retry_at: datetime | None = None
    error: str | None = None
    report: DumpReport | None = None     # the latest figures its node reported
    reported_at: datetime | None = None
    finished_at: datetime | None = None
    namespaces: tuple[int, ...] | None = None     # the set's (kind namespace); None: every page
    # kind category: its members' page ids once a listing is held (None: every page, or not listed yet)
    page_ids: tuple[int, ...] | None = None
    listed: bool = True             # False: a category set whose members are not known yet

    @property
    def duty(self) -> DumpDuty:
        return DumpDuty(file_id=self.id, set_id=self.set_id, url=self.url, wiki=self.wiki, dbname=self.dbname,
                        content=self.content, resume=self.resume, namespaces=self.namespaces,
                        page_ids=self.page_ids)


def _wanted(f: FileState, now: datetime) -> bool:
    """Whether the file needs a node now."""
    if not f.enabled or f.state == DONE or not f.listed:
        return False
    return f.state != FAILED or f.retry_at is None or now >= f.retry_at


def placed(files: Mapping[str, FileState], live: Iterable[str], now: datetime,
           per_node: int = 1) -> dict[str, FileState]:
    """The files with this tick's nodes (only those that changed are new objects)."""
    live = frozenset(live)
    out = dict(files)
    load: dict[str, int] = {node: 0 for node in live}
    running: dict[str, int] = {}
    for fid, f in files.items():
        keep = f.node is not None and f.node in live and f.state == READING and f.enabled
        if keep:
            load[f.node] += 1               # type: ignore[index]
            running[f.set_id] = running.get(f.set_id, 0) + 1
        elif f.node is not None or f.state == READING:
            # its node is gone, or the set was disabled: the file waits for a node, from its resume point
            out[fid] = replace(f, node=None, state=PENDING if f.state == READING else f.state)
    waiting = sorted((f for f in out.values() if f.node is None and _wanted(f, now)),
                     key=lambda f: (f.set_id, f.position))
    for f in waiting:
        if running.get(f.set_id, 0) >= f.parallel:
            continue
        free = [node for node, n in load.items() if n < per_node]
        if not free:
            break
        node = min(free, key=lambda n: (load[n], -stable_hash(f"{f.id}|{n}")))
        load[node] += 1
        running[f.set_id] = running.get(f.set_id, 0) + 1
        out[f.id] = replace(f, node=node, state=READING)
    return out


def duties(files: Mapping[str, FileState]) -> dict[str, tuple[DumpDuty, ...]]:
    """{node: the files it reads}, in a stable order."""
    out: dict[str, list[DumpDuty]] = {}
    for f in sorted(files.values(), key=lambda f: (f.set_id, f.position)):
        if f.node is not None and f.state == READING:
            out.setdefault(f.node, []).append(f.duty)
    return {node: tuple(d) for node, d in out.items()}


def absorbed(files: Mapping[str, FileState], reports: Mapping[str, Mapping[str, DumpReport]],
             now: datetime, retry_delay: Callable[[int], float]) -> dict[str, FileState]:
    """The files after this tick's polls. `reports`: {answering node: its `dumps`}. Only the file's own node is
    heard: a node it left (or that lost it and reads it again) says nothing about it. `retry_delay(n)`: seconds
    before a file that failed n + 1 times is read again (blackwidow.decide.failed_retry_delay)."""
    out = dict(files)
    for fid, f in files.items():
        if f.node is None or f.state != READING:
            continue
        report = reports.get(f.node, {}).get(fid)
        if report is None:
            continue        # not started there yet, or the node did not answer
        resume = report.resume if report.resume.order >= f.resume.order else f.resume
        heard = replace(f, resume=resume, report=report, reported_at=now)
        if report.state == DONE:
            out[fid] = replace(heard, state=DONE, node=None, error=None, retry_at=None, finished_at=now)
        elif report.state == FAILED:
            attempts = f.attempts + 1
            out[fid] = replace(heard, state=FAILED, node=None, attempts=attempts, error=report.error,
                               retry_at=now + timedelta(seconds=retry_delay(attempts - 1)))
        else:
            out[fid] = heard
    return out


def set_state(states: Iterable[str], enabled: bool, since: datetime | None = None,
              caught_up_to: datetime | None = None) -> str:
    """What a set subscription shows: `disabled`; `failed` while any file failed (it is retried, and the set is
    never complete until it is read); `bootstrapping` while files are read; once every file is written,
    `catching_up` until a read from the dump's date (`since`) found nothing more, then `following`; `dumped` when
    the dump's date is unknown (nothing to catch up from)."""
    states = list(states)
    if not enabled:
        return "disabled"
    if any(s == FAILED for s in states):
        return "failed"
    if not states or not all(s == DONE for s in states):
        return "bootstrapping"
    if since is None:
        return "dumped"
    return "following" if caught_up_to is not None else "catching_up"


# --- the catch-up after the dump ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CatchUpState:
    """A set whose files are all written and whose dump's date is known: its catch-up from that date on."""
    set_id: str
    wiki: str
    tenant_id: str
    since: datetime                 # the dump's date: every revision from it on is read from the wiki
    content: bool = False
    node: str | None = None         # its reader
    position: datetime | None = None    # every revision before it is written
    caught_up_to: datetime | None = None
    revisions: int = 0              # written by earlier readers
    current: int = 0                # written by the current reader
    requests: int = 0
    error: str | None = None
    reported_at: datetime | None = None
    namespaces: tuple[int, ...] | None = None
    census_last: CensusReport | None = None         # blackwidow.census_plan
    census_running: CensusReport | None = None
    census_interval_s: int | None = None            # the set's own; None: the deployment's; 0: no census

    def duty(self, interval_s: float) -> CatchUpDuty:
        position = None if self.position is None else wire_time(self.position)
        return CatchUpDuty(set_id=self.set_id, wiki=self.wiki, since=wire_time(self.since),
                           identity=wiki_key(self.wiki), tenants=(self.tenant_id,), position=position,
                           content=self.content, interval_s=interval_s, namespaces=self.namespaces)


def readers(sets: Mapping[str, CatchUpState], live: Iterable[str]) -> dict[str, CatchUpState]:
    """Each catch-up with a live reader: its node while it lives, else the live node reading the fewest. A new
    reader starts its count at 0; what the last one wrote is kept."""
    return placed_readers(sets, live, lambda s, node: replace(s, node=node, revisions=s.revisions + s.current,
                                                              current=0, census_running=None))


S = TypeVar("S", bound="Placed[Any]")


def placed_readers(states: Mapping[str, S], live: Iterable[str], moved: Callable[[S, str | None], S]
                   ) -> dict[str, S]:
    """Each reader's state with a live node: its node (`.node`) while it lives, else the live node running the
    fewest readers, given by `moved(state, node)`."""
    live = frozenset(live)
    out = dict(states)
    load = {node: 0 for node in live}
    for s in states.values():
        if s.node in load:
            load[s.node] += 1
    for sid, s in sorted(states.items()):
        if s.node not in live:
            out[sid] = moved(s, least_loaded(sid, load))
    return out


def least_loaded(key: str, load: dict[str, int]) -> str | None:
    """The live node (`load`: {node: readers it runs}) a reader without one goes to: the one running the fewest,
    ties broken by a stable hash of the reader's key; counted in `load`. None without a live node."""
    node = min(load, key=lambda n: (load[n], -stable_hash(f"{key}|{n}"))) if load else None
    if node is not None:
        load[node] += 1
    return node


class Placed(Protocol[D]):
    """A reader's state: the node it runs on and the duty that node is given."""
    @property
    def node(self) -> str | None: ...

    def duty(self, interval_s: float) -> D: ...


def per_node(states: Mapping[str, Placed[D]], interval_s: float) -> dict[str, tuple[D, ...]]:
    """{node: the duties of the readers placed on it}, in the readers' key order."""
    out: dict[str, list[D]] = {}
    for _, s in sorted(states.items()):
        if s.node is not None:
            out.setdefault(s.node, []).append(s.duty(interval_s))
    return {node: tuple(d) for node, d in out.items()}


def catch_up_duties(sets: Mapping[str, CatchUpState], interval_s: float,
                    census: census_plan.Settings) -> dict[str, tuple[CatchUpDuty, ...]]:
    return census_plan.with_census(per_node(sets, interval_s), {k: s.census_last for k, s in sets.items()},
                                   {k: s.census_interval_s for k, s in sets.items()}, census)


def census_shard_duties(sets: Mapping[str, CatchUpState], live: Iterable[str]) -> dict[str, tuple[ShardDuty, ...]]:
    """{node: the census shards it proves}: every unproven shard of each running census whose listing is whole, on
    the live node `census_plan.prover` names."""
    nodes = sorted(live)
    out: dict[str, list[ShardDuty]] = {}
    if not nodes:
        return {}
    for sid, s in sorted(sets.items()):
        running = s.census_running
        if running is None:
            continue
        for shard in census_plan.unproven(running):
            node = census_plan.prover(sid, running.started_at, shard, nodes)
            out.setdefault(node, []).append(ShardDuty(
                set_id=sid, started_at=running.started_at, wiki=s.wiki, cut=running.cut, shard=shard,
                shard_count=running.shard_count, identity=wiki_key(s.wiki), tenants=(s.tenant_id,),
                namespaces=s.namespaces, content=s.content))
    return {node: tuple(ds) for node, ds in out.items()}


def caught_up(sets: Mapping[str, CatchUpState], reports: Mapping[str, Mapping[str, CatchUpReport]],
              now: datetime, shards: Mapping[str, Sequence[ShardReport]] | None = None) -> dict[str, CatchUpState]:
    """The catch-ups after this tick's polls: the reader is heard, its position and watermark only moving forward,
    then the census shards any node proved (`shards`: {node: its reports})."""
    proofs: dict[str, list[tuple[str, ShardReport]]] = {}
    for node, node_reports in sorted((shards or {}).items()):
        for r in node_reports:
            proofs.setdefault(r.set_id, []).append((node, r))
    out = dict(sets)
    for sid, s in sets.items():
        report = reports.get(s.node or "", {}).get(sid)
        if report is not None:
            # a reader that started again on the same node (its spawn restarted) counts from 0: keep what it wrote
            earlier = s.revisions + (s.current if report.revisions < s.current else 0)
            last, running = census_plan.heard(s.census_last, s.census_running, report.census)
            s = replace(s, position=_later(s.position, report.position), census_last=last, census_running=running,
                        caught_up_to=_later(s.caught_up_to, report.caught_up_to), revisions=earlier,
                        current=report.revisions, requests=report.requests, error=report.error, reported_at=now)
        if sid in proofs:
            last, running = census_plan.proved(s.census_last, s.census_running, proofs[sid], now)
            s = replace(s, census_last=last, census_running=running)
        out[sid] = s
    return out


def _later(mine: datetime | None, reported: str | None) -> datetime | None:
    if reported is None:
        return mine
    theirs = parse_time(reported)
    return theirs if mine is None or theirs > mine else mine
