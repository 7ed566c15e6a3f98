"""Rewriting cassandra/schema.cql for another keyspace and replication (no server needed)."""
import pytest

from shared.revisions.cql_schema import SCHEMA_PATH, render, replication_map, split_statements


def test_split_ignores_comments_and_keeps_quoted_separators():
    script = """-- header; with a semicolon
    CREATE TABLE a.t (k int PRIMARY KEY) WITH comment = 'x; -- not a comment';  // trailing
    INSERT INTO a.t (k) VALUES (1);
    """
    assert split_statements(script) == [
        "CREATE TABLE a.t (k int PRIMARY KEY) WITH comment = 'x; -- not a comment'",
        "INSERT INTO a.t (k) VALUES (1)",
    ]


def test_render_renames_the_keyspace_everywhere_and_sets_replication():
    statements = render(SCHEMA_PATH.read_text(), "bw_prod", replication_map(3, ["eu-west", "us-east"]))
    assert statements[0] == ("CREATE KEYSPACE IF NOT EXISTS bw_prod WITH replication = "
                             "{'class': 'NetworkTopologyStrategy', 'eu-west': '3', 'us-east': '3'}")
    tables = [s for s in statements[1:] if not s.startswith("ALTER")]
    assert len(tables) == 13
    assert all(s.startswith("CREATE TABLE IF NOT EXISTS bw_prod.") for s in tables)
    # columns added after a table shipped reach keyspaces created before, and running it again is harmless
    assert [s for s in statements if s.startswith("ALTER")] == [
        "ALTER TABLE IF EXISTS bw_prod.pages ADD IF NOT EXISTS deleted boolean"]
    assert not any("blackwidow." in s for s in statements)


def test_replication_can_be_given_verbatim():
    assert replication_map({"class": "SimpleStrategy", "replication_factor": 1}, []) == \
        "{'class': 'SimpleStrategy', 'replication_factor': '1'}"
    with pytest.raises(ValueError, match="class"):
        replication_map({"dc1": 3}, [])
    with pytest.raises(ValueError, match="replication"):
        replication_map(0, ["dc1"])


@pytest.mark.parametrize("name", ["1abc", "a-b", "x" * 49, "ks; DROP KEYSPACE y"])
def test_keyspace_names_are_validated(name):
    with pytest.raises(ValueError, match="keyspace"):
        render(SCHEMA_PATH.read_text(), name, "{'class': 'SimpleStrategy', 'replication_factor': '1'}")
