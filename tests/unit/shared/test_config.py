import pytest

from shared.config import HubConfig, SpawnConfig
from shared.errors import ConfigError


def test_hub_config_defaults_to_embedded_sqlite(tmp_path):
    cfg = HubConfig.from_env({"BW_ADMIN_TOKEN": "a", "BW_NODE_SECRET": "n", "BW_DATA_DIR": str(tmp_path)})
    assert cfg.database_url == f"sqlite:///{tmp_path}/blackwidow.db"
    assert cfg.routing == "modulo" and cfg.cassandra_hosts == ()
    assert (cfg.census_shards, cfg.census_interval_s) == (16, 86400.0)


def test_missing_secret_names_the_variable():
    with pytest.raises(ConfigError, match="BW_NODE_SECRET"):
        SpawnConfig.from_env({})


@pytest.mark.parametrize("key,value", [("BW_POLL_INTERVAL_S", "soon"), ("BW_LOG_JSON", "maybe"),
                                       ("BW_ROUTING", "random"), ("BW_CENSUS_SHARDS", "-1"),
                                       ("BW_CENSUS_SHARDS", "257"), ("BW_CENSUS_INTERVAL_S", "0")])
def test_malformed_values_name_the_variable(key, value):
    env = {"BW_ADMIN_TOKEN": "a", "BW_NODE_SECRET": "n", key: value}
    with pytest.raises(ConfigError, match=key):
        HubConfig.from_env(env)


def test_cassandra_hosts_list():
    cfg = SpawnConfig.from_env({"BW_NODE_SECRET": "n", "BW_CASSANDRA_HOSTS": "127.0.0.1, 127.0.0.2"})
    assert cfg.cassandra_hosts == ("127.0.0.1", "127.0.0.2")


def test_spawns_read_the_hubs_wiki_allowlist_with_the_same_default():
    hub = HubConfig.from_env({"BW_ADMIN_TOKEN": "a", "BW_NODE_SECRET": "n"})
    assert SpawnConfig.from_env({"BW_NODE_SECRET": "n"}).wiki_allowlist == hub.wiki_allowlist
    spawn = SpawnConfig.from_env({"BW_NODE_SECRET": "n", "BW_WIKI_ALLOWLIST": "127.0.0.1:8780, *.wikipedia.org"})
    assert spawn.wiki_allowlist == ("127.0.0.1:8780", "*.wikipedia.org")


def test_both_process_kinds_read_the_clock_skew_allowance():
    assert SpawnConfig.from_env({"BW_NODE_SECRET": "n"}).max_clock_skew_s == 0.1
    hub = HubConfig.from_env({"BW_ADMIN_TOKEN": "a", "BW_NODE_SECRET": "n", "BW_MAX_CLOCK_SKEW_S": "0.25"})
    assert hub.max_clock_skew_s == 0.25
    with pytest.raises(ConfigError, match="BW_MAX_CLOCK_SKEW_S"):
        SpawnConfig.from_env({"BW_NODE_SECRET": "n", "BW_MAX_CLOCK_SKEW_S": "-1"})
