from datetime import timedelta

from blackwidow.models import Node, Subscription
from shared.hashing import node_id_for
from tests.fixtures.hub import ADMIN, LOCAL_WIKI, NODE

URL = "http://127.0.0.1:8701"


def test_registration_is_idempotent_and_needs_the_node_secret(api, hub_maker):
    assert api.simulate_post("/v1/nodes", json={"url": URL}).status_code == 401    # the admin token is not it
    first = api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE)
    assert first.status_code == 201
    assert first.json == {"id": node_id_for(URL), "poll_interval_s": 2.0, "detach_after_s": 15.0,
                          "orphan_after_s": 20.0}
    with hub_maker.begin() as session:          # the poller gave up on it
        node = session.get(Node, first.json["id"])
        node.state, node.consecutive_failures = "dead", 3
    again = api.simulate_post("/v1/nodes", json={"url": URL + "/"}, headers=NODE)
    assert (again.status_code, again.json) == (200, first.json)
    listed = api.simulate_get("/v1/nodes").json["items"]
    assert [(n["id"], n["url"], n["state"], n["consecutive_failures"]) for n in listed] == \
        [(first.json["id"], URL, "live", 0)]


def test_listing_counts_assigned_subscriptions(api, tenant, hub_maker):
    ids = [api.simulate_post("/v1/nodes", json={"url": f"http://127.0.0.1:{port}"}, headers=NODE).json["id"]
           for port in (8701, 8702)]
    subs = api.simulate_post("/v1/subscriptions/bulk", json={
        "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "items": [{"title": t} for t in "ABC"]}).json["items"]
    with hub_maker.begin() as session:
        for sub, node in zip(subs, (ids[0], ids[0], ids[1])):
            session.get(Subscription, sub["id"]).node_id = node
    listed = api.simulate_get("/v1/nodes", headers=ADMIN).json["items"]
    assert [n["id"] for n in listed] == sorted(ids)
    assert {n["id"]: n["subscriptions"] for n in listed} == {ids[0]: 2, ids[1]: 1}
    one = api.simulate_get(f"/v1/nodes/{ids[0]}").json
    assert (one["subscriptions"], one["last_seen"]) == (2, None)
    assert api.simulate_get("/v1/nodes", headers=NODE).status_code == 401     # listing is for admins


def test_bad_registrations(api):
    for body, field in (({}, "url"), ({"url": "ftp://x"}, "url"), ({"url": "http://"}, "url"),
                        ({"url": 5}, "url"), ({"url": URL, "name": "x"}, "name")):
        resp = api.simulate_post("/v1/nodes", json=body, headers=NODE)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field), body


def test_a_node_that_keeps_restarting_is_evicted_and_refused_until_its_quarantine_ends(api, hub_maker):
    # the defaults: 3 registrations of a known node within 300 s quarantine it for 600 s
    first = api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE)
    assert first.status_code == 201
    for _ in range(2):          # restarted twice: still accepted, the count resets nothing else
        assert api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE).status_code == 200
    third = api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE)
    assert third.status_code == 503 and third.json["error"]["field"] == "url"
    assert "restarted too often" in third.json["error"]["message"]
    assert 590 <= int(third.headers["Retry-After"]) <= 600
    with hub_maker.begin() as session:          # evicted: the scheduler moves its work
        node = session.get(Node, first.json["id"])
        assert node.state == "dead" and node.quarantined_until is not None
        node.quarantined_until = node.quarantined_until - timedelta(seconds=601)     # the quarantine is over
    back = api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE)
    assert back.status_code == 200
    assert api.simulate_get(f"/v1/nodes/{first.json['id']}").json["state"] == "live"


def test_restarts_far_apart_never_quarantine(api, hub_maker):
    node_id = api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE).json["id"]
    for _ in range(5):
        with hub_maker.begin() as session:      # each restart comes after the window
            node = session.get(Node, node_id)
            if node.restarts_since is not None:
                node.restarts_since = node.restarts_since - timedelta(seconds=301)
        assert api.simulate_post("/v1/nodes", json={"url": URL}, headers=NODE).status_code == 200
