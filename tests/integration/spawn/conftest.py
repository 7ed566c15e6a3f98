"""Fixtures for spawn integration tests: a store on a fresh Cassandra keyspace per test (tests/fixtures/cassandra.py,
`keyspace`), and spawn configuration on the real wiki."""

import pytest

from shared.config import SpawnConfig
from shared.revisions.cassandra_store import CassandraRevisionStore

SECRET = "spawn-integration-secret"


@pytest.fixture
def store(cassandra_session, keyspace):
    s = CassandraRevisionStore(cassandra_session, keyspace)
    yield s
    s.close()


@pytest.fixture
def spawn_config(mediawiki, keyspace, tmp_path):
    return SpawnConfig.from_env({"BW_NODE_SECRET": SECRET, "BW_CASSANDRA_HOSTS": "127.0.0.1",
                                 "BW_CASSANDRA_KEYSPACE": keyspace, "BW_DATA_DIR": str(tmp_path),
                                 "BW_HOST_DELAY_S": "0", "BW_USER_AGENT": mediawiki.user_agent})
