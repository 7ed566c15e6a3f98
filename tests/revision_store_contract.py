"""The RevisionStore contract, run against every backend.

A backend's test module subclasses RevisionStoreContract and provides four fixtures:
`store`, `stored_size_delta(wiki, rev_id) -> int | None` (read straight from the backend's tables),
`poisoned(revision) -> Revision` (a variant the backend rejects on write) and `store_env`
(BW_* variables that make open_store() pick this backend).
"""
import dataclasses
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import requests

from shared.config import SpawnConfig
from shared.revisions.factory import open_store
from shared.revisions.model import Revision
from shared.revisions.store import StoreError
from spawn.dump_ingest import Checkpoint, DumpIngest
from tests.unit.spawn.test_dump_ingest import dump_xml, pages as dump_pages

START = datetime(2023, 1, 30, 22, 0, tzinfo=timezone.utc)


def make_history(wiki: str, page_id: int, count: int, *, first_rev_id: int = 1000, start: datetime = START,
                 step: timedelta = timedelta(hours=19), title: str = "Spider web") -> list[Revision]:
    """A page's revisions oldest first: chained parents, growing sizes, registered and anonymous
    editors, tags and minor edits, spread over several months."""
    revisions, parent, size = [], 0, 0
    for i in range(count):
        rev_id = first_rev_id + i * 3
        size += 120 if i % 4 else -40 if i else 500
        anon = i % 5 == 4
        revisions.append(Revision(
            wiki=wiki, page_id=page_id, ns=0, title=title, rev_id=rev_id, parent_id=parent,
            timestamp=start + step * i, user=f"192.0.2.{i}" if anon else f"Editor{i % 3}",
            user_id=None if anon else 10 + i % 3, anon=anon, minor=i % 3 == 1, size=size,
            sha1=f"{rev_id:040x}", comment=f"edit {i}; see [[Talk:Spider web]]",
            tags=("mobile edit", "visualeditor")[: i % 3], content_model="wikitext"))
        parent = rev_id
    return revisions


def metadata(revisions) -> list[Revision]:
    return [dataclasses.replace(r, content=None) for r in revisions]


def newest_first(revisions) -> list[Revision]:
    return sorted(revisions, key=lambda r: (r.timestamp, r.rev_id), reverse=True)


def varied_pages(wiki: str) -> list[list[Revision]]:
    """Pages 31-35 with what a write derives rows from: texts with a revert, hidden fields, one revision,
    long histories over months."""
    a = make_history(wiki, 31, 40, title="Orb weaver")
    texts = [f"== Silk ==\nEdit {i} of the orb weaver.\n" * 30 for i in range(40)]
    texts[25] = texts[10]
    a = [dataclasses.replace(r, content=t) for r, t in zip(a, texts)]
    b = make_history(wiki, 32, 6, first_rev_id=3000, title="Cobweb")
    b[3] = dataclasses.replace(b[3], user=None, user_id=None, user_hidden=True, comment=None, comment_hidden=True)
    b[4] = dataclasses.replace(b[4], sha1=None, sha1_hidden=True, text_hidden=True)
    c = make_history(wiki, 33, 1, first_rev_id=4000, title="Trapdoor")
    d = make_history(wiki, 34, 30, first_rev_id=5000, title="Funnel web")
    e = make_history(wiki, 35, 10, first_rev_id=6000, title="Jumping spider")
    return [a, b, c, d, e]


def stored_state(store, wiki: str, page_ids, rev_ids, size_delta=None) -> dict:
    """Everything a reader sees of these pages, with the wiki key left out (to compare two wikis)."""
    anywhere = "any.example.org"
    return {
        "history": {p: [dataclasses.replace(r, wiki=anywhere) for r in store.history(wiki, p)] for p in page_ids},
        "pages": {p: dataclasses.replace(store.page(wiki, p), wiki=anywhere) for p in page_ids},
        "resume": {p: store.resume_point(wiki, p) for p in page_ids},
        "content": {r: store.content(wiki, r) for r in rev_ids},
        "size_delta": {r: size_delta(wiki, r) for r in rev_ids} if size_delta else None,
        "titles": {store.page_id(wiki, t) for t in ("Orb weaver", "Cobweb", "Trapdoor")},
    }


