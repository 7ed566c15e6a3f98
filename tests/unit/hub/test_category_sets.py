"""`kind: category` subscriptions through the admin API and the scheduler's ticks (blackwidow.poller), with nodes
that list the category as a real spawn does (spawn.category_members.MembersReader over a wiki stand-in): the
listing comes in part by part, becomes the set's subscriptions, and follows pages that join, leave or move."""
from dataclasses import replace

import pytest

from blackwidow import members_plan, poller
from blackwidow.members_plan import Intake, ListingState
from blackwidow.store.nodes import register_node
from shared.dump_wire import DONE, DumpReport, Resume
from shared.members_wire import PART, Member, MembersReport, digest
from shared.wire import DropAck, Poll, PutAck, SendBatchAck, StatusReport
from spawn.category_members import MembersReader
from tests.fixtures.hub import LOCAL_WIKI, api_client, hub_config
from tests.unit.hub.test_wiki_sets_api import ALLOWLIST, DUMPS

CATEGORY = "Category:Islands"


@pytest.fixture
def api(sqlite_url, hub_maker):
    return api_client(hub_config(sqlite_url, BW_WIKI_ALLOWLIST=ALLOWLIST), hub_maker)


def create(api, tenant, **extra):
    body = {"kind": "category", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "category": "Islands", **extra}
    return api.simulate_post("/v1/subscriptions", json=body)


class Wiki:
    """The category's members as the wiki lists them, answered as `list=categorymembers` does."""

    def __init__(self, members: dict[int, str]):
        self.members = members
        self.requests = 0

    def query(self, params, *, cancel=None, demand=None, parse=None):
        self.requests += 1
        body = {"query": {"categorymembers": [{"pageid": pid, "ns": 0, "title": t}
                                              for pid, t in sorted(self.members.items())]}}
        return parse(body) if parse is not None else body


class ListingSpawns:
    """A SpawnClient whose nodes list the category they are given with a real MembersReader, read afresh before
    each answer; `silent` nodes answer without their listing (a lost report)."""

    def __init__(self, node_ids: dict[str, str], wiki: Wiki):
        self.ids, self.wiki = node_ids, wiki
        self.readers: dict[str, MembersReader] = {}
        self.polls: list[tuple[str, Poll]] = []
        self.dumps: dict[str, dict[str, DumpReport]] = {}
        self.silent: set[str] = set()

    def poll(self, node_url: str, poll: Poll) -> StatusReport:
        node = self.ids[node_url]
        self.polls.append((node, poll))
        reports = {}
        for duty in poll.members:
            reader = self.readers.get(f"{node}|{duty.set_id}")
            if reader is None:
                reader = MembersReader(duty, self.wiki)                 # type: ignore[arg-type]
                self.readers[f"{node}|{duty.set_id}"] = reader
            reader.renew(duty)
            reader.read_once()
            reports[duty.set_id] = reader.report()
        named = {d.file_id for d in poll.dumps}
        return StatusReport(node_id=node, boot_id=f"boot-{node}", attached=True,
                            members={} if node in self.silent else reports,
                            dumps={f: r for f, r in self.dumps.get(node, {}).items() if f in named})

    def send_batch(self, node_url, drops, puts):
        return SendBatchAck(drops=tuple(DropAck(i, True) for i in drops),
                            puts=tuple(PutAck(p.id, "assigned", True) for p in puts))

    def send_changes(self, node_url, changes):
        return 0


@pytest.fixture
def cluster(hub_maker, sqlite_url):
    with hub_maker.begin() as session:
        node = register_node(session, "http://127.0.0.1:9001")[0].id
    wiki = Wiki({1: "Guam", 2: "Saipan", 3: "Rota"})
    spawns = ListingSpawns({"http://127.0.0.1:9001": node}, wiki)
    state = poller.PollerState()

    def tick():
        spawns.polls.clear()
        poller.poll_once(hub_maker, spawns, hub_config(sqlite_url), state=state)     # type: ignore[arg-type]
    return node, wiki, spawns, tick


def subscribed(api, tenant) -> dict[str, str]:
    items = api.simulate_get("/v1/subscriptions", params={"tenant_id": tenant["id"], "limit": 1000}).json["items"]
    return {s["title"]: s["id"] for s in items}


