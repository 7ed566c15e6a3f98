"""Moved, deleted and undeleted pages on the writable wiki, harvested in process into real Cassandra: its
administrator moves (with and without a redirect), deletes and undeletes pages while the spawn's registry runs
them; the spawn's reported state and the stored rows are checked against what the wiki's API then says."""
import time
from dataclasses import replace

import pytest

from shared.config import SpawnConfig
from shared.hashing import source_uuid, wiki_key
from tests.fixtures.writable_wiki import AdminApi
from tests.integration.spawn.registries import recorded_registry
from tests.integration.spawn.test_harvest import spec, status, wait_for

pytestmark = pytest.mark.integration

RECHECK_S = 2.0          # BW_REVISIT_MAX_S here: a deleted page's re-check, and the longest revisit interval


@pytest.fixture
def admin(writable_wiki) -> AdminApi:
    return writable_wiki.admin()


@pytest.fixture
def spawn(spawn_config, store, writable_wiki):
    """A registry on the writable wiki, with its sources' wiki requests counted."""
    with recorded_registry(fast(spawn_config), writable_wiki.session(), store) as recording:
        yield recording


def fast(config: SpawnConfig) -> SpawnConfig:
    return replace(config, revisit_min_s=0.3, revisit_max_s=RECHECK_S)


def page_of(admin: AdminApi, title: str) -> dict:
    (page,) = admin.call(action="query", prop="info", titles=title)["query"]["pages"]
    return page


def rev_ids(admin: AdminApi, title: str) -> list[int]:
    return [int(r["revid"]) for r in admin.history(title)]


def stored_ids(store, wiki: str, page_id: int) -> list[int]:
    return sorted(r.rev_id for r in store.history(wiki, page_id))


def new_page(admin: AdminApi, writable_wiki, edits: int, spaced: bool = False) -> str:
    """A page with `edits` revisions; `spaced`: a second apart, so a partial undeletion can name each by time."""
    title = writable_wiki.unique_title("Fate page")
    for i in range(edits):
        if spaced and i:
            time.sleep(1.1)
        admin.edit(title, f"text {i} of {title}", summary=f"edit {i}")
    return title


def partly_restored_page(admin: AdminApi, writable_wiki) -> tuple[str, int, list[dict]]:
    """A page of three revisions of which only the newest is visible: the two older ones lie in the archive
    (deleted, then only the newest undeleted). Returns its title, page id and the three revisions."""
    title = new_page(admin, writable_wiki, 3, spaced=True)
    page_id = int(page_of(admin, title)["pageid"])
    revisions = admin.history(title)
    admin.delete(title)
    admin.call("POST", action="undelete", title=title, timestamps=revisions[-1]["timestamp"], reason="partial",
               token=admin.csrf_token())
    assert rev_ids(admin, title) == [revisions[-1]["revid"]] and int(page_of(admin, title)["pageid"]) == page_id
    return title, page_id, revisions


def test_a_deleted_page_shows_deleted_then_its_undeletion_restores_old_revisions_too(
        spawn, store, admin, writable_wiki):
    registry, requests = spawn
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title, page_id, first = partly_restored_page(admin, writable_wiki)

    registry.upsert(spec(api, "s1", title, content=True))
    wait_for(lambda: status(registry, "s1").revisions == 1 and status(registry, "s1").state == "running", 60,
             "the visible revision")
    assert store.content(wiki, first[-1]["revid"]) == f"text 2 of {title}"

    admin.delete(title)
    wait_for(lambda: status(registry, "s1").state == "deleted", 30, "the deletion to show")
    assert "deleted" in status(registry, "s1").last_error and status(registry, "s1").revisions == 1
    # the stored text is gone, the page row says deleted, the revision's metadata stays
    wait_for(lambda: store.page(wiki, page_id).deleted, 10, "the page row marked deleted")
    assert store.content(wiki, first[-1]["revid"]) is None and stored_ids(store, wiki, page_id) == [first[-1]["revid"]]
    before = len(requests)
    time.sleep(2 * RECHECK_S)
    # one re-check (the page id, then the title) per interval: no retry loop against a missing page
    assert len(requests) - before <= 2 * 3, requests[before:]
    assert status(registry, "s1").state == "deleted"

    restored = admin.undelete(title)          # all three, the two older ones with timestamps before the resume point
    assert restored == 3 and int(page_of(admin, title)["pageid"]) == page_id
    wait_for(lambda: status(registry, "s1").state == "running" and status(registry, "s1").revisions == 3,
             30, "the undeleted history")
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, title))
    assert not store.page(wiki, page_id).deleted
    assert [store.content(wiki, r["revid"]) for r in first] == [f"text {i} of {title}" for i in range(3)]
    newest = admin.edit(title, "after the undeletion")
    wait_for(lambda: status(registry, "s1").last_rev_id == newest, 30, "the harvest to resume")
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, title))
    assert status(registry, "s1").revisions == 4 and store.page(wiki, page_id).revisions == 4


