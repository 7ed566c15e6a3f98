"""The revision store's consistency levels: configurable, validated, and given to the driver's profiles."""
import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT

from shared.config import common_from_env
from shared.errors import ConfigError
from shared.revisions.cassandra_store import READ_PROFILE, cluster_for


@pytest.mark.parametrize("env, write, read", [
    ({}, "LOCAL_QUORUM", "LOCAL_QUORUM"),
    ({"BW_CASSANDRA_WRITE_CONSISTENCY": "quorum", "BW_CASSANDRA_READ_CONSISTENCY": "LOCAL_ONE"}, "QUORUM",
     "LOCAL_ONE"),
])
def test_levels_from_the_environment(env, write, read):
    config = common_from_env({"BW_NODE_SECRET": "s", **env})
    assert (config["cassandra_write_consistency"], config["cassandra_read_consistency"]) == (write, read)


def test_an_unknown_level_names_the_variable():
    with pytest.raises(ConfigError, match="BW_CASSANDRA_READ_CONSISTENCY"):
        common_from_env({"BW_NODE_SECRET": "s", "BW_CASSANDRA_READ_CONSISTENCY": "MOST"})


def test_writes_and_reads_get_their_own_profiles():
    cluster = cluster_for(["127.0.0.1"], write_consistency="QUORUM", read_consistency="LOCAL_ONE")
    profiles = cluster.profile_manager.profiles
    assert profiles[EXEC_PROFILE_DEFAULT].consistency_level == ConsistencyLevel.QUORUM
    assert profiles[READ_PROFILE].consistency_level == ConsistencyLevel.LOCAL_ONE
