"""Dump bootstraps' JSON shapes between hub and spawns (docs/dumps.md, "Bootstrapping through the hub"). Pure.

Hub -> spawn, inside a Poll's first request:
  `dumps`  [DumpDuty, ...]          the dump files this node reads now, each with where to resume
Spawn -> hub, in a StatusReport's first page:
  `dumps`  {file id: DumpReport}    how far each of them got: the resume point (pages durably written) and the
                                    figures of the current run; kept until the hub stops naming the file

The hub keeps the resume point, not the spawn: a file that moves to another node (its node died, detached or
restarted) resumes there from the last point a report carried. Spawns stay stateless.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from shared.errors import ValidationError
from shared.wire_fields import required

READING = "reading"         # the node is reading it
DONE = "done"               # every page of the file is written
FAILED = "failed"           # the node gave up on it: `error` says why (docs/dumps.md, "Failures")
STOPPED = "stopped"         # stopped before its end (the hub stopped naming it, or the node shuts down)
STATES = (READING, DONE, FAILED, STOPPED)


def _count(body: object, name: str, *, optional: bool = False) -> int | None:
    value = required(body, name, int, optional=optional)
    if value is not None and (isinstance(value, bool) or value < 0):
        raise ValidationError(f"'{name}' must be a count", field=name)
    return value


def _rate(body: object, name: str) -> float:
    value = required(body, name, (int, float), optional=True, default=0.0)
    if isinstance(value, bool) or value < 0:
        raise ValidationError(f"'{name}' must be a rate", field=name)
    return float(value)


@dataclass(frozen=True)
class Resume:
    """Where a file's reading goes on: its first `pages` pages are written (the last of them page id
    `last_page_id`), holding `revisions` revisions. Only ever moved over writes that completed."""
    pages: int = 0
    last_page_id: int | None = None
    revisions: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict) -> "Resume":
        pages = _count(body, "pages", optional=True) or 0      # absent: nothing written yet
        last = _count(body, "last_page_id", optional=True)
        if pages and last is None:
            raise ValidationError("'last_page_id' is required once pages are written", field="last_page_id")
        return cls(pages=pages, last_page_id=last, revisions=_count(body, "revisions", optional=True) or 0)


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

    def to_dict(self) -> dict:
        body = asdict(self)
        body["resume"] = self.resume.to_dict()
        if self.dbname is None:
            body.pop("dbname")
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "DumpDuty":
        url = required(body, "url", str)
        if not url.startswith(("http://", "https://")):
            raise ValidationError("'url' must be an http(s) URL", field="url")
        return cls(file_id=required(body, "file_id", str), set_id=required(body, "set_id", str), url=url,
                   wiki=required(body, "wiki", str), dbname=required(body, "dbname", str, optional=True),
                   content=required(body, "content", bool, optional=True, default=False),
                   resume=Resume.from_dict(required(body, "resume", dict, optional=True, default={})))


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
        body = asdict(self)
        body["resume"] = self.resume.to_dict()
        for name in ("bytes_total", "error"):
            if body[name] is None:
                body.pop(name)
        return body

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
