"""Bad upstream: the wiki answers a history request with truncated JSON, an HTML 503 page, 429 with
Retry-After, a maxlag error, a page without its `revisions`, or not at all for 30 s. Each time the spawn
asks again for the very same batch after a growing delay (at least what Retry-After says), the
subscription's last_error at the hub names the reason, no partial row is written, the spawn process keeps
running, and once the wiki answers properly the history completes, equal to the source."""
import pytest

from shared.hashing import source_uuid
from tests.e2e.cluster import LOCAL_WIKI
from tests.e2e.harvest_check import harvest_problems, targets
from tests.e2e.proxies import RETRY_AFTER_429_S, RETRY_AFTER_MAXLAG_S, FaultyWiki
from tests.support.processes import wait_for
from tools.wikigen import BIG_TITLE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HTTP_TIMEOUT_S = 3.0
# (fault, how many answers in a row, what last_error must say, least delay before each retry)
FAULTS = [
    ("truncated_json", 2, "BadResponse: truncated or invalid JSON", (0.5, 1.0)),
    ("html_503", 2, "ServerError: HTTP 503", (0.5, 1.0)),
    ("rate_limited", 2, "RateLimited: HTTP 429", (RETRY_AFTER_429_S,) * 2),
    ("maxlag", 2, "Maxlagged: Waiting for db1: 7 seconds lagged.", (RETRY_AFTER_MAXLAG_S, 1.0)),
    ("no_revisions", 2, "BadResponse: 'revisions' missing", (0.5, 1.0)),
    ("stall", 1, "TransportError: ReadTimeout", (HTTP_TIMEOUT_S,)),
]


@pytest.fixture
def wiki(mediawiki):
    proxy = FaultyWiki(mediawiki.api_url)
    yield proxy
    proxy.close()


def test_spawn_rides_out_a_misbehaving_wiki(make_cluster, wiki, mediawiki, cassandra_session, keyspace):
    cluster = make_cluster(allowlist=f"{LOCAL_WIKI},127.0.0.1:{wiki.port}",
                           spawn_env={"BW_HTTP_TIMEOUT_S": str(HTTP_TIMEOUT_S), "BW_HOST_DELAY_S": "0.3"})
    cluster.start(spawns=1)
    hub, spawn = cluster.hub, cluster.spawns[0]
    pages = targets(mediawiki, [BIG_TITLE])
    tenant = cluster.tenant("upstream")
    cluster.subscribe(tenant["id"], wiki.api_url, [{"title": BIG_TITLE}], content=True)
    sub_id = hub.subscriptions()[0]["id"]
    assert hub.subscriptions()[0]["source_uuid"] == str(source_uuid(wiki.api_url, BIG_TITLE))

    def sub() -> dict:
        return hub.get(f"/v1/subscriptions/{sub_id}")

    def served_ok_since(n: int) -> int:
        return sum(1 for ex in wiki.history_requests()[n:] if ex.outcome == "forwarded" and ex.status == 200)

    wait_for(lambda: served_ok_since(0) >= 3, 60, 0.1, "three good history batches")
    boot_id, pid = spawn.proc.status()["boot_id"], spawn.proc.proc.pid
    seen = []
    for fault, times, reason, floors in FAULTS:
        assert sub()["last_rev_id"] != pages[BIG_TITLE][1], "the history completed before the faults did"
        before = len(wiki.history_requests())
        wiki.arm(fault, times)
        wait_for(lambda: reason in (sub()["last_error"] or ""), 60, 0.1, f"the hub to show {reason!r}")
        seen.append(sub()["last_error"])
        wait_for(lambda: served_ok_since(before) >= 1, 60, 0.1, f"a good batch after {fault}")
        tried = wiki.history_requests()[before:]
        faulted = [i for i, ex in enumerate(tried) if ex.outcome == fault]
        assert len(faulted) == times and faulted == list(range(faulted[0], faulted[0] + times))
        for i, floor in zip(faulted, floors):
            retry = tried[i + 1]
            assert retry.path == tried[i].path, "the retry must ask for the same batch, not skip it"
            assert retry.at - tried[i].at >= floor - 0.05, (fault, retry.at - tried[i].at, floor)
        assert spawn.proc.running and spawn.proc.proc.pid == pid

    wait_for(lambda: sub()["last_rev_id"] == pages[BIG_TITLE][1], 300, 0.5, "the history to complete")
    final = sub()
    revisions = len(mediawiki.expected.page(BIG_TITLE).revisions)
    assert (final["state"], final["revisions"]) == ("running", revisions)
    assert spawn.proc.status()["boot_id"] == boot_id                # never crashed, never restarted
    events = spawn.events()
    assert "source.error" not in events and "http.unhandled" not in events     # every fault was expected
    assert events.count("mediawiki.retry") >= sum(times for _, times, _, _ in FAULTS)
    problems = harvest_problems(cassandra_session, keyspace, wiki.api_url, mediawiki,
                                {BIG_TITLE: pages[BIG_TITLE]})
    assert not problems, problems
    print("\nreasons shown at the hub:\n  " + "\n  ".join(seen))
