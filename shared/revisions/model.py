"""The revision record written to storage. Pure data: no I/O."""
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Revision:
    wiki: str                 # storage key of the wiki: host[:port] (shared.hashing.wiki_key)
    page_id: int
    ns: int
    title: str
    rev_id: int
    parent_id: int
    timestamp: datetime       # timezone-aware UTC
    user: str | None          # None when revision-deleted (user_hidden)
    user_id: int | None
    anon: bool
    minor: bool
    size: int
    sha1: str | None          # base-16, as the API returns it; None when hidden
    comment: str | None
    tags: tuple[str, ...] = ()
    content_model: str | None = None
    content: str | None = None        # only for subscriptions that asked for content
    user_hidden: bool = False
    comment_hidden: bool = False
    sha1_hidden: bool = False
    text_hidden: bool = False


@dataclass(frozen=True)
class ResumePoint:
    """Newest stored revision of a page: where an incremental harvest resumes."""
    rev_id: int
    timestamp: datetime


@dataclass
class PageState:
    wiki: str
    page_id: int
    title: str
    latest_rev_id: int
    latest_timestamp: datetime
    revisions: int = field(default=0)
    deleted: bool = False     # deleted on its wiki (RevisionStore.mark_deleted): its texts are gone
