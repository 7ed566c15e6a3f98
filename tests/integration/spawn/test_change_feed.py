"""The change feed reader on the writable wiki: its administrator edits, creates, moves, deletes and
undeletes, hides and shows a revision, merges and imports; the reader, continued from the position saved
before, yields exactly those events in order, as the wiki's own API describes the pages afterwards. The
wiki is shared with other tests, so only the events of this test's pages count."""
import dataclasses
import time
from datetime import datetime, timezone

import pytest

from spawn.change_feed import ChangeFeed, FeedRead
from spawn.feed_events import (Event, HistoryMerged, Imported, NewRevision, PageCreated, PageDeleted, PageMoved,
                               PageRestored, VisibilityChanged)
from spawn.feed_position import FeedPosition
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MediaWikiClient
from spawn.wiki_session import wiki_session
from tests.fixtures.writable_wiki import AdminApi, api_call
from tests.integration.spawn.test_upstream_budget import paced_client, unique_agent
from tests.support.record_change_feed import import_xml, suppressor

pytestmark = pytest.mark.integration

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SETTLE_S = 10.0         # MediaWiki writes feed entries in deferred updates, possibly after answering


@pytest.fixture
def feed(writable_wiki):
    http = wiki_session(unique_agent("change feed"), (writable_wiki.api_url.split("/")[2],))
    return ChangeFeed(MediaWikiClient(http, writable_wiki.api_url, limiter=HostLimiter(0)))


@pytest.fixture
def admin(writable_wiki):
    return writable_wiki.admin()


def page_id(admin: AdminApi, title: str) -> int:
    (page,) = admin.call(action="query", prop="info", titles=title)["query"]["pages"]
    return int(page["pageid"])


def revids(admin: AdminApi, title: str) -> list[int]:
    return [int(r["revid"]) for r in admin.history(title)]


def events_of(read: FeedRead, page_ids: set[int]) -> list[Event]:
    assert read.gap is None and not read.more
    return [e for e in read.events if e.page_id in page_ids]


def settled(feed: ChangeFeed, since: FeedPosition, page_ids: set[int], last: type, count: int = 1) -> FeedRead:
    """A read from `since` once the feed holds the events expected: `count` of them, the last a `last`."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        read = feed.read(since)
        mine = events_of(read, page_ids)
        if (len(mine) >= count and type(mine[-1]) is last) or time.monotonic() > deadline:
            return read
        time.sleep(0.2)


def entry_of(writable_wiki, title: str) -> FeedPosition | None:
    """The feed's newest entry about `title`, as the wiki lists it."""
    found = api_call(writable_wiki.session(), writable_wiki.api_url, action="query", list="recentchanges",
                     rctitle=title, rclimit=1, rcprop="ids|timestamp")["query"]["recentchanges"]
    return FeedPosition(datetime.fromisoformat(found[0]["timestamp"]), found[0]["rcid"]) if found else None