def test_a_category_set_becomes_one_subscription_per_member_and_follows_the_category(api, tenant, cluster):
    node, wiki, spawns, tick = cluster
    created = create(api, tenant, depth=1, content=True)
    assert created.status_code == 201, created.json
    s = created.json
    assert (s["kind"], s["category"], s["depth"], s["state"], s["files"]) == (
        "category", CATEGORY, 1, "listing", [])
    tick()
    (duty,) = spawns.polls[0][1].members
    assert (duty.category, duty.depth, duty.held, duty.tenants) == (CATEGORY, 1, None, (tenant["id"],))
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert shown["state"] == "following"
    assert (shown["members"]["node"], shown["members"]["listed"], shown["members"]["pages"],
            shown["members"]["subscribed"]) == (node, 3, 3, 3)
    subs = subscribed(api, tenant)
    assert sorted(subs) == ["Guam", "Rota", "Saipan"]
    one = api.simulate_get(f"/v1/subscriptions/{subs['Guam']}").json
    assert (one["wiki"], one["content"], one["tenant_id"]) == (LOCAL_WIKI, True, tenant["id"])

    # nothing changed: the listing travels as its digest alone, and nothing is made again
    tick()
    assert spawns.polls[0][1].members[0].held is not None
    assert subscribed(api, tenant) == subs

    # Rota leaves, Tinian joins, Saipan is moved (same page, new title): only Rota's subscription goes
    wiki.members = {1: "Guam", 2: "Saipan Island", 4: "Tinian"}
    tick()
    after = subscribed(api, tenant)
    assert sorted(after) == ["Guam", "Saipan", "Tinian"]        # a moved page's subscription follows it itself
    assert after["Guam"] == subs["Guam"] and after["Saipan"] == subs["Saipan"]
    assert api.simulate_get(f"/v1/sets/{s['id']}").json["members"]["pages"] == 3


def test_the_tenants_own_subscription_is_counted_and_never_removed(api, tenant, cluster):
    _, wiki, _, tick = cluster
    own = api.simulate_post("/v1/subscriptions",
                            json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "Guam"}).json
    s = create(api, tenant).json
    tick()
    subs = subscribed(api, tenant)
    assert subs["Guam"] == own["id"] and len(subs) == 3
    assert api.simulate_get(f"/v1/sets/{s['id']}").json["members"]["subscribed"] == 3
    wiki.members = {2: "Saipan"}
    tick()
    assert sorted(subscribed(api, tenant)) == ["Guam", "Saipan"]       # the tenant's own stays
    assert api.simulate_delete(f"/v1/sets/{s['id']}").status_code == 204
    assert list(subscribed(api, tenant)) == ["Guam"]


def test_a_member_whose_own_subscription_the_tenant_deletes_gets_the_sets_at_the_next_listing(api, tenant, cluster):
    _, wiki, _, tick = cluster
    own = api.simulate_post("/v1/subscriptions",
                            json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "Guam"}).json
    create(api, tenant)
    tick()
    assert api.simulate_delete(f"/v1/subscriptions/{own['id']}").status_code == 204
    wiki.members = {1: "Guam", 2: "Saipan"}          # the next listing differs, so the set follows it again
    tick()
    subs = subscribed(api, tenant)
    assert sorted(subs) == ["Guam", "Saipan"] and subs["Guam"] != own["id"]


def test_two_tenants_sets_share_each_pages_source(api, tenant, cluster):
    _, _, _, tick = cluster
    other = api.simulate_post("/v1/tenants", json={"name": "other", "quota": None}).json
    create(api, tenant)
    create(api, other)
    tick()
    mine, theirs = (api.simulate_get("/v1/subscriptions", params={"tenant_id": t["id"]}).json["items"]
                    for t in (tenant, other))
    assert {s["source_uuid"] for s in mine} == {s["source_uuid"] for s in theirs} and len(mine) == 3


def test_a_long_listing_comes_in_part_by_part_and_a_lost_part_is_asked_again(api, tenant, cluster):
    node, wiki, spawns, tick = cluster
    wiki.members = {pid: f"Page {pid}" for pid in range(1, PART + 6)}
    s = create(api, tenant).json
    tick()
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert (shown["state"], shown["members"]["subscribed"]) == ("listing", 0)      # nothing before it is whole
    assert spawns.polls[0][1].members[0].next_part == 0
    spawns.silent.add(node)
    tick()                                                       # the second part is lost
    assert spawns.polls[0][1].members[0].next_part == 1
    spawns.silent.clear()
    tick()
    assert spawns.polls[0][1].members[0].next_part == 1          # asked for again
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert (shown["state"], shown["members"]["pages"], shown["members"]["subscribed"]) == (
        "following", PART + 5, PART + 5)


def test_a_category_set_with_dumps_reads_its_members_from_them_before_subscribing(api, tenant, cluster):
    node, _, spawns, tick = cluster
    s = create(api, tenant, dumps=DUMPS[:1]).json
    (file_id,) = (f["id"] for f in s["files"])
    assert s["state"] == "listing"
    tick()              # the listing comes in; the file waited for it
    assert spawns.polls[0][1].dumps == ()
    tick()
    (duty,) = spawns.polls[0][1].dumps
    assert duty.page_ids == (1, 2, 3)
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert (shown["state"], shown["members"]["subscribed"]) == ("bootstrapping", 0)
    spawns.dumps[node] = {file_id: DumpReport(file_id, DONE, resume=Resume(3, 3, 30))}
    tick()
    assert sorted(subscribed(api, tenant)) == ["Guam", "Rota", "Saipan"]
    assert api.simulate_get(f"/v1/sets/{s['id']}").json["state"] == "following"


def test_stopping_a_category_set_stops_its_subscriptions(api, tenant, cluster):
    _, _, _, tick = cluster
    s = create(api, tenant).json
    tick()
    api.simulate_patch(f"/v1/sets/{s['id']}", json={"enabled": False})
    items = api.simulate_get("/v1/subscriptions", params={"tenant_id": tenant["id"]}).json["items"]
    assert {i["state"] for i in items} == {"disabled"}
    api.simulate_patch(f"/v1/sets/{s['id']}", json={"enabled": True})
    items = api.simulate_get("/v1/subscriptions", params={"tenant_id": tenant["id"]}).json["items"]
    assert {i["enabled"] for i in items} == {True}


