"""SQL of set subscriptions and their dump files (`wiki_sets`, `dump_files`; blackwidow.dump_plan). Functions take
the session first and never commit."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.dump_plan import CatchUpState, FileState
from blackwidow.members_plan import ListingState
from blackwidow.models import DumpFile, Tenant, WikiSet
from blackwidow.store import members as members_store
from blackwidow.store import subscriptions as subscriptions_store
from blackwidow.store.pagination import as_utc
from shared.census_wire import CensusReport
from shared.dump_wire import DONE, FAILED, READING, DumpReport, Resume
from shared.errors import ValidationError

MAX_ERROR = 500


def create_set(session: Session, *, tenant_id: str, wiki: str, kind: str, dumps: Sequence[str],
               dbname: str | None, content: bool, parallel: int, enabled: bool = True,
               dumped_at: datetime | None = None, namespaces: Sequence[int] | None = None,
               category: str | None = None, depth: int | None = None,
               census_interval_s: int | None = None) -> SetView:
    """Raises ValidationError naming tenant_id for an unknown tenant."""
    if session.get(Tenant, tenant_id) is None:
        raise ValidationError(f"no tenant {tenant_id}", field="tenant_id")
    row = WikiSet(id=str(uuid.uuid4()), tenant_id=tenant_id, wiki=wiki, kind=kind, dbname=dbname, content=content,
                  namespaces=None if namespaces is None else "|".join(str(n) for n in namespaces),
                  parallel=parallel, enabled=enabled, dumped_at=dumped_at, catchup_revisions=0, catchup_current=0,
                  catchup_requests=0, category=category, depth=depth, members_next_part=0, members_total=0,
                  members_requests=0, members_dirty=False, census_interval_s=census_interval_s)
    session.add(row)
    session.flush()             # the set before its files: their foreign key names it
    for position, url in enumerate(dumps):
        session.add(DumpFile(id=str(uuid.uuid4()), set_id=row.id, position=position, url=url, state="pending",
                             pages=0, revisions=0, bytes_read=0, revisions_read=0, revisions_per_s=0.0,
                             bytes_per_s=0.0, attempts=0))
    session.flush()
    return _set_view(session, row, session.scalars(sa.select(DumpFile).where(DumpFile.set_id == row.id)).all())


def load_files(session: Session) -> dict[str, FileState]:
    """Every file with work left (not done), with its set's settings: what a tick plans over. A category set's
    files read only its members, and wait until its members are listed."""
    rows = session.execute(sa.select(DumpFile, WikiSet).join(WikiSet, DumpFile.set_id == WikiSet.id)
                           .where(DumpFile.state != DONE)).all()
    categories = {s.id for _, s in rows if s.kind == members_store.CATEGORY and s.members_digest is not None}
    members = members_store.member_page_ids(session, categories)
    return {f.id: _state(f, s, members.get(s.id, ())) for f, s in rows}


def _state(f: DumpFile, s: WikiSet, members: tuple[int, ...] = ()) -> FileState:
    report = None
    if f.reported_at is not None:
        report = DumpReport(file_id=f.id, state=f.state if f.state in (DONE, FAILED) else READING,
                            resume=_resume(f), bytes_read=f.bytes_read,
                            bytes_total=f.bytes_total, revisions_read=f.revisions_read,
                            revisions_per_s=f.revisions_per_s, bytes_per_s=f.bytes_per_s, error=f.error)
    return FileState(id=f.id, set_id=f.set_id, position=f.position, url=f.url, wiki=s.wiki, dbname=s.dbname,
                     content=s.content, enabled=s.enabled, parallel=s.parallel, state=f.state, node=f.node_id,
                     resume=_resume(f), attempts=f.attempts,
                     retry_at=_aware(f.retry_at), error=f.error, report=report, reported_at=_aware(f.reported_at),
                     finished_at=_aware(f.finished_at), namespaces=namespaces_of(s),
                     page_ids=members if s.kind == members_store.CATEGORY else None,
                     listed=s.kind != members_store.CATEGORY or s.members_digest is not None)


def _resume(f: DumpFile) -> Resume:
    return Resume(f.pages, f.last_page_id, f.revisions, f.part_page_id, f.part_revisions)


def namespaces_of(s: WikiSet) -> tuple[int, ...] | None:
    return None if s.namespaces is None else tuple(int(n) for n in s.namespaces.split("|"))


def save_files(session: Session, files: Mapping[str, FileState], before: Mapping[str, FileState]) -> int:
    """Write the files that changed since `before`; a file deleted meanwhile (its set was) is skipped. Returns
    the rows written."""
    written = 0
    for fid, f in files.items():
        if before.get(fid) == f:
            continue
        row = session.get(DumpFile, fid)
        if row is None:
            continue
        row.state, row.node_id = f.state, f.node
        row.pages, row.last_page_id, row.revisions = f.resume.pages, f.resume.last_page_id, f.resume.revisions
        row.part_page_id, row.part_revisions = f.resume.part_page_id, f.resume.part_revisions
        row.attempts, row.retry_at, row.reported_at, row.finished_at = (f.attempts, f.retry_at, f.reported_at,
                                                                        f.finished_at)
        row.error = None if f.error is None else f.error[:MAX_ERROR]
        r = f.report
        if r is not None:
            row.bytes_read, row.bytes_total, row.revisions_read = r.bytes_read, r.bytes_total, r.revisions_read
            row.revisions_per_s, row.bytes_per_s = r.revisions_per_s, r.bytes_per_s
        written += 1
    return written


def load_catch_ups(session: Session) -> dict[str, CatchUpState]:
    """The enabled sets whose dump's date is known and whose every file is written: the catch-ups a tick runs."""
    unfinished = sa.select(DumpFile.id).where(DumpFile.set_id == WikiSet.id, DumpFile.state != DONE).exists()
    # a category set's pages follow their wiki through its subscriptions (blackwidow.store.members)
    rows = session.scalars(sa.select(WikiSet).where(WikiSet.enabled.is_(True), WikiSet.dumped_at.is_not(None),
                                                    WikiSet.kind != members_store.CATEGORY, ~unfinished))
    return {s.id: c for s in rows for c in (_catch_up(s),) if c is not None}