def test_a_moved_page_is_followed_by_page_id_and_the_old_titles_redirect_is_not_harvested(
        spawn, store, admin, writable_wiki):
    registry, _ = spawn
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title = new_page(admin, writable_wiki, 2)
    page_id = int(page_of(admin, title)["pageid"])
    registry.upsert(spec(api, "s1", title))
    wait_for(lambda: status(registry, "s1").revisions == 2, 60, "the history")

    moved = f"{title} moved"
    admin.move(title, moved)                               # leaves a redirect at the old title
    redirect_id = int(page_of(admin, title)["pageid"])
    assert redirect_id != page_id and int(page_of(admin, moved)["pageid"]) == page_id
    wait_for(lambda: status(registry, "s1").revisions == 3, 30, "the move's null revision")
    moved_key = str(source_uuid(api, moved))
    assert status(registry, "s1").page_key == moved_key and status(registry, "s1").state == "running"
    assert store.page(wiki, page_id).title == moved and store.page_id(wiki, moved) == page_id
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, moved))
    assert store.page(wiki, redirect_id) is None           # the redirect left behind is no page of ours

    registry.upsert(spec(api, "new", moved, tenant_id="t2"))      # the new title and the old one: one source
    registry.upsert(spec(api, "old", title, tenant_id="t3"))
    wait_for(lambda: status(registry, "new").revisions == status(registry, "old").revisions == 3, 30,
             "the other subscriptions")
    assert registry.counts() == {"subscribers": 3, "sources": 1}
    assert {status(registry, s).page_key for s in ("s1", "new", "old")} == {moved_key}

    again = f"{title} again"
    admin.move(moved, again, leave_redirect=False)         # no redirect this time
    assert "missing" in page_of(admin, moved)
    wait_for(lambda: status(registry, "s1").revisions == 4, 30, "the second move")
    assert store.page(wiki, page_id).title == again and store.page_id(wiki, again) == page_id
    assert {status(registry, s).page_key for s in ("s1", "new", "old")} == {str(source_uuid(api, again))}
    assert registry.counts()["sources"] == 1
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, again))


def test_a_spawn_starting_on_a_title_moved_away_without_a_redirect_follows_the_stored_page_id(
        spawn_config, store, admin, writable_wiki):
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title = new_page(admin, writable_wiki, 2)
    page_id = int(page_of(admin, title)["pageid"])
    for run in (0, 1):
        # a first spawn harvests the page; the second starts (a restart, or the subscription moved to
        # another node) after the page was moved away without a redirect
        with recorded_registry(fast(spawn_config), writable_wiki.session(), store) as (registry, _):
            registry.upsert(spec(api, "s1", title))
            want = len(rev_ids(admin, f"{title} elsewhere" if run else title))
            wait_for(lambda: status(registry, "s1").revisions == want, 60, "the history")
            if run:
                assert status(registry, "s1").page_key == str(source_uuid(api, f"{title} elsewhere"))
                assert store.page(wiki, page_id).revisions == want
        if not run:
            admin.move(title, f"{title} elsewhere", leave_redirect=False)
            assert "missing" in page_of(admin, title)
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, f"{title} elsewhere"))


def test_a_page_undeleted_while_no_spawn_watched_is_read_again_when_one_starts(
        spawn_config, store, admin, writable_wiki):
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title, page_id, first = partly_restored_page(admin, writable_wiki)
    with recorded_registry(fast(spawn_config), writable_wiki.session(), store) as (registry, _):
        registry.upsert(spec(api, "s1", title))
        wait_for(lambda: status(registry, "s1").revisions == 1, 60, "the visible revision")
        admin.delete(title)
        wait_for(lambda: store.page(wiki, page_id).deleted, 30, "the page row marked deleted")
    admin.undelete(title)                      # nobody watching: the next spawn finds the row marked deleted
    with recorded_registry(fast(spawn_config), writable_wiki.session(), store) as (registry, _):
        registry.upsert(spec(api, "s1", title))
        wait_for(lambda: status(registry, "s1").revisions == 3, 60, "the restored history")
        assert status(registry, "s1").state == "running"
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, title)) and not store.page(wiki, page_id).deleted
