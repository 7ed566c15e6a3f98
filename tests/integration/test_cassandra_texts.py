"""History-native text storage, revision deletion and exact counters with two concurrent writers, on the
real local Cassandra."""
import dataclasses
from datetime import timedelta
import threading
import uuid

import pytest
from cassandra.query import BatchStatement

from shared.revisions.cassandra_store import CassandraRevisionStore, cluster_for
from shared.revisions.derived import month_of
from tests.fixtures.cassandra import HOSTS, PORT
from tests.revision_store_contract import make_history

pytestmark = pytest.mark.integration

PARAGRAPH = "'''Spider silk''' is a [[protein]] fibre spun by [[spider]]s. It is strong and elastic. "


def article(i: int) -> str:
    """A long article that grows one sentence per edit: edit i is a near-copy of edit i-1."""
    return "== History ==\n" + PARAGRAPH * 200 + "".join(f"Edit {k} added this sentence.\n" for k in range(i))


def with_texts(wiki: str, page_id: int, texts: list[str]):
    return [dataclasses.replace(r, content=t) for r, t in zip(make_history(wiki, page_id, len(texts)), texts)]


def body_bytes(session, keyspace: str, wiki: str, page_id: int) -> tuple[int, int]:
    """(bytes of every stored body of the page, rows) over its groups."""
    groups = session.execute(session.prepare(
        f"SELECT grp FROM {keyspace}.text_groups WHERE wiki = ? AND page_id = ?"), (wiki, page_id))
    rows = [row for g in groups for row in session.execute(session.prepare(
        f"SELECT body FROM {keyspace}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ?"), (wiki, page_id, g.grp))]
    return sum(len(row.body or b"") for row in rows), len(rows)


@pytest.fixture
def wiki():
    return f"texts-{uuid.uuid4().hex[:8]}.example.org"


def test_near_copies_and_reverts_cost_little_and_every_text_reads_back(
        cassandra_session, cassandra_keyspace, cassandra_revision_store, wiki):
    texts = [article(i) for i in range(40)]
    texts[20] = "VANDALISM " * 30        # blanked, then the revert restores revision 19's text exactly
    texts[21] = texts[19]
    revisions = with_texts(wiki, 5, texts)
    cassandra_revision_store.write(revisions[:25])
    cassandra_revision_store.write(revisions[25:])
    assert [cassandra_revision_store.content(wiki, r.rev_id) for r in revisions] == texts
    raw = sum(len(t.encode()) for t in texts)
    stored, rows = body_bytes(cassandra_session, cassandra_keyspace, wiki, 5)
    assert stored * 10 < raw
    # 39 distinct texts: the revert has no blob of its own
    pointers = {cassandra_session.execute(cassandra_session.prepare(
        f"SELECT blob FROM {cassandra_keyspace}.revision_text WHERE wiki = ? AND rev_id = ?"),
        (wiki, r.rev_id)).one().blob for r in revisions}
    assert len(pointers) == 39 and revisions[19].rev_id in pointers and revisions[21].rev_id not in pointers


def test_a_replay_and_another_writer_add_no_body(cassandra_session, cassandra_keyspace, cassandra_revision_store,
                                                 wiki):
    revisions = with_texts(wiki, 6, [article(i) for i in range(10)])
    cassandra_revision_store.write(revisions)
    before = body_bytes(cassandra_session, cassandra_keyspace, wiki, 6)
    cassandra_revision_store.write(revisions)
    CassandraRevisionStore(cassandra_session, cassandra_keyspace).write(revisions[3:])
    assert body_bytes(cassandra_session, cassandra_keyspace, wiki, 6) == before


def test_a_new_writer_continues_the_pages_group(cassandra_session, cassandra_keyspace, cassandra_revision_store,
                                                wiki):
    revisions = with_texts(wiki, 7, [article(i) for i in range(12)])
    cassandra_revision_store.write(revisions[:6])
    other = CassandraRevisionStore(cassandra_session, cassandra_keyspace)    # nothing remembered
    other.write(revisions[6:])
    groups = list(cassandra_session.execute(cassandra_session.prepare(
        f"SELECT grp FROM {cassandra_keyspace}.text_groups WHERE wiki = ? AND page_id = ?"), (wiki, 7)))
    assert [g.grp for g in groups] == [revisions[0].rev_id]
    assert [other.content(wiki, r.rev_id) for r in revisions] == [r.content for r in revisions]


def test_hiding_texts_removes_them_and_keeps_every_other(cassandra_session, cassandra_keyspace,
                                                         cassandra_revision_store, wiki):
    texts = [article(i) for i in range(8)]
    texts[5] = texts[2]                  # a revert: revision 2's text is also revision 5's
    revisions = with_texts(wiki, 8, texts)
    store = cassandra_revision_store
    store.write(revisions)
    anchor, plain, shared = revisions[0].rev_id, revisions[3].rev_id, revisions[2].rev_id
    for rev_id in (plain, anchor, shared):
        assert store.hide_revision_fields(wiki, rev_id, text=True)
    hidden = {plain, anchor, shared}
    assert [store.content(wiki, r.rev_id) for r in revisions] == \
        [None if r.rev_id in hidden else r.content for r in revisions]
    # the anchor's text is gone from storage (its group was rebuilt around another text), while the
    # shared text stays for the revision that still shows it
    stored, _ = body_bytes(cassandra_session, cassandra_keyspace, wiki, 8)
    blobs = cassandra_session.execute(cassandra_session.prepare(
        f"SELECT blob, base FROM {cassandra_keyspace}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ?"),
        (wiki, 8, anchor))
    assert {row.blob for row in blobs} == {0, shared, revisions[1].rev_id, revisions[4].rev_id,
                                           revisions[6].rev_id, revisions[7].rev_id}
    assert {row.base for row in cassandra_session.execute(cassandra_session.prepare(
        f"SELECT base FROM {cassandra_keyspace}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ?"),
        (wiki, 8, anchor))} == {revisions[1].rev_id}
    assert [r.text_hidden for r in store.history(wiki, 8)][::-1] == [r.rev_id in hidden for r in revisions]
    assert not store.hide_revision_fields(wiki, 1, text=True)        # not stored