class KilledMidBatch:
    """Passes `calls` write_pages calls to a real store; the next one stores its first page and the first revision
    of each other page, then dies like a killed process."""

    def __init__(self, inner, calls: int):
        self.inner, self.calls = inner, calls

    def write_pages(self, pages):
        if self.calls == 0:
            self.inner.write_pages([pages[0]] + [rows[:1] for rows in pages[1:]])
            raise KeyboardInterrupt("killed")
        self.calls -= 1
        self.inner.write_pages(pages)


class Recording:
    def __init__(self, inner):
        self.inner, self.pages = inner, []

    def write_pages(self, pages):
        self.inner.write_pages(pages)
        self.pages += [rows[0].page_id for rows in pages]


class RevisionStoreContract:
    @pytest.fixture
    def wiki(self):
        return f"test-{uuid.uuid4().hex[:10]}.example.org"

    def test_history_returns_every_revision_newest_first(self, store, wiki):
        revisions = make_history(wiki, 7, 40)
        assert len({(r.timestamp.year, r.timestamp.month) for r in revisions}) >= 2
        store.write(revisions)
        assert list(store.history(wiki, 7)) == newest_first(metadata(revisions))

    def test_replaying_a_write_changes_nothing(self, store, wiki):
        revisions = make_history(wiki, 7, 25)
        store.write(revisions)
        before = (list(store.history(wiki, 7)), store.page(wiki, 7), store.resume_point(wiki, 7))
        store.write(revisions)
        store.write(revisions[5:12])
        after = (list(store.history(wiki, 7)), store.page(wiki, 7), store.resume_point(wiki, 7))
        assert after == before
        assert before[1].revisions == 25

    def test_history_is_bounded_by_inclusive_dates(self, store, wiki):
        revisions = make_history(wiki, 3, 60)
        store.write(revisions)
        since, until = revisions[10].timestamp, revisions[47].timestamp
        got = list(store.history(wiki, 3, since=since, until=until))
        assert got == newest_first(metadata(revisions[10:48]))
        assert list(store.history(wiki, 3, since=revisions[-1].timestamp)) == metadata(revisions[-1:])
        assert list(store.history(wiki, 3, until=revisions[0].timestamp - timedelta(days=1))) == []

    def test_resume_point_is_the_newest_stored_revision(self, store, wiki):
        revisions = make_history(wiki, 5, 30)
        assert store.resume_point(wiki, 5) is None
        assert store.page(wiki, 5) is None
        store.write(revisions[:20])
        point = store.resume_point(wiki, 5)
        assert (point.rev_id, point.timestamp) == (revisions[19].rev_id, revisions[19].timestamp)
        store.write(revisions[20:])
        assert store.resume_point(wiki, 5).rev_id == revisions[-1].rev_id
        # an older batch arriving late never moves the pointer back
        store.write(revisions[:3])
        assert store.resume_point(wiki, 5).rev_id == revisions[-1].rev_id
        page = store.page(wiki, 5)
        assert (page.title, page.latest_rev_id, page.revisions) == ("Spider web", revisions[-1].rev_id, 30)

    def test_a_failed_write_does_not_move_the_resume_point(self, store, wiki, poisoned):
        revisions = make_history(wiki, 9, 12)
        store.write(revisions[:8])
        with pytest.raises(StoreError):
            store.write([*revisions[8:11], poisoned(revisions[11])])
        assert store.resume_point(wiki, 9).rev_id == revisions[7].rev_id
        assert store.page(wiki, 9).revisions == 8
        store.write(revisions[8:])                      # the retry completes the page
        assert store.resume_point(wiki, 9).rev_id == revisions[-1].rev_id
        assert list(store.history(wiki, 9)) == newest_first(metadata(revisions))

    def test_content_round_trip(self, store, wiki):
        text = "'''Araña''' — {{Infobox}}\n" + "Ünïcødé wikitext ✓ " * 2000
        revisions = make_history(wiki, 11, 3)
        with_content = [dataclasses.replace(revisions[0], content=text),
                        dataclasses.replace(revisions[1], content=""), revisions[2]]
        store.write(with_content)
        assert store.content(wiki, revisions[0].rev_id) == text
        assert store.content(wiki, revisions[1].rev_id) == ""
        assert store.content(wiki, revisions[2].rev_id) is None
        assert store.content(wiki, 424242) is None
        assert all(r.content is None for r in store.history(wiki, 11))

    def test_revision_deletion_removes_the_hidden_fields(self, store, wiki):
        texts = [f"text of edit {i}\n" * 50 for i in range(6)]
        texts[4] = texts[1]                                  # a revert: edit 1's text again
        revisions = [dataclasses.replace(r, content=t) for r, t in zip(make_history(wiki, 13, 6), texts)]
        store.write(revisions)
        target, shown = revisions[1], revisions[4]
        assert store.hide_revision_fields(wiki, target.rev_id, text=True, comment=True, user=True)
        got = {r.rev_id: r for r in store.history(wiki, 13)}[target.rev_id]
        assert (got.user, got.user_id, got.comment) == (None, None, None)
        assert (got.user_hidden, got.comment_hidden, got.text_hidden) == (True, True, True)
        assert (got.sha1, got.sha1_hidden) == (None, True)         # hidden with the text, as MediaWiki does
        assert store.content(wiki, target.rev_id) is None
        assert store.content(wiki, shown.rev_id) == shown.content
        assert [store.content(wiki, r.rev_id) for r in revisions if r is not target] == \
            [r.content for r in revisions if r is not target]
        assert store.page(wiki, 13).revisions == 6
        assert not store.hide_revision_fields(wiki, 1, text=True)

    def test_a_deleted_page_loses_its_texts_and_stays_marked_until_restored(self, store, wiki):
        texts = [f"text {i} of the deleted page\n" * 40 for i in range(40)]
        texts[30] = texts[3]                                 # a revert: one text for two revisions
        page = [dataclasses.replace(r, content=t) for r, t in zip(make_history(wiki, 17, 40), texts)]
        other = [dataclasses.replace(r, content=f"other {r.rev_id}")
                 for r in make_history(wiki, 18, 3, first_rev_id=9000)]
        store.write(page)
        store.write(other)
        assert store.mark_deleted(wiki, 17)
        state = store.page(wiki, 17)
        assert (state.deleted, state.revisions, state.latest_rev_id) == (True, 40, page[-1].rev_id)
        assert [store.content(wiki, r.rev_id) for r in page] == [None] * 40
        assert list(store.history(wiki, 17)) == newest_first(metadata(page))      # the record stays
        assert [store.content(wiki, r.rev_id) for r in other] == [r.content for r in other]
        assert not store.page(wiki, 18).deleted
        assert store.mark_deleted(wiki, 17) and not store.mark_deleted(wiki, 99)   # idempotent; nothing stored
        store.write(page)                                    # the re-read after the undeletion
        store.mark_restored(wiki, 17)
        assert not store.page(wiki, 17).deleted
        assert [store.content(wiki, r.rev_id) for r in page] == texts

    def test_hidden_user_and_comment(self, store, wiki):
        first, second = make_history(wiki, 13, 2)
        hidden = dataclasses.replace(second, user=None, user_id=None, user_hidden=True, comment=None,
                                     comment_hidden=True, sha1=None, sha1_hidden=True)
        store.write([first, hidden])
        assert list(store.history(wiki, 13)) == [hidden, first]

    def test_size_delta_against_the_parent(self, store, wiki, stored_size_delta):
        revisions = make_history(wiki, 15, 6)
        store.write(revisions[:3])
        store.write(revisions[3:])                      # parent of revisions[3] is looked up in storage
        assert [stored_size_delta(wiki, r.rev_id) for r in revisions] == [500, 120, 120, 120, -40, 120]
        orphan = dataclasses.replace(revisions[0], rev_id=99_999, parent_id=88_888, page_id=16)
        store.write([orphan])
        assert stored_size_delta(wiki, 99_999) is None

    def test_full_iteration(self, store, wiki):
        other = wiki.replace("test-", "other-")
        a, b = make_history(wiki, 1, 5), make_history(wiki, 2, 4, first_rev_id=5000)
        c = make_history(other, 1, 3)
        for batch in (a, b, c):
            store.write(batch)
        key = lambda r: (r.wiki, r.rev_id)   # noqa: E731
        assert sorted(store.revisions(wiki), key=key) == sorted(a + b, key=key)
        everything = set(store.revisions())
        assert set(a + b + c) <= everything

    def test_page_id_by_title_and_wikis(self, store, wiki):
        store.write(make_history(wiki, 21, 3, title="Orb weaver"))
        store.write(make_history(wiki, 22, 2, first_rev_id=8000, title="Ünïcödé – 東京"))
        assert (store.page_id(wiki, "Orb weaver"), store.page_id(wiki, "Ünïcödé – 東京")) == (21, 22)
        assert store.page_id(wiki, "orb weaver") is None
        assert store.page_id("elsewhere.example.org", "Orb weaver") is None
        assert wiki in store.wikis() and store.wikis() == sorted(store.wikis())

    def test_a_write_covers_one_page(self, store, wiki):
        mixed = make_history(wiki, 1, 2) + make_history(wiki, 2, 1, first_rev_id=7000)
        with pytest.raises(ValueError, match="one page"):
            store.write(mixed)
        store.write([])
        assert store.resume_point(wiki, 1) is None

    def test_open_store_picks_this_backend_from_config(self, store, store_env, wiki):
        opened = open_store(SpawnConfig.from_env({"BW_NODE_SECRET": "s", **store_env}))
        try:
            assert type(opened) is type(store)
            opened.write(make_history(wiki, 1, 3))
            assert opened.page(wiki, 1).revisions == 3
        finally:
            opened.close()

    def test_write_pages_stores_what_one_write_per_page_stores(self, store, wiki, stored_size_delta):
        other = wiki.replace("test-", "pages-")
        for key, together in ((wiki, False), (other, True)):
            a, b, c, d, e = varied_pages(key)
            store.write(e[:4])                      # a parent stored by an earlier write
            parts = [a, b, c, d[:12], d[12:], e[4:]]   # one page in two parts
            if together:
                store.write_pages(parts)
            else:
                for part in parts:
                    store.write(part)
        page_ids = range(31, 36)
        rev_ids = [r.rev_id for page in varied_pages(wiki) for r in page]
        one_by_one = stored_state(store, wiki, page_ids, rev_ids, stored_size_delta)
        assert stored_state(store, other, page_ids, rev_ids, stored_size_delta) == one_by_one
        assert [one_by_one["pages"][p].revisions for p in page_ids] == [40, 6, 1, 30, 10]
        assert one_by_one["content"][varied_pages(wiki)[0][25].rev_id].startswith("== Silk ==\nEdit 10 ")
        store.write_pages(varied_pages(other))       # a replay changes nothing
        store.write_pages([])
        assert stored_state(store, other, page_ids, rev_ids, stored_size_delta) == one_by_one

    def test_a_failed_write_pages_moves_no_resume_point_and_a_replay_completes_it(self, store, wiki, poisoned):
        first = make_history(wiki, 41, 12)
        second = make_history(wiki, 42, 5, first_rev_id=3000)
        third = make_history(wiki, 43, 4, first_rev_id=4000)
        store.write(first[:8])
        with pytest.raises(StoreError):
            store.write_pages([first[8:], second, [*third[:3], poisoned(third[3])]])
        assert (store.resume_point(wiki, 41).rev_id, store.page(wiki, 41).revisions) == (first[7].rev_id, 8)
        assert (store.resume_point(wiki, 42), store.resume_point(wiki, 43)) == (None, None)
        store.write_pages([first[8:], second, third])
        for page_id, revisions in ((41, first), (42, second), (43, third)):
            assert list(store.history(wiki, page_id)) == newest_first(metadata(revisions))
            assert store.page(wiki, page_id).revisions == len(revisions)
            assert store.resume_point(wiki, page_id).rev_id == revisions[-1].rev_id

    def test_write_pages_keeps_wikis_apart(self, store, wiki):
        other = wiki.replace("test-", "also-")
        here, there = make_history(wiki, 51, 5), make_history(other, 51, 7, first_rev_id=1001)   # same page id
        store.write_pages([here, there])
        assert list(store.history(wiki, 51)) == newest_first(metadata(here))
        assert list(store.history(other, 51)) == newest_first(metadata(there))
        assert (store.page(wiki, 51).revisions, store.page(other, 51).revisions) == (5, 7)

    def test_write_pages_takes_pages_of_one_page_each(self, store, wiki):
        with pytest.raises(ValueError, match="one page"):
            store.write_pages([make_history(wiki, 1, 2) + make_history(wiki, 2, 1, first_rev_id=7000)])
        assert store.resume_point(wiki, 1) is None

    def test_a_dump_ingest_killed_mid_batch_resumes_without_losing_or_rewriting(self, store, wiki, tmp_path):
        """Groups of 2 pages (batch 6, 3 revisions a page); the third group's write dies after storing its
        first page and a revision of the second. The checkpoint holds only the groups written whole; the
        restart writes every later page once, and the pages end as a clean ingest leaves them."""
        path = tmp_path / "d.xml"
        path.write_text(dump_xml(dump_pages(1, 12)), encoding="utf-8")

        def ingest(key: str, into, checkpoint: str) -> DumpIngest:
            return DumpIngest([str(path)], wiki=key, store=into, checkpoint=Checkpoint(tmp_path / checkpoint),
                              http=requests.Session(), batch=6, writers=1, checkpoint_every=0.0)
        with pytest.raises(KeyboardInterrupt):
            ingest(wiki, KilledMidBatch(store, calls=2), "cp.json").run()
        saved = Checkpoint(tmp_path / "cp.json").of(str(path))
        assert (saved.pages, saved.last_page_id, saved.done) == (4, 4, False)
        assert [store.page(wiki, p).revisions for p in range(1, 7)] == [3, 3, 3, 3, 3, 1]
        resumed = Recording(store)
        assert ingest(wiki, resumed, "cp.json").run()
        assert resumed.pages == list(range(5, 13))
        clean = wiki.replace("test-", "clean-")
        assert ingest(clean, store, "clean.json").run()
        page_ids = range(1, 13)
        assert stored_state(store, wiki, page_ids, []) == stored_state(store, clean, page_ids, [])
        assert [store.page(wiki, p).revisions for p in page_ids] == [3] * 12

    def test_stored_ids_are_what_history_gives_up_to_a_time_many_pages_at_once(self, store, wiki):
        """Pages of one revision and of many months, a cut inside a month and on a revision's own time
        (inclusive), a page with nothing stored, another wiki's page of the same id apart."""
        pages = {p: make_history(wiki, p, 1 + (p * 7) % 30, first_rev_id=p * 1000) for p in range(1, 121)}
        store.write_pages(pages.values())
        store.write(make_history(f"other.{wiki}", 5, 3, first_rev_id=99_000))
        for cut in (START + timedelta(days=9, hours=3), pages[29][-1].timestamp, START - timedelta(days=1)):
            got = store.stored_ids(wiki, [*pages, 999], cut)
            want = {p: sorted(r.rev_id for r in store.history(wiki, p, until=cut)) for p in pages}
            assert {p: sorted(ids) for p, ids in got.items()} == {**want, 999: []}
            assert any(want.values()) or cut < START
        assert store.stored_ids(wiki, [], START) == {}

    def test_a_census_listing_is_held_by_shard_until_dropped(self, store, wiki):
        """spawn.census writes a listing step by step (a page's ids over several steps, one id twice when a step is
        taken again); any node reads a shard back whole; another census's listing is apart; drop removes it."""
        store.add_listing(wiki, "set/a", 0, {7: [70, 71], 8: [80]})
        store.add_listing(wiki, "set/a", 0, {7: [72, 71]})
        store.add_listing(wiki, "set/a", 1, {9: [90]})
        store.add_listing(wiki, "set/b", 0, {7: [99]})
        store.add_listing(wiki, "set/a", 2, {})
        got = store.listing(wiki, "set/a", 0)
        assert {p: sorted(set(ids)) for p, ids in got.items()} == {7: [70, 71, 72], 8: [80]}
        assert sorted(got[7]) == [70, 71, 71, 72]           # as added: the census counts each id once
        assert {p: list(ids) for p, ids in store.listing(wiki, "set/a", 1).items()} == {9: [90]}
        assert store.listing(wiki, "set/a", 2) == {}
        store.drop_listing(wiki, "set/a", 2)
        assert store.listing(wiki, "set/a", 0) == {} and store.listing(wiki, "set/a", 1) == {}
        assert {p: list(ids) for p, ids in store.listing(wiki, "set/b", 0).items()} == {7: [99]}
