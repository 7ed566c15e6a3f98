"""Revisions that appear in the past, on the writable wiki: a harvested page gets two revisions from 2004 through
MediaWiki's importer (action=import), behind the resume point where the harvest never looks. The spawn's history
check finds them missing, writes them and reports the subscription complete; the stored history is then the
wiki's, revision id by revision id."""
import logging
from dataclasses import replace

import pytest

from shared.hashing import wiki_key
from spawn.metrics import SpawnMetrics
from tests.fixtures.writable_wiki import AdminApi
from tests.integration.spawn.registries import recorded_registry
from tests.integration.spawn.test_harvest import spec, status, wait_for
from tests.integration.spawn.test_moved_deleted_pages import new_page, page_of, rev_ids, stored_ids
from tests.support.record_change_feed import import_xml

pytestmark = pytest.mark.integration

CHECK_S = 1.0       # BW_REVISIT_MAX_S here: the history is compared with the wiki's this long after catching up


@pytest.fixture
def admin(writable_wiki) -> AdminApi:
    return writable_wiki.admin()


@pytest.mark.parametrize("content", [False, True], ids=["metadata", "content"])
def test_revisions_imported_with_old_timestamps_are_found_repaired_and_the_subscription_reports_complete(
        spawn_config, store, admin, writable_wiki, caplog, content):
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title = new_page(admin, writable_wiki, 2)
    page_id = int(page_of(admin, title)["pageid"])
    metrics = SpawnMetrics()
    config = replace(spawn_config, revisit_min_s=0.3, revisit_max_s=CHECK_S)

    def checks(outcome: str) -> float:
        labels = {"wiki": wiki, "outcome": outcome}
        return metrics.registry.get_sample_value("bw_spawn_history_checks_total", labels) or 0

    with caplog.at_level(logging.INFO, logger="spawn.source"), \
            recorded_registry(config, writable_wiki.session(), store, metrics=metrics) as (registry, _):
        registry.upsert(spec(api, "s1", title, content=content))
        wait_for(lambda: status(registry, "s1").revisions == 2, 60, "the history")
        assert status(registry, "s1").complete is None          # caught up, not compared yet
        wait_for(lambda: status(registry, "s1").complete is True, 30, "the first comparison")
        assert checks("equal") >= 1 and checks("repaired") == 0

        (imported,) = admin.import_xml(import_xml(title))       # two revisions from 2004, and a null revision now
        assert imported["revisions"] == 2
        wiki_ids = sorted(rev_ids(admin, title))
        assert len(wiki_ids) == 5
        wait_for(lambda: stored_ids(store, wiki, page_id) == wiki_ids and status(registry, "s1").complete is True
                 and status(registry, "s1").revisions == 5, 30, "the imported revisions repaired")

        assert checks("repaired") == 1 and checks("differs") == 0
        assert metrics.registry.get_sample_value("bw_spawn_revisions_repaired_total", {"wiki": wiki}) == 2
        assert [(r.missing, r.extra) for r in caplog.records if r.msg == "source.history_repair"] == [(2, 0)]
        state = store.page(wiki, page_id)
        assert state.revisions == 5 and state.latest_rev_id == max(wiki_ids)
        old = sorted(r.rev_id for r in store.history(wiki, page_id) if r.timestamp.year == 2004)
        assert len(old) == 2
        if content:
            assert [store.content(wiki, r) for r in old] == ["imported text", "imported text, edited"]

        newest = admin.edit(title, "after the import")          # the harvest goes on from the same resume point
        wait_for(lambda: status(registry, "s1").last_rev_id == newest, 30, "the next edit")
    assert stored_ids(store, wiki, page_id) == sorted(rev_ids(admin, title))


@pytest.mark.parametrize("content", [False, True], ids=["metadata", "content"])
def test_fields_hidden_by_revision_deletion_leave_the_store_and_come_back_when_shown(
        spawn_config, store, admin, writable_wiki, content):
    api, wiki = writable_wiki.api_url, wiki_key(writable_wiki.api_url)
    title = new_page(admin, writable_wiki, 3)
    page_id = int(page_of(admin, title)["pageid"])
    config = replace(spawn_config, revisit_min_s=0.3, revisit_max_s=CHECK_S)
    first = sorted(rev_ids(admin, title))[0]      # not the current revision: MediaWiki refuses to hide its text

    def stored() -> tuple:
        r = next(r for r in store.history(wiki, page_id) if r.rev_id == first)
        return r.user, r.comment, r.sha1, r.user_hidden, r.comment_hidden, r.text_hidden, store.content(wiki, first)

    with recorded_registry(config, writable_wiki.session(), store) as (registry, _):
        registry.upsert(spec(api, "s1", title, content=content))
        wait_for(lambda: status(registry, "s1").complete is True, 60, "the history, compared once")
        before = stored()
        assert before[0] and before[1] is not None and before[2] and before[3:6] == (False, False, False)
        assert (before[6] is not None) is content

        admin.revisiondelete([first], hide=("content", "comment", "user"))
        wait_for(lambda: stored()[3:6] == (True, True, True), 30, "the hidden fields removed")
        assert stored()[:3] == (None, None, None) and stored()[6] is None
        user = before[0]
        assert first not in {r.rev_id for r in store.revisions(wiki) if r.user == user}

        admin.revisiondelete([first], hide=(), show=("content", "comment", "user"))
        wait_for(lambda: stored() == before, 30, "the fields shown again")
        assert status(registry, "s1").revisions == 3 and status(registry, "s1").complete is True
