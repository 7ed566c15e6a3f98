"""`blackwidow stats text REV_ID` prints a revision's stored wikitext on Cassandra (history-native texts) and
on SQLite alike, and refuses a revision without text or an ambiguous wiki."""
import dataclasses
import io
import uuid

import pytest

from blackwidow.stats import cli
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.revision_store_contract import make_history

pytestmark = pytest.mark.integration


def history(wiki: str):
    texts = ["== Web ==\n" + "Orb webs are spiral wheel-shaped webs. " * 300 + f"Edit {i}.\n" for i in range(6)]
    return [dataclasses.replace(r, content=t) for r, t in zip(make_history(wiki, 4, 6), texts)]


def stats(env: dict, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["text", *argv], environ={"BW_NODE_SECRET": "s", **env}, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(params=["cassandra", "sqlite"])
def stored(request, tmp_path, cassandra_session, cassandra_keyspace):
    wiki = f"stats-text-{uuid.uuid4().hex[:6]}.example.org"
    revisions = history(wiki)
    if request.param == "cassandra":
        CassandraRevisionStore(cassandra_session, cassandra_keyspace).write(revisions)
        env = {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": cassandra_keyspace}
    else:
        path = str(tmp_path / "revisions.db")
        store = SQLiteRevisionStore(path)
        store.write(revisions)
        store.close()
        env = {"BW_REVISIONS_SQLITE": path}
    return env, wiki, revisions


def test_text_of_a_revision(stored):
    env, wiki, revisions = stored
    for r in (revisions[0], revisions[4]):
        assert stats(env, str(r.rev_id), "--wiki", wiki) == (0, r.content, "")


def test_a_revision_without_text_names_the_field(stored):
    env, wiki, _ = stored
    code, out, err = stats(env, "1", "--wiki", wiki)
    assert (code, out) == (2, "") and "rev_id" not in out and "no stored text for revision 1" in err
