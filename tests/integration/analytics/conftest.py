"""Session fixtures for the analysts' tests: the local wiki (change tags included, as seeded) harvested for
real by the spawn's code into a fresh Cassandra keyspace and into a SQLite file, plus the generator's
answers."""
import time
import uuid
from dataclasses import dataclass

import pytest

from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.cql_schema import apply_schema
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.integration.analytics.expected import Edit, edits_by_title
from tests.integration.analytics.harvest import harvest, wiki_pages


@dataclass
class Harvest:
    store: object
    wiki: str                                   # storage key of the local wiki
    page_ids: dict[str, int]                    # title -> page id, as harvested
    seconds: float
    location: str                               # the Cassandra keyspace or the SQLite file


@pytest.fixture(scope="session")
def expected_edits(mediawiki) -> dict[str, list[Edit]]:
    return edits_by_title(mediawiki.expected)


@pytest.fixture(scope="session")
def wiki_page_info(mediawiki, expected_edits) -> dict[str, tuple[int, int]]:
    return wiki_pages(mediawiki, sorted(expected_edits))


def _harvest(mediawiki, store, titles, location: str) -> Harvest:
    started = time.monotonic()
    ids = harvest(mediawiki, store, titles)
    seconds = time.monotonic() - started
    print(f"\nharvested {len(titles)} articles into {type(store).__name__} in {seconds:.1f}s")
    return Harvest(store, wiki_key(mediawiki.api_url), ids, seconds, location)


@pytest.fixture(scope="session")
def cassandra_harvest(cassandra_session, mediawiki, expected_edits):
    keyspace = f"bw_analytics_{uuid.uuid4().hex[:10]}"
    apply_schema(cassandra_session, keyspace, 1)
    store = CassandraRevisionStore(cassandra_session, keyspace)
    try:
        yield _harvest(mediawiki, store, sorted(expected_edits), keyspace)
    finally:
        store.close()
        cassandra_session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)


@pytest.fixture(scope="session")
def sqlite_harvest(tmp_path_factory, mediawiki, expected_edits):
    path = tmp_path_factory.mktemp("analytics") / "revisions.db"
    store = SQLiteRevisionStore(str(path))
    try:
        yield _harvest(mediawiki, store, sorted(expected_edits), str(path))
    finally:
        store.close()
