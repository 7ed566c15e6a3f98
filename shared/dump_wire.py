"""Dump bootstraps' JSON shapes between hub and spawns (docs/dumps.md, "Bootstrapping through the hub"). Pure.

Hub -> spawn, inside a Poll's first request:
  `dumps`     [DumpDuty, ...]          the dump files this node reads now, each with where to resume
  `catch_up`  [CatchUpDuty, ...]       the sets whose wiki this node reads on from the dump (list=allrevisions)
Spawn -> hub, in a StatusReport's first page:
  `dumps`     {file id: DumpReport}    how far each of them got: the resume point (pages durably written) and the
                                       figures of the current run; kept until the hub stops naming the file
  `catch_up`  {set id: CatchUpReport}  where each catch-up stands

The hub keeps the resume points, not the spawn: a file that moves to another node (its node died, detached or
restarted) resumes there from the last point a report carried. Spawns stay stateless.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from shared.census_wire import MAX_SHARDS, CensusReport
from shared.errors import ValidationError
from shared.wire_fields import required
from shared.wire_values import count_field as _count
from shared.wire_values import iso_field as _iso
from shared.wire_values import namespaces_field
from shared.wire_values import parse_time, tenants_field, wire_time

__all__ = ["parse_time", "wire_time"]       # where the dump shapes' users take them from

READING = "reading"         # the node is reading it
DONE = "done"               # every page of the file is written
FAILED = "failed"           # the node gave up on it: `error` says why (docs/dumps.md, "Failures")
STOPPED = "stopped"         # stopped before its end (the hub stopped naming it, or the node shuts down)
STATES = (READING, DONE, FAILED, STOPPED)


def _without_none(body: dict, names: tuple[str, ...]) -> dict:
    """`body` without the optional fields that are None (left out of the JSON, not sent as null)."""
    return {k: v for k, v in body.items() if not (k in names and v is None)}


def _rate(body: object, name: str) -> float:
    value = required(body, name, (int, float), optional=True, default=0.0)
    if isinstance(value, bool) or value < 0:
        raise ValidationError(f"'{name}' must be a rate", field=name)
    return float(value)


@dataclass(frozen=True)
class Resume:
    """Where a file's reading goes on: its first `pages` pages are written (the last of them page id
    `last_page_id`), then the first `part_revisions` revisions of the long page `part_page_id`; `revisions` in
    all. Only ever moved over writes that completed."""
    pages: int = 0
    last_page_id: int | None = None
    revisions: int = 0
    part_page_id: int | None = None
    part_revisions: int = 0

    @property
    def order(self) -> tuple[int, int]:
        """Later resume points compare greater: a page's parts, then the page done."""
        return self.pages, self.part_revisions

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "Resume":
        pages = _count(body, "pages", optional=True) or 0      # absent: nothing written yet
        last = _count(body, "last_page_id", optional=True)
        if pages and last is None:
            raise ValidationError("'last_page_id' is required once pages are written", field="last_page_id")
        part = _count(body, "part_revisions", optional=True) or 0
        part_page = _count(body, "part_page_id", optional=True)
        if part and part_page is None:
            raise ValidationError("'part_page_id' is required with part_revisions", field="part_page_id")
        return cls(pages=pages, last_page_id=last, revisions=_count(body, "revisions", optional=True) or 0,
                   part_page_id=part_page if part else None, part_revisions=part)


@dataclass(frozen=True)
class DumpDuty:
    """One dump file for one node to read into the revision store under `wiki` (its api.php URL), resuming at
    `resume`. `dbname`: the <siteinfo> dbname the file must carry (None: not checked); the host of its <base> must
    be the wiki's. `content`: store the wikitext too."""
    file_id: str
    set_id: str
    url: str
    wiki: str
    dbname: str | None = None
    content: bool = False
    resume: Resume = Resume()
    namespaces: tuple[int, ...] | None = None     # only the pages of these namespaces; None: every page
    page_ids: tuple[int, ...] | None = None       # only these pages (a category set's members); None: every page

    def to_dict(self) -> dict:
        body = _without_none({**asdict(self), "resume": self.resume.to_dict()}, ("dbname", "namespaces", "page_ids"))
        for name in ("namespaces", "page_ids"):
            if getattr(self, name) is not None:
                body[name] = list(getattr(self, name))
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "DumpDuty":
        url = required(body, "url", str)
        if not url.startswith(("http://", "https://")):
            raise ValidationError("'url' must be an http(s) URL", field="url")
        return cls(file_id=required(body, "file_id", str), set_id=required(body, "set_id", str), url=url,
                   wiki=required(body, "wiki", str), dbname=required(body, "dbname", str, optional=True),
                   content=required(body, "content", bool, optional=True, default=False),
                   resume=Resume.from_dict(required(body, "resume", dict, optional=True, default={})),
                   namespaces=namespaces_field(body), page_ids=_page_ids(body))


