"""The RevisionStore contract on the real local Cassandra, plus the query tables the analysts read."""
import dataclasses
import logging
from datetime import timedelta

import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT

from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.cql_schema import apply_schema
from shared.revisions.derived import DAY_SHARDS, id_block, month_of
from shared.revisions.store import StoreError
from tests.revision_store_contract import RevisionStoreContract, make_history

pytestmark = pytest.mark.integration

TABLES = {"revisions_by_page", "page_months", "pages", "pages_by_title", "revisions_by_id_block",
          "revisions_by_user", "revisions_by_day", "revisions_by_tag", "revision_text", "text_blobs",
          "text_sha1", "text_groups", "census_listing"}


class TestCassandraRevisionStore(RevisionStoreContract):
    @pytest.fixture
    def store(self, cassandra_revision_store):
        return cassandra_revision_store

    @pytest.fixture
    def stored_size_delta(self, cassandra_session, cassandra_keyspace):
        by_id = cassandra_session.prepare(
            f"SELECT page_id, rev_ts FROM {cassandra_keyspace}.revisions_by_id_block "
            "WHERE wiki = ? AND id_block = ? AND rev_id = ?")
        by_page = cassandra_session.prepare(
            f"SELECT size_delta FROM {cassandra_keyspace}.revisions_by_page "
            "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?")

        def read(wiki, rev_id):
            key = cassandra_session.execute(by_id, (wiki, id_block(rev_id), rev_id)).one()
            month = key.rev_ts.year * 100 + key.rev_ts.month
            return cassandra_session.execute(by_page, (wiki, key.page_id, month, key.rev_ts, rev_id)).one()[0]
        return read

    @pytest.fixture
    def poisoned(self):
        # a tag is a partition key of revisions_by_tag; keys are capped at 64 KiB, so its insert fails
        return lambda revision: dataclasses.replace(revision, tags=("x" * 70_000,))

    @pytest.fixture
    def store_env(self, cassandra_keyspace):
        return {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": cassandra_keyspace}


def test_schema_has_one_table_per_query_with_time_bounded_keys(cassandra_cluster, cassandra_keyspace):
    tables = cassandra_cluster.metadata.keyspaces[cassandra_keyspace].tables
    assert set(tables) == TABLES
    by_page = tables["revisions_by_page"]
    assert [c.name for c in by_page.partition_key] == ["wiki", "page_id", "month"]
    assert [(c.name, c.is_reversed) for c in by_page.clustering_key] == [("rev_ts", True), ("rev_id", True)]
    assert [c.name for c in tables["revisions_by_user"].partition_key] == ["wiki", "user_text", "month"]
    assert [c.name for c in tables["revisions_by_day"].partition_key] == ["wiki", "day", "shard"]
    assert [c.name for c in tables["revisions_by_tag"].partition_key] == ["wiki", "tag", "month"]
    assert [c.name for c in tables["revision_text"].partition_key] == ["wiki", "rev_id"]
    assert [c.name for c in tables["text_blobs"].partition_key] == ["wiki", "page_id", "grp"]
    assert [c.name for c in tables["pages"].partition_key] == ["wiki", "page_id"]
    listing = tables["census_listing"]
    assert [c.name for c in listing.partition_key] == ["wiki", "census", "shard"]
    assert listing.options["default_time_to_live"] == 30 * 86400      # what a census cut short leaves goes


def test_applying_the_schema_again_is_harmless(cassandra_session, cassandra_keyspace):
    assert apply_schema(cassandra_session, cassandra_keyspace, 1) == 0      # no legacy table: nothing copied


def test_a_keyspace_made_before_id_blocks_has_its_revisions_by_id_copied(cassandra_session, keyspace):
    """The legacy table, one partition per revision, as the schema made it: its rows land in their blocks, the same
    on a second run, and the store reads a copied revision's size as a parent's."""
    cassandra_session.execute(f"CREATE TABLE {keyspace}.revisions_by_id (wiki text, rev_id bigint, page_id bigint, "
                              "rev_ts timestamp, size int, PRIMARY KEY ((wiki, rev_id)))", timeout=60)
    wiki, page = "legacy.example.org", make_history("legacy.example.org", 5, 2)
    legacy = cassandra_session.prepare(f"INSERT INTO {keyspace}.revisions_by_id (wiki, rev_id, page_id, rev_ts, size) "
                                       "VALUES (?, ?, ?, ?, ?)")
    for r, rev_id in zip(page, (1005, 2999)):       # ids of two blocks
        cassandra_session.execute(legacy, (wiki, rev_id, r.page_id, r.timestamp, r.size))
    assert apply_schema(cassandra_session, keyspace, 1) == 2
    assert apply_schema(cassandra_session, keyspace, 1) == 2
    blocks = cassandra_session.prepare(f"SELECT rev_id, page_id, size FROM {keyspace}.revisions_by_id_block "
                                       "WHERE wiki = ? AND id_block = ?")
    got = {block: [tuple(row) for row in cassandra_session.execute(blocks, (wiki, block))] for block in (1, 2)}
    assert got == {1: [(1005, 5, page[0].size)], 2: [(2999, 5, page[1].size)]}
    child = dataclasses.replace(page[1], rev_id=3000, parent_id=2999, size=page[1].size + 7,
                                timestamp=page[1].timestamp + timedelta(minutes=1))
    CassandraRevisionStore(cassandra_session, keyspace).write([child])      # a parent it did not write: read
    delta = cassandra_session.execute(
        f"SELECT size_delta FROM {keyspace}.revisions_by_page WHERE wiki = %s AND page_id = %s AND month = %s "
        "AND rev_ts = %s AND rev_id = %s", (wiki, 5, month_of(child.timestamp), child.timestamp, 3000)).one()
    assert delta.size_delta == 7


def test_statements_are_prepared_idempotent_and_local_quorum(cassandra_cluster, cassandra_revision_store):
    statements = cassandra_revision_store._ps.values()
    assert statements and all(ps.is_idempotent for ps in statements)
    profile = cassandra_cluster.profile_manager.profiles[EXEC_PROFILE_DEFAULT]
    assert profile.consistency_level == ConsistencyLevel.LOCAL_QUORUM


def test_query_tables_answer_the_analysts_questions(cassandra_session, cassandra_keyspace,
                                                    cassandra_revision_store):
    wiki = "analyst.example.org"
    revisions = make_history(wiki, 21, 40)
    hidden = dataclasses.replace(revisions[-1], user=None, user_id=None, user_hidden=True)
    cassandra_revision_store.write([*revisions[:-1], hidden])

    def rows(table, where, *params):
        cql = f"SELECT * FROM {cassandra_keyspace}.{table} WHERE {where}"
        return list(cassandra_session.execute(cassandra_session.prepare(cql), params))

    def in_month(r, month):
        return r.timestamp.year * 100 + r.timestamp.month == month

    # a user's edits in a month, newest first
    expected = [r.rev_id for r in reversed(revisions[:-1]) if r.user == "Editor1" and in_month(r, 202302)]
    got = rows("revisions_by_user", "wiki = ? AND user_text = ? AND month = ?", wiki, "Editor1", 202302)
    assert expected and [r.rev_id for r in got] == expected
    # everything edited on a day, over the day's shards
    day = revisions[3].timestamp.date()
    on_day = [r.rev_id for shard in range(DAY_SHARDS)
              for r in rows("revisions_by_day", "wiki = ? AND day = ? AND shard = ?", wiki, day, shard)]
    assert sorted(on_day) == sorted(r.rev_id for r in revisions if r.timestamp.date() == day)
    # revisions carrying a tag in a month
    tagged = rows("revisions_by_tag", "wiki = ? AND tag = ? AND month = ?", wiki, "visualeditor", 202302)
    assert {r.rev_id for r in tagged} == {r.rev_id for r in revisions
                                          if "visualeditor" in r.tags and in_month(r, 202302)}
    # the months of an article, newest first, with their counts; the title lookup
    months = rows("page_months", "wiki = ? AND page_id = ?", wiki, 21)
    assert sum(m.revisions for m in months) == 40 and months[0].month > months[-1].month
    assert rows("pages_by_title", "wiki = ? AND title = ?", wiki, "Spider web")[0].page_id == 21
    # a hidden user is in the page history but in no user's partition
    newest = rows("revisions_by_page", "wiki = ? AND page_id = ? AND month = ? LIMIT 1", wiki, 21,
                  hidden.timestamp.year * 100 + hidden.timestamp.month)[0]
    assert (newest.rev_id, newest.user_hidden, newest.user_text) == (hidden.rev_id, True, None)


def test_batches_stay_under_the_servers_warning_thresholds(caplog, cassandra_revision_store):
    # the longest fields MediaWiki allows (500-character comments, 255-byte titles), a new day,
    # user and tag partition for almost every revision: the grouping's worst case
    wiki = "batches.example.org"
    revisions = [dataclasses.replace(r, title="T" * 255, comment="ü" * 500, user=f"Editor {r.rev_id}",
                                     tags=(f"tag-{r.rev_id % 7}",))
                 for r in make_history(wiki, 9, 500, step=timedelta(hours=31))]
    with caplog.at_level(logging.WARNING):
        cassandra_revision_store.write(revisions)
    # the driver logs the server's warnings ("Server warning: Unlogged batch covering 11 partitions ...")
    assert [r.getMessage() for r in caplog.records] == []
    assert len(list(cassandra_revision_store.history(wiki, 9))) == 500


def test_a_parent_written_by_another_store_is_read_for_the_size_delta(cassandra_session, cassandra_keyspace,
                                                                      cassandra_revision_store):
    # a store remembers the newest size of the pages it wrote; another node's store reads it
    revisions = make_history("parents.example.org", 4, 6)
    cassandra_revision_store.write(revisions[:3])
    CassandraRevisionStore(cassandra_session, cassandra_keyspace).write(revisions[3:])
    delta = cassandra_session.prepare(
        f"SELECT size_delta FROM {cassandra_keyspace}.revisions_by_page "
        "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?")
    stored = [cassandra_session.execute(delta, ("parents.example.org", 4, month_of(r.timestamp), r.timestamp,
                                                r.rev_id)).one().size_delta for r in revisions]
    assert stored == [500, 120, 120, 120, -40, 120]


def test_a_missing_keyspace_is_a_clear_error(cassandra_session):
    with pytest.raises(StoreError, match="apply cassandra/schema.cql"):
        CassandraRevisionStore(cassandra_session, "bw_no_such_keyspace")
