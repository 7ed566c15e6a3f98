"""Fixtures for spawn integration tests: a fresh Cassandra keyspace per test (a harvest of the same
article in another test must not look like a resume), and spawn configuration on the real wiki."""
import uuid

import pytest

from shared.config import SpawnConfig
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.cql_schema import apply_schema

SECRET = "spawn-integration-secret"


@pytest.fixture
def keyspace(cassandra_session):
    name = f"bw_spawn_{uuid.uuid4().hex[:10]}"
    apply_schema(cassandra_session, name, 1)
    yield name
    cassandra_session.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=60)


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