def test_hiding_a_user_and_a_comment(cassandra_session, cassandra_keyspace, cassandra_revision_store, wiki):
    revisions = make_history(wiki, 9, 6)
    target = revisions[2]
    cassandra_revision_store.write(revisions)
    cassandra_revision_store.hide_revision_fields(wiki, target.rev_id, user=True, comment=True)
    got = {r.rev_id: r for r in cassandra_revision_store.history(wiki, 9)}[target.rev_id]
    assert (got.user, got.user_id, got.user_hidden, got.comment, got.comment_hidden) == (None, None, True, None, True)
    in_user = cassandra_session.execute(cassandra_session.prepare(
        f"SELECT rev_id FROM {cassandra_keyspace}.revisions_by_user WHERE wiki = ? AND user_text = ? AND month = ?"),
        (wiki, target.user, month_of(target.timestamp)))
    assert target.rev_id not in {row.rev_id for row in in_user}


def test_two_writers_of_one_page_at_once_keep_the_counts_exact(cassandra_keyspace, wiki):
    """Two spawns (two driver clusters) write interleaved slices of one page's history at the same time,
    round after round; page_months and pages.revisions must equal the rows stored."""
    revisions = make_history(wiki, 11, 240, step=timedelta(hours=7))
    clusters = [cluster_for(HOSTS, PORT) for _ in range(2)]
    try:
        stores = [CassandraRevisionStore(c.connect(), cassandra_keyspace) for c in clusters]
        rounds = [revisions[i:i + 24] for i in range(0, len(revisions), 24)]
        for chunk in rounds:
            halves = (chunk[0::2], chunk[1::2])        # same months, disjoint rows
            barrier = threading.Barrier(2)
            errors: list[BaseException] = []

            def write(store, part):
                try:
                    barrier.wait()
                    store.write(part)
                except BaseException as exc:
                    errors.append(exc)
            threads = [threading.Thread(target=write, args=(s, h)) for s, h in zip(stores, halves)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors
        session = stores[0]._session
        months = {row.month: row.revisions for row in session.execute(session.prepare(
            f"SELECT month, revisions FROM {cassandra_keyspace}.page_months WHERE wiki = ? AND page_id = ?"),
            (wiki, 11))}
        want: dict[int, int] = {}
        for r in revisions:
            want[month_of(r.timestamp)] = want.get(month_of(r.timestamp), 0) + 1
        assert months == want
        state = stores[1].page(wiki, 11)
        assert (state.revisions, state.latest_rev_id) == (240, revisions[-1].rev_id)
    finally:
        for c in clusters:
            c.shutdown()


def query_ids(statement) -> set[bytes]:
    """The prepared statements a request runs: one bound statement, or an unlogged batch of them."""
    if isinstance(statement, BatchStatement):
        return {query_id for _, query_id, _ in statement._statements_and_parameters}
    return {statement.prepared_statement.query_id} if hasattr(statement, "prepared_statement") else set()


class CommitsLate:
    """A session whose first write of month counts (the writer's commit) waits until told: the writer has
    counted, and another writer stores rows and commits meanwhile."""

    def __init__(self, session, counts_query_id: bytes):
        self._session, self.counted, self.go, self._first = session, threading.Event(), threading.Event(), True
        self._counts = counts_query_id

    def __getattr__(self, name):
        return getattr(self._session, name)

    def execute_async(self, statement, *args, **kwargs):
        if self._counts in query_ids(statement) and self._first:
            self._first = False
            self.counted.set()
            self.go.wait(30)
        return self._session.execute_async(statement, *args, **kwargs)


def test_a_writer_whose_commit_lands_last_with_a_smaller_count_does_not_lower_it(cassandra_keyspace, wiki):
    """Spawn A counts its month, then stalls; spawn B writes the rest of that month and commits; A's
    commit lands last. The previous writer kept A's count (10 of 20); the count must stay exact."""
    revisions = make_history(wiki, 12, 20, step=timedelta(hours=1))          # one month
    clusters = [cluster_for(HOSTS, PORT) for _ in range(2)]
    try:
        a, b = (CassandraRevisionStore(c.connect(), cassandra_keyspace) for c in clusters)
        late = a._session = CommitsLate(a._session, a._ps["page_month"].query_id)
        writer = threading.Thread(target=a.write, args=(revisions[:10],))
        writer.start()
        assert late.counted.wait(30)
        b.write(revisions[10:])
        late.go.set()
        writer.join(30)
        assert b.page(wiki, 12).revisions == 20
        session = clusters[1].connect()
        assert [tuple(row) for row in session.execute(session.prepare(
            f"SELECT month, revisions FROM {cassandra_keyspace}.page_months WHERE wiki = ? AND page_id = ?"),
            (wiki, 12))] == [(month_of(revisions[0].timestamp), 20)]
    finally:
        for c in clusters:
            c.shutdown()
