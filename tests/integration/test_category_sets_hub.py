"""A category of the real Chamorro Wikipedia (scripts/services/mediawiki-chwiki.sh) through the hub: `blackwidow
serve` and `scheduler` on PostgreSQL, two `spawn serve` nodes writing to Cassandra, the wiki's dump re-split into 4
gzip files on the local nginx edge. The category (three articles and a subcategory holding a fourth) is made after
the dump, so the category's edits are what the API must add to what the dump holds. A `kind: category` set with
depth 1 reads its members from the dump files, then follows them as subscriptions; while it runs an article joins
the category and a member leaves it. The store ends equal to the wiki's API for every member, revision by revision
and field by field, the dump wrote no page outside the category, and the page that left keeps what was stored."""
import uuid
from urllib.parse import urlsplit

import pytest

from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.fixtures.chwiki_wiki import DBNAME
from tests.fixtures.writable_wiki import api_call
from tests.integration.coordination_support import wait_for
from tests.integration.test_chwiki_caught_up import served_dump  # noqa: F401  (a fixture)
from tests.integration.test_dump_bootstrap_hub import cluster
from tests.support.dumps import api_truth, stored_fields

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A member's history is compared with the wiki's one longest revisit interval after it caught up: 15 s, not a day.
# Not shorter: those comparisons are freshness requests, which go before every page still catching up (docs/
# upstream.md), and at one request in flight a few pages compared every second or two would hold the slot.
REVISITS = {"BW_REVISIT_MIN_S": "1", "BW_REVISIT_MAX_S": "15"}


def test_a_category_from_the_dump_follows_members_that_join_and_leave(
        postgres_url, edge, chwiki_wiki, served_dump, cassandra_session, keyspace, tmp_path):  # noqa: F811
    urls, _ = served_dump
    admin = chwiki_wiki.admin()
    picked = [p["title"] for p in api_call(chwiki_wiki.session(), chwiki_wiki.api_url, action="query", list="random",
                                           rnnamespace="0", rnfilterredir="nonredirects", rnlimit="5")
              ["query"]["random"]]
    a, b, c, d, joins = picked
    tag = uuid.uuid4().hex[:8]
    category, sub = f"BW Islands {tag}", f"BW Islets {tag}"
    for title in (a, b, c):
        admin.edit(title, f"{admin.text(title)}\n[[Category:{category}]]", "into the category")
    admin.edit(f"Category:{sub}", f"[[Category:{category}]]", "a subcategory")
    admin.edit(d, f"{admin.text(d)}\n[[Category:{sub}]]", "into the subcategory")

    wiki = urlsplit(chwiki_wiki.api_url).netloc
    hosts = f"{wiki},{urlsplit(edge.files_url).netloc}"
    with cluster(postgres_url, "category", tmp_path, keyspace, hub_hosts=hosts, spawn_hosts=hosts,
                 hub_env={"BW_MEMBERS_INTERVAL_S": "2"}, spawn_env=REVISITS) as (hub, _):
        tenant = hub.post("/v1/tenants", {"name": "islands", "quota": None})
        code, made = hub.admin("sets", "add", "--tenant", tenant["id"], "--wiki", chwiki_wiki.api_url, "--dbname",
                               DBNAME, "--category", category, "--depth", "1", *urls)
        assert code == 0, made
        assert isinstance(made, dict) and made["state"] == "listing"
        set_path = f"/v1/sets/{made['id']}"

        def titles() -> set[str]:
            items = hub.get("/v1/subscriptions", tenant_id=tenant["id"], limit="100")["items"]
            return {s["title"] for s in items}

        last: list = []

        def settled(expected: set[str]) -> bool:
            shown = hub.get(set_path)
            m = shown["members"]
            last[:] = [shown["state"], m, shown["progress"], sorted(titles())]
            return (shown["state"] == "following" and titles() == expected
                    and m["pages"] == m["complete"] == len(expected))
        try:
            wait_for(lambda: settled({a, b, c, d}), 180, 0.5, "the members read from the dump and followed")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: last seen {last}, wanted {sorted({a, b, c, d})}, budget "
                                 f"{hub.get('/v1/identities')['items']}") from None
        shown = hub.get(set_path)
        assert shown["progress"]["files_done"] == 4 and shown["members"]["error"] is None
        assert shown["members"]["node"] in hub.live_nodes() and shown["members"]["requests"] >= 2

        store = CassandraRevisionStore(cassandra_session, keyspace)
        ids = {admin.call(action="query", titles=t)["query"]["pages"][0]["pageid"]: t for t in picked}
        # the dump wrote the members' pages and no other (the subcategory's page is followed, not held)
        assert {f["page_id"] for f in stored_fields(store, wiki).values()} == {p for p, t in ids.items() if t != joins}

        # one article joins, a member leaves: the set's subscriptions follow within a listing
        admin.edit(joins, f"{admin.text(joins)}\n[[Category:{category}]]", "joins the category")
        admin.edit(b, admin.text(b).replace(f"\n[[Category:{category}]]", ""), "leaves the category")
        wait_for(lambda: settled({a, c, d, joins}), 300, 0.5, "the joined page followed, the left one dropped")

        truth = api_truth(chwiki_wiki)
        stored = stored_fields(store, wiki)
        members = {p for p, t in ids.items() if t != b}
        wanted = {r: f for r, f in truth.items() if f["page_id"] in members}
        held = {r: f for r, f in stored.items() if f["page_id"] in members}
        assert held == wanted                        # every member's history, field by field, the joined one whole
        left = {r: f for r, f in stored.items() if f["page_id"] not in members}
        assert left and all(truth[r] == f for r, f in left.items())     # what was stored of the page that left stays