@pytest.mark.parametrize("extra, field", [
    ({"category": None}, "category"),
    ({"category": ""}, "category"),
    ({"category": "Category:"}, "category"),
    ({"category": "A|B"}, "category"),
    ({"depth": -1}, "depth"),
    ({"depth": 11}, "depth"),
    ({"namespaces": [0]}, "namespaces"),
    ({"dumps": []}, "dumps"),
    ({"kind": "wiki", "dumps": DUMPS}, "category"),
    ({"kind": "wiki", "category": None, "depth": 1, "dumps": DUMPS}, "depth"),
    ({"kind": "wiki", "category": None}, "dumps"),
])
def test_bad_category_sets_are_refused_naming_the_field(api, tenant, extra, field):
    body = {"kind": "category", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "category": "Islands", **extra}
    body = {k: v for k, v in body.items() if v is not None}
    resp = api.simulate_post("/v1/subscriptions", json=body)
    assert (resp.status_code, resp.json["error"]["field"]) == (422, field), resp.json
    assert api.simulate_get("/v1/sets").json["items"] == []


@pytest.mark.parametrize("given, kept", [("Islands", "Category:Islands"), ("Category:Islands", "Category:Islands"),
                                         ("category:Islands", "category:Islands"),
                                         ("Islands_of_Guam", "Category:Islands of Guam")])
def test_the_category_is_named_with_its_prefix(api, tenant, given, kept):
    assert create(api, tenant, category=given).json["category"] == kept


# --- the rules alone ----------------------------------------------------------------------------------------------

A, B = Member(1, 0, "A"), Member(2, 0, "B")
BASE = ListingState(set_id="s", wiki=LOCAL_WIKI, tenant_id="t", category=CATEGORY, node="n")
D1, D2 = digest([A]), digest([A, B])


@pytest.mark.parametrize("state, report, after, intake", [
    # not read yet: nothing
    (BASE, MembersReport("s"), BASE, None),
    # a one-part listing is held at once
    (BASE, MembersReport("s", D1, 1, 1, 0, (A,)), replace(BASE, held=D1, total=1),
     Intake(D1, (A,), complete=True)),
    # the held one again: nothing to write
    (replace(BASE, held=D1), MembersReport("s", D1, 1, 1), replace(BASE, held=D1, total=1), None),
    # the first of two parts: coming in
    (BASE, MembersReport("s", D2, 2, 2, 0, (A,)), replace(BASE, receiving=D2, next_part=1),
     Intake(D2, (A,), complete=False)),
    # its second part: held
    (replace(BASE, receiving=D2, next_part=1), MembersReport("s", D2, 2, 2, 1, (B,)),
     replace(BASE, held=D2, total=2), Intake(D2, (B,), complete=True)),
    # a part taken already: ignored
    (replace(BASE, receiving=D2, next_part=1), MembersReport("s", D2, 2, 2, 0, (A,)),
     replace(BASE, receiving=D2, next_part=1), Intake(D2, (A,), complete=False)),
    # a part of a listing not coming in: ignored
    (replace(BASE, receiving=D1, next_part=1), MembersReport("s", D2, 2, 2, 1, (B,)),
     replace(BASE, receiving=D1, next_part=1), None),
    # a new listing while another came in: starts over at its first part
    (replace(BASE, receiving=D1, next_part=1), MembersReport("s", D2, 2, 2, 0, (A,)),
     replace(BASE, receiving=D2, next_part=1), Intake(D2, (A,), complete=False)),
])
def test_parts_are_taken_once_and_in_order(state, report, after, intake):
    listings, intakes = members_plan.taken_in({"s": state}, {"n": {"s": report}})
    assert listings["s"] == after
    assert intakes.get("s") == intake


def test_only_the_sets_own_node_is_heard():
    report = MembersReport("s", D1, 1, 1, 0, (A,))
    listings, intakes = members_plan.taken_in({"s": BASE}, {"other": {"s": report}})
    assert (listings["s"], intakes) == (BASE, {})


def test_a_listing_keeps_its_node_while_it_lives_and_moves_when_it_dies():
    kept = members_plan.readers({"s": BASE}, {"n", "m"})
    assert kept["s"].node == "n"
    moved = members_plan.readers({"s": BASE}, {"m"})
    assert moved["s"].node == "m"
    assert members_plan.readers({"s": BASE}, set())["s"].node is None


@pytest.mark.parametrize("files, enabled, listed, state", [
    ((), True, False, "listing"),
    ((), True, True, "following"),
    (("pending",), True, True, "bootstrapping"),
    (("done", "failed"), True, True, "failed"),
    (("done",), True, True, "following"),
    (("done",), False, True, "disabled"),
])
def test_what_a_category_set_shows(files, enabled, listed, state):
    assert members_plan.set_state(files, enabled, listed) == state
