"""One upstream budget per wiki identity, cluster-wide, against the local stand-in for Wikimedia's edge
(scripts/services/nginx.sh: per-identity limit_conn/limit_req, 429 + Retry-After). Real hub, scheduler and
three spawns harvest through the edge; its access log is the evidence: no 429, never more requests in
flight than the identity's slots, never more per second or per minute than its limits
(docs/upstream.md)."""
import uuid

import pytest

from tests.e2e.harvest_check import articles, harvest_problems, stored_total, targets
from tests.fixtures.edge import LoggedRequest, fingerprint
from tests.support.processes import wait_for
from tools import wikigen

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EDGE_SEEDED = "127.0.0.1:8785"
EDGE_WRITABLE = "127.0.0.1:8787"
WRITABLE_MAX_REVISIONS = 30      # scripts/services/mediawiki-writable.sh seeds wikigen's pages up to this size


def user_agent(kind: str) -> str:
    # an identity of the test's own at the edge: no other test's requests share its buckets or its log lines
    return f"BlackWidowBudgetTest/{uuid.uuid4().hex[:8]} ({kind}; blackwidow@example.org)"


def in_flight_peak(requests: list[LoggedRequest]) -> int:
    """Most requests the edge had open at once, from each line's end time and duration."""
    events = sorted([(r.msec - r.request_time, 1) for r in requests] + [(r.msec, -1) for r in requests])
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def most_started_within(requests: list[LoggedRequest], seconds: float) -> int:
    starts = sorted(r.msec - r.request_time for r in requests)
    most, first = 0, 0
    for last, at in enumerate(starts):
        while at - starts[first] >= seconds:
            first += 1
        most = max(most, last - first + 1)
    return most


def test_three_spawns_and_two_tenants_at_the_anonymous_limits_get_no_429(make_cluster, mediawiki, edge,
                                                                         cassandra_session, keyspace):
    ua = user_agent("anonymous")
    cluster = make_cluster(allowlist=EDGE_SEEDED, spawn_env={"BW_USER_AGENT": ua}).start(3)
    offset = edge.log_offset()
    titles = articles(mediawiki)
    light, heavy = cluster.tenant("light"), cluster.tenant("heavy")
    cluster.hub.patch(f"/v1/tenants/{heavy['id']}", {"weight": 2.0})
    half = len(titles) // 2
    cluster.subscribe(light["id"], edge.seeded_api_url, [{"title": t} for t in titles[:half]])
    cluster.subscribe(heavy["id"], edge.seeded_api_url, [{"title": t} for t in titles[half:]])
    pages = targets(mediawiki, titles)
    want = sum(len(mediawiki.expected.page(t).revisions) for t in titles)
    wait_for(lambda: stored_total(cassandra_session, keyspace, edge.seeded_api_url, pages) == want, 600, 1.0,
             f"{want} revisions through the edge")

    logged = edge.read_log(offset, user_agent=ua)
    assert logged and {r.identity_class for r in logged} == {"anon"}
    assert [r for r in logged if r.status == 429] == []
    assert in_flight_peak(logged) <= 1                              # the anonymous identity's one slot
    assert most_started_within(logged, 1.0) <= edge.anonymous.per_s
    assert most_started_within(logged, 60.0) <= edge.anonymous.per_min
    assert harvest_problems(cassandra_session, keyspace, edge.seeded_api_url, mediawiki, pages) == []
    identity = cluster.hub.get(f"/v1/identities/{EDGE_SEEDED}")
    assert (identity["in_flight"], identity["per_min"]) == (1, 200) and identity["paused_until"] is None


def test_a_bot_password_is_metered_as_its_own_identity_at_the_authenticated_limits(
        make_cluster, writable_wiki, edge, cassandra_session, keyspace):
    ua = user_agent("bot password")
    cluster = make_cluster(allowlist=EDGE_WRITABLE, spawn_env={
        "BW_USER_AGENT": ua, "BW_CREDENTIALS_FILE": str(writable_wiki.credentials_file)}).start(3)
    configured = cluster.hub.put(f"/v1/identities/{EDGE_WRITABLE}", {
        "credential": writable_wiki.credential_name, "in_flight": 3, "per_s": 10, "per_min": 2000})
    assert configured["credential"] == writable_wiki.credential_name and "password" not in str(configured)
    offset = edge.log_offset()
    admin = writable_wiki.admin()
    # the writable wiki's own articles (its seed: wikigen's small pages), still there and not redirects, whose
    # subscription harvests its target's history: not the pages other tests and the benchmarks add there
    seeded = [title for title, ns, revisions, _ in wikigen.PLAN if ns == 0 and revisions <= WRITABLE_MAX_REVISIONS]
    found = admin.call(action="query", prop="info", titles="|".join(seeded[:50]))["query"]["pages"]
    titles = sorted(p["title"] for p in found if "missing" not in p and "redirect" not in p)[:12]
    assert len(titles) >= 6, found
    tenant = cluster.tenant("bots")
    cluster.subscribe(tenant["id"], edge.writable_api_url, [{"title": t} for t in titles])
    want = {t: len(admin.history(t)) for t in titles}
    wait_for(lambda: all(s["revisions"] == want[s["title"]] for s in cluster.hub.subscriptions()), 600, 1.0,
             "every page's history through the edge as the bot")

    logged = edge.read_log(offset, user_agent=ua)
    assert [r for r in logged if r.status == 429] == []
    metered = [r for r in logged if r.identity_class == "auth"]
    # after its login, every request of the deployment is metered as the bot's session, not as the User-Agent
    assert len(metered) >= len(titles) and fingerprint(ua) not in {r.identity for r in metered}
    assert in_flight_peak(logged) <= 3
    assert cluster.leaks({"hub identity": str(configured)}) == []
