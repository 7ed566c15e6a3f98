"""The RevisionStore contract. Implementations: cassandra_store (production), sqlite_store (embedded)."""
from array import array
from datetime import datetime
from typing import Collection, Iterable, Iterator, Mapping, Protocol, Sequence

from shared.revisions.model import PageState, ResumePoint, Revision


class StoreError(Exception):
    """A write or read failed; nothing partial is visible as a resume point."""


class RevisionStore(Protocol):
    def write(self, revisions: Sequence[Revision]) -> None:
        """Store revisions of ONE page. Idempotent by (wiki, rev_id): a replay changes nothing.
        The page's resume point moves only after every row of the batch is durable."""

    def write_pages(self, pages: Iterable[Sequence[Revision]]) -> None:
        """Store several pages at once, each sequence the revisions of ONE page as write() takes them (a
        page given twice is written once with all of them): the same rows, counts and pointers as one
        write() per page, in fewer round trips. Idempotent likewise. No page's resume point or count
        moves before every row of the call is durable, so after a failure replaying the call is safe and
        completes it; when it returns, every page is durable."""

    def resume_point(self, wiki: str, page_id: int) -> ResumePoint | None:
        """Newest stored revision of a page, or None if nothing is stored."""

    def history(self, wiki: str, page_id: int, *, since: datetime | None = None,
                until: datetime | None = None) -> Iterator[Revision]:
        """Revisions of a page, newest first, optionally bounded by timestamps (inclusive).
        Metadata only: content is None (see content()); tags come back sorted."""

    def stored_ids(self, wiki: str, page_ids: Collection[int], until: datetime) -> dict[int, list[int]]:
        """{page id: the ids of its revisions stored with a timestamp up to `until` (inclusive)} for each of
        `page_ids` ([] when none is), in no order: what history() gives of them, many pages a read (a census
        compares thousands of pages at once)."""

    def revisions(self, wiki: str | None = None) -> Iterable[Revision]:
        """Every stored revision (for statistics and verification); order unspecified; metadata only."""

    def content(self, wiki: str, rev_id: int) -> str | None:
        """Stored wikitext of a revision, or None when it was harvested without content."""

    def hide_revision_fields(self, wiki: str, rev_id: int, *, text: bool = False, comment: bool = False,
                             user: bool = False) -> bool:
        """Revision deletion: remove the revision's text, comment and/or user from storage (the *_hidden
        flags are set); a text also shown by another revision stays for that one. False when the
        revision is not stored."""

    def mark_deleted(self, wiki: str, page_id: int) -> bool:
        """Page deletion: remove the page's stored texts and mark its page row deleted. Its revision rows
        stay (the record of what was harvested, and the resume point after an undeletion). Idempotent. False
        when nothing of the page is stored."""

    def mark_restored(self, wiki: str, page_id: int) -> None:
        """Undeletion: the page row is no longer marked deleted (its texts come back with the re-read)."""

    def page(self, wiki: str, page_id: int) -> PageState | None:
        """Latest revision and revision count of a page, or None if nothing is stored."""

    def page_id(self, wiki: str, title: str) -> int | None:
        """Id of the stored page whose newest revision carries this exact title, or None."""

    def wikis(self) -> list[str]:
        """Storage keys of the wikis with stored pages, sorted."""

    def add_listing(self, wiki: str, census: str, shard: int, pages: Mapping[int, Sequence[int]]) -> None:
        """A census's listing (spawn.census): revision ids the wiki lists for pages of one shard, added to what
        `census` (shared.census_wire.listing_key) holds there. Written where every node reads it, so
        any node proves any shard. Writing the same ids again changes nothing."""

    def listing(self, wiki: str, census: str, shard: int) -> dict[int, array]:
        """{page id: the ids listed for it} of one shard of a census's listing (an id may come twice)."""

    def drop_listing(self, wiki: str, census: str, shards: int) -> None:
        """Remove a census's listing, every shard below `shards`."""

    def close(self) -> None:
        ...