def _catch_up(s: WikiSet) -> CatchUpState | None:
    if s.dumped_at is None:
        return None
    return CatchUpState(set_id=s.id, wiki=s.wiki, tenant_id=s.tenant_id, since=as_utc(s.dumped_at),
                        content=s.content, node=s.catchup_node, position=_aware(s.catchup_position),
                        caught_up_to=_aware(s.caught_up_to), revisions=s.catchup_revisions,
                        current=s.catchup_current, requests=s.catchup_requests, error=s.catchup_error,
                        reported_at=_aware(s.catchup_reported_at), namespaces=namespaces_of(s),
                        census_last=_census(s.census_last), census_running=_census(s.census_running),
                        census_interval_s=s.census_interval_s)


def _census(text: str | None) -> CensusReport | None:
    return None if text is None else CensusReport.from_dict(json.loads(text))


def _census_text(census: CensusReport | None) -> str | None:
    return None if census is None else json.dumps(census.to_dict(), separators=(",", ":"))


def save_catch_ups(session: Session, sets: Mapping[str, CatchUpState], before: Mapping[str, CatchUpState]) -> None:
    for sid, c in sets.items():
        if before.get(sid) == c:
            continue
        row = session.get(WikiSet, sid)
        if row is None:
            continue
        row.catchup_node, row.catchup_position, row.caught_up_to = c.node, c.position, c.caught_up_to
        row.catchup_revisions, row.catchup_current, row.catchup_requests = c.revisions, c.current, c.requests
        row.catchup_error = None if c.error is None else c.error[:MAX_ERROR]
        row.catchup_reported_at = c.reported_at
        row.census_last, row.census_running = _census_text(c.census_last), _census_text(c.census_running)