@dataclass(frozen=True)
class DumpReport:
    """A file's reading as its node last saw it. `resume` is durable (pages written); the rest are this run's
    figures (a resumed run counts its bytes from the file's start again, since compressed files are re-read)."""
    file_id: str
    state: str
    resume: Resume = Resume()
    bytes_read: int = 0
    bytes_total: int | None = None
    revisions_read: int = 0
    revisions_per_s: float = 0.0
    bytes_per_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict:
        return _without_none({**asdict(self), "resume": self.resume.to_dict()}, ("bytes_total", "error"))

    @classmethod
    def from_dict(cls, body: dict) -> "DumpReport":
        state = required(body, "state", str)
        if state not in STATES:
            raise ValidationError(f"'state' must be one of {', '.join(STATES)}", field="state")
        return cls(file_id=required(body, "file_id", str), state=state,
                   resume=Resume.from_dict(required(body, "resume", dict, optional=True, default={})),
                   bytes_read=_count(body, "bytes_read", optional=True) or 0,
                   bytes_total=_count(body, "bytes_total", optional=True),
                   revisions_read=_count(body, "revisions_read", optional=True) or 0,
                   revisions_per_s=_rate(body, "revisions_per_s"), bytes_per_s=_rate(body, "bytes_per_s"),
                   error=required(body, "error", str, optional=True))


@dataclass(frozen=True)
class CatchUpDuty:
    """After a set's dump files are written: read every revision of the wiki from `since` on (`list=allrevisions`,
    oldest first) into the store, and then keep reading what is new every `interval_s`. `position`: the timestamp
    (ISO) the reading resumes at, inclusive (None: `since`). Requests go through `identity`'s budget in the
    backfill lane, for `tenants`."""
    set_id: str
    wiki: str
    since: str
    identity: str | None = None
    tenants: tuple[str, ...] = ()
    position: str | None = None
    content: bool = False
    interval_s: float = 3.0
    namespaces: tuple[int, ...] | None = None     # only these namespaces' revisions; None: every revision
    # the census (shared.census_wire): in this many shards (0: none), once caught up and not before
    # `census_after` (None: at once), then every `census_every_s`
    census_shards: int = 0
    census_after: str | None = None
    census_every_s: float = 86400.0
    # the start of the last census the hub holds finished: the reader lets go of that census's listing
    census_closed: str | None = None

    def to_dict(self) -> dict:
        body = _without_none({**asdict(self), "tenants": list(self.tenants)},
                             ("identity", "position", "namespaces", "census_after", "census_closed"))
        if self.namespaces is not None:
            body["namespaces"] = list(self.namespaces)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "CatchUpDuty":
        interval = _positive(body, "interval_s", 3.0)
        return cls(set_id=required(body, "set_id", str), wiki=required(body, "wiki", str),
                   since=_iso(body, "since"), identity=required(body, "identity", str, optional=True),
                   tenants=tenants_field(body), position=_iso(body, "position", optional=True),
                   content=required(body, "content", bool, optional=True, default=False), interval_s=float(interval),
                   namespaces=namespaces_field(body), census_shards=_census_shards(body),
                   census_after=_iso(body, "census_after", optional=True),
                   census_every_s=_positive(body, "census_every_s", 86400.0),
                   census_closed=_iso(body, "census_closed", optional=True))


@dataclass(frozen=True)
class CatchUpReport:
    """Where a set's catch-up stands on its node. `position`: every revision before it is written (the next read
    starts there, inclusive); `caught_up_to`: the wiki's clock at the end of the last read that found nothing
    more (every revision up to it is written), None before the first; `revisions` written and `requests` spent
    by this node's reader."""
    set_id: str
    position: str | None = None
    caught_up_to: str | None = None
    revisions: int = 0
    requests: int = 0
    error: str | None = None
    census: CensusReport | None = None      # the census running, else the last one finished

    def to_dict(self) -> dict:
        # the census by its own shape, not through asdict's deep copy of every shard on each poll
        body = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "census" and getattr(self, f.name) is not None}
        if self.census is not None:
            body["census"] = self.census.to_dict()
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "CatchUpReport":
        return cls(set_id=required(body, "set_id", str), position=_iso(body, "position", optional=True),
                   caught_up_to=_iso(body, "caught_up_to", optional=True),
                   revisions=_count(body, "revisions", optional=True) or 0,
                   requests=_count(body, "requests", optional=True) or 0,
                   error=required(body, "error", str, optional=True), census=_census(body))


def _census(body: object) -> CensusReport | None:
    given = required(body, "census", dict, optional=True)
    return None if given is None else CensusReport.from_dict(given)


def _census_shards(body: object) -> int:
    shards = _count(body, "census_shards", optional=True) or 0
    if shards > MAX_SHARDS:
        raise ValidationError(f"'census_shards' must be at most {MAX_SHARDS}", field="census_shards")
    return shards


def _positive(body: object, name: str, default: float) -> float:
    value = required(body, name, (int, float), optional=True, default=default)
    if isinstance(value, bool) or value <= 0:
        raise ValidationError(f"'{name}' must be positive", field=name)
    return float(value)


def _page_ids(body: object) -> tuple[int, ...] | None:
    given = required(body, "page_ids", list, optional=True)
    if given is None:
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in given):
        raise ValidationError("'page_ids' must be a list of page ids", field="page_ids")
    return tuple(given)