def head_after(feed: ChangeFeed, writable_wiki, title: str) -> FeedPosition:
    """The feed's head once it holds the entry of the last change to `title`: nothing before it is read."""
    deadline = time.monotonic() + SETTLE_S
    while (entry := entry_of(writable_wiki, title)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    head = feed.head()
    assert entry is not None and head >= entry
    return head


def bare(event: Event) -> Event:
    """The event without its feed coordinates, which the wiki's other APIs do not give."""
    return dataclasses.replace(event, rcid=0, timestamp=EPOCH)


def test_the_feed_yields_each_change_in_order_as_the_wiki_describes_it(feed, admin, writable_wiki):
    t = writable_wiki.unique_title("Feed")
    titles = {name: f"{t} {name}" for name in ("edited", "created", "moved", "moved quietly", "deleted", "hidden",
                                               "imported", "merge source", "merge destination")}
    for name in ("edited", "moved", "moved quietly", "deleted", "hidden", "merge source"):
        admin.edit(titles[name], "first text", "create")
    admin.edit(titles["hidden"], "second text", "edit")     # the current revision's content cannot be hidden
    time.sleep(1.1)         # the merge destination must be newer than the whole source
    admin.edit(titles["merge destination"], "text", "create")
    since = head_after(feed, writable_wiki, titles["merge destination"])

    edit = admin.edit(titles["edited"], "second text", "edit")
    created = admin.edit(titles["created"], "text", "create")
    admin.move(titles["moved"], f"{titles['moved']} away", "move")
    admin.move(titles["moved quietly"], f"{titles['moved quietly']} away", "move", leave_redirect=False)
    admin.delete(titles["deleted"])
    admin.undelete(titles["deleted"])
    first_hidden = revids(admin, titles["hidden"])[0]
    admin.revisiondelete([first_hidden], hide=("content", "comment"))
    admin.revisiondelete([first_hidden], hide=(), show=("content", "comment"))
    admin.call("POST", action="mergehistory", token=admin.csrf_token(), reason="merge",
               **{"from": titles["merge source"], "to": titles["merge destination"]})
    (imported,) = admin.import_xml(import_xml(titles["imported"]))

    ids = {name: page_id(admin, title) for name, title in titles.items() if not name.startswith("moved")}
    ids |= {name: page_id(admin, f"{titles[name]} away") for name in ("moved", "moved quietly")}
    read = settled(feed, since, set(ids.values()), Imported)

    def at(name: str, title: str | None = None) -> dict:
        return {"rcid": 0, "timestamp": EPOCH, "page_id": ids[name], "ns": 0, "title": title or titles[name]}
    hidden = frozenset({"content", "comment"})
    imported_revisions = admin.history(titles["imported"])
    expected = [
        NewRevision(**at("edited"), rev_id=edit, parent_id=revids(admin, titles["edited"])[0]),
        PageCreated(**at("created"), rev_id=created, parent_id=0),
        PageMoved(**at("moved"), new_ns=0, new_title=f"{titles['moved']} away", redirect_left=True,
                  rev_id=revids(admin, f"{titles['moved']} away")[-1]),
        PageMoved(**at("moved quietly"), new_ns=0, new_title=f"{titles['moved quietly']} away",
                  redirect_left=False, rev_id=revids(admin, f"{titles['moved quietly']} away")[-1]),
        PageDeleted(**at("deleted")),
        PageRestored(**at("deleted"), revisions=len(revids(admin, titles["deleted"]))),
        VisibilityChanged(**at("hidden"), rev_ids=(first_hidden,), hidden_before=frozenset(), hidden_after=hidden,
                          suppressed=False),
        VisibilityChanged(**at("hidden"), rev_ids=(first_hidden,), hidden_before=hidden, hidden_after=frozenset(),
                          suppressed=False),
        HistoryMerged(**at("merge source"), dest_ns=0, dest_title=titles["merge destination"],
                      merge_point=_merge_point(admin, titles["merge destination"])),
        Imported(**at("imported"), source="upload", revisions=imported["revisions"],
                 rev_id=imported_revisions[-1]["revid"]),
    ]
    mine = events_of(read, set(ids.values()))
    assert [bare(e) for e in mine] == expected
    # the wiki's own account: the revisions are where the events say, the imported ones 22 years old
    assert [r["timestamp"][:4] for r in imported_revisions] == ["2004", "2004", str(datetime.now().year)]
    assert all(since.timestamp <= e.timestamp for e in mine)
    assert [e.rcid for e in mine] == sorted(e.rcid for e in mine)
    assert read.position > since and read.entries >= len(mine)


def _merge_point(admin: AdminApi, destination: str) -> datetime:
    """The merge point the log gives: the newest merged revision's timestamp, now the destination's oldest."""
    return datetime.fromisoformat(admin.history(destination)[0]["timestamp"])


def test_a_second_read_from_the_saved_position_yields_nothing_new(feed, admin, writable_wiki):
    title = writable_wiki.unique_title("Feed again")
    since = feed.head()
    rev = admin.edit(title, "text", "create")
    pid = page_id(admin, title)
    first = settled(feed, since, {pid}, PageCreated)
    assert [(type(e), e.rev_id) for e in events_of(first, {pid})] == [(PageCreated, rev)]
    assert events_of(feed.read(since), {pid}) == events_of(first, {pid})        # a read repeats nothing itself
    assert events_of(feed.read(first.position), {pid}) == []


def test_small_batches_and_reads_cut_short_add_up_to_one_read(feed, admin, writable_wiki):
    """Continuation within a read (rclimit 2) and across reads (max_batches) neither skips nor repeats an
    entry, though the edits share their seconds."""
    title = writable_wiki.unique_title("Feed batches")
    since = feed.head()
    made = [admin.edit(title, f"text {i}", f"edit {i}") for i in range(7)]
    pid = page_id(admin, title)
    whole = events_of(settled(feed, since, {pid}, NewRevision, count=7), {pid})
    assert [e.rev_id for e in whole] == made
    small, pieces, position = ChangeFeed(feed.client, limit=2, max_batches=2), [], since
    while True:
        read = small.read(position)
        assert read.gap is None and read.entries <= 4
        pieces += [e for e in read.events if e.page_id == pid]
        position = read.position
        if not read.more:
            break
    assert pieces == whole


def test_a_position_whose_entry_a_deletion_removed_still_reads_on(feed, admin, writable_wiki):
    """Deleting a page removes its edit entries from the feed: the position of the last one read is gone,
    yet entries older than it prove that nothing was dropped after it."""
    title = writable_wiki.unique_title("Feed deleted")
    admin.edit(title, "text", "create")
    pid = page_id(admin, title)
    head_after(feed, writable_wiki, title)
    since = entry_of(writable_wiki, title)          # the position of a reader that read the creation
    admin.delete(title)
    read = settled(feed, since, {pid}, PageDeleted)
    assert [type(e) for e in events_of(read, {pid})] == [PageDeleted]
    assert entry_of(writable_wiki, title) != since      # the creation's entry is gone: only the deletion's is left


def test_a_start_older_than_the_oldest_entry_is_a_gap_up_to_it(feed, writable_wiki):
    oldest = api_call(writable_wiki.session(), writable_wiki.api_url, action="query", list="recentchanges",
                      rcdir="newer", rclimit=1, rcprop="ids|timestamp")["query"]["recentchanges"][0]
    oldest_at = datetime.fromisoformat(oldest["timestamp"])
    start = FeedPosition(datetime(2000, 1, 1, tzinfo=timezone.utc), 0)
    read = feed.read(start)
    assert read.gap is not None and read.events == () and read.position == start
    assert (read.gap.start, read.gap.end) == (start.timestamp, oldest_at)
    on = ChangeFeed(feed.client, limit=1, max_batches=1).read(read.gap.resume)
    assert on.gap is None and on.position == FeedPosition(oldest_at, oldest["rcid"])


def test_the_feed_reads_through_the_identity_budget_with_the_deployments_user_agent(edge, writable_wiki):
    agent = unique_agent("change feed budget")
    offset = edge.log_offset()
    client, budget = paced_client(edge.writable_api_url, agent, writable_wiki.credentials_file,
                                  writable_wiki.credential_name)
    feed = ChangeFeed(client)
    assert feed.read(feed.head()).gap is None
    logged = edge.read_log(offset, user_agent=agent, at_least=4)
    queries = [r for r in logged if "recentchanges" in r.uri]
    assert len(queries) == 2 and all(r.identity_class == "auth" and r.status == 200 for r in queries)
    assert all("maxlag=5" in r.uri and "rcprop=ids%7Ctitle%7Ctimestamp%7Cloginfo" in r.uri for r in queries)
    assert budget.use().requests == len(logged)


def test_a_suppression_reaches_the_reader_whose_identity_may_read_its_log(feed, admin, writable_wiki):
    """Suppression never reaches recentchanges. A reader whose identity holds `suppressionlog` (Overseer's bot
    password) reads the suppression log in the same requests, and places each entry once in the feed's order;
    an anonymous reader of the same span hears nothing of it."""
    allowed = ChangeFeed(paced_client(writable_wiki.api_url, unique_agent("suppression log"),
                                      writable_wiki.credentials_file, writable_wiki.overseer_credential)[0])
    title = writable_wiki.unique_title("Feed suppressed")
    first = admin.edit(title, "first text", "a comment to suppress")
    admin.edit(title, "second text", "edit")
    since = head_after(feed, writable_wiki, title)
    suppressor(writable_wiki, admin).revisiondelete([first], hide=("comment", "user"), suppress=True)
    page = page_id(admin, title)

    deadline = time.monotonic() + SETTLE_S
    while not (mine := [e for e in allowed.read(since).events if e.page_id == page]) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [bare(e) for e in mine] == [VisibilityChanged(
        rcid=0, timestamp=EPOCH, page_id=page, ns=0, title=title, rev_ids=(first,), hidden_before=frozenset(),
        hidden_after=frozenset({"comment", "user"}), suppressed=True)]
    (event,) = mine
    assert FeedPosition(event.timestamp, event.rcid) > since
    # the wiki's own account: an administrator no longer sees the comment either
    assert admin.history(title)[0].get("commenthidden") is True and admin.history(title)[0].get("suppressed")
    # read on from where that read ended: placed once
    position = allowed.read(since).position
    assert [e for e in allowed.read(position).events if e.page_id == page] == []
    # an identity without the right: the same span holds nothing about the page
    assert events_of(feed.read(since), {page}) == []