@dataclass(frozen=True)
class FileView:
    id: str
    position: int
    url: str
    state: str
    node_id: str | None
    pages: int
    revisions: int
    bytes_read: int
    bytes_total: int | None
    revisions_read: int
    revisions_per_s: float
    bytes_per_s: float
    error: str | None
    attempts: int
    retry_at: datetime | None
    reported_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class SetView:
    id: str
    tenant_id: str
    wiki: str
    kind: str
    dbname: str | None
    content: bool
    enabled: bool
    parallel: int
    created_at: datetime
    files: tuple[FileView, ...] = ()
    dumped_at: datetime | None = None
    catch_up: CatchUpState | None = None     # where the catch-up stands (None: the dump's date is unknown)
    namespaces: tuple[int, ...] | None = None
    listing: ListingState | None = None      # kind category: where its listing stands
    members: Mapping[str, int] | None = None     # kind category: its members and their subscriptions' states
    census_interval_s: int | None = None        # the set's own (None: the deployment's; 0: no census)


def _file_view(f: DumpFile) -> FileView:
    return FileView(f.id, f.position, f.url, f.state, f.node_id, f.pages, f.revisions, f.bytes_read, f.bytes_total,
                    f.revisions_read, f.revisions_per_s, f.bytes_per_s, f.error, f.attempts, _aware(f.retry_at),
                    _aware(f.reported_at), _aware(f.finished_at))


def _set_view(session: Session, s: WikiSet, files: Sequence[DumpFile]) -> SetView:
    category = s.kind == members_store.CATEGORY
    return SetView(s.id, s.tenant_id, s.wiki, s.kind, s.dbname, s.content, s.enabled, s.parallel,
                   as_utc(s.created_at), tuple(_file_view(f) for f in sorted(files, key=lambda f: f.position)),
                   _aware(s.dumped_at), None if category else _catch_up(s), namespaces_of(s),
                   members_store.listing_state(s) if category else None,
                   members_store.counts(session, s.id) if category else None, s.census_interval_s)


def get_set(session: Session, set_id: str) -> SetView | None:
    row = session.get(WikiSet, set_id)
    if row is None:
        return None
    return _set_view(session, row, session.scalars(sa.select(DumpFile).where(DumpFile.set_id == set_id)).all())


def list_sets(session: Session, tenant_id: str | None = None) -> list[SetView]:
    query = sa.select(WikiSet).order_by(WikiSet.created_at, WikiSet.id)
    if tenant_id is not None:
        query = query.where(WikiSet.tenant_id == tenant_id)
    sets = session.scalars(query).all()
    files: dict[str, list[DumpFile]] = {}
    if sets:
        for f in session.scalars(sa.select(DumpFile).where(DumpFile.set_id.in_([s.id for s in sets]))):
            files.setdefault(f.set_id, []).append(f)
    return [_set_view(session, s, files.get(s.id, [])) for s in sets]


def set_census_interval(session: Session, set_id: str, interval_s: int | None) -> SetView | None:
    """The set's own interval between censuses (None: the deployment's; 0: no census)."""
    row = session.get(WikiSet, set_id)
    if row is None:
        return None
    if interval_s is not None and row.kind == members_store.CATEGORY:
        raise ValidationError("'census_interval_s' is for kinds wiki and namespace", field="census_interval_s")
    row.census_interval_s = interval_s
    session.flush()
    return get_set(session, set_id)


def set_enabled(session: Session, set_id: str, enabled: bool) -> SetView | None:
    row = session.get(WikiSet, set_id)
    if row is None:
        return None
    row.enabled = enabled
    for sub in members_store.owned_subscriptions(session, set_id):
        subscriptions_store.update_subscription(session, sub.id, {"enabled": enabled})
    session.flush()
    return get_set(session, set_id)


def delete_set(session: Session, set_id: str) -> bool:
    """The set and its files (the stored revisions stay: they are the wiki's, shared with other subscribers)."""
    row = session.get(WikiSet, set_id)
    if row is None:
        return False
    session.execute(sa.delete(DumpFile).where(DumpFile.set_id == set_id))
    members_store.remove_set(session, set_id)
    session.delete(row)
    return True


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)
