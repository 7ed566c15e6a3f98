"""`spawn serve` as a real process: kill -9 mid-harvest and resume; detach on hub silence, register again."""
import time

import pytest
import requests

from shared.hashing import wiki_key
from tests.integration.spawn.conftest import SECRET
from tests.integration.spawn.processes import SpawnProcess, StubHub
from tests.integration.spawn.test_harvest import as_expected, expected_rows, spec, wait_for
from tools.wikigen import BIG_TITLE

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def hub():
    h = StubHub(SECRET)
    yield h
    h.close()


@pytest.fixture
def spawns(tmp_path):
    started = []

    def start(hub_url, env):
        sp = SpawnProcess(hub_url, {"BW_NODE_SECRET": SECRET, **env}, tmp_path / f"spawn{len(started)}.log")
        started.append(sp)
        return sp.wait_ready()
    yield start
    for sp in started:
        sp.stop()


def base_env(mediawiki, keyspace, tmp_path, **extra):
    return {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace, "BW_DATA_DIR": str(tmp_path),
            "BW_USER_AGENT": mediawiki.user_agent, "BW_WIKI_ALLOWLIST": wiki_key(mediawiki.api_url), **extra}


def big_page_id(mediawiki):
    resp = mediawiki.session().get(mediawiki.api_url, params={"action": "query", "prop": "info", "format": "json",
                                                              "formatversion": "2", "titles": BIG_TITLE}, timeout=10)
    return resp.json()["query"]["pages"][0]["pageid"]


def stored_count(store, mediawiki, page_id):
    state = store.page(wiki_key(mediawiki.api_url), page_id)
    return state.revisions if state else 0


def test_kill_9_mid_harvest_then_restart_resumes_without_refetching_or_duplicates(
        hub, spawns, store, mediawiki, keyspace, tmp_path):
    n = len(mediawiki.expected.page(BIG_TITLE).revisions)
    page_id = big_page_id(mediawiki)
    env = base_env(mediawiki, keyspace, tmp_path, BW_HOST_DELAY_S="0.05")
    sub = spec(mediawiki.api_url, "big", BIG_TITLE, content=True)

    first = spawns(hub.url, env)
    wait_for(lambda: hub.ok_registrations() >= 1, 10, "registration")
    assert first.put(sub)["changed"] is True
    wait_for(lambda: stored_count(store, mediawiki, page_id) >= 1500, 120, "1,500 stored revisions")
    first.kill9()
    resume = store.resume_point(wiki_key(mediawiki.api_url), page_id)
    at_kill = sum(1 for r in store.history(wiki_key(mediawiki.api_url), page_id)
                  if (r.timestamp, r.rev_id) <= (resume.timestamp, resume.rev_id))
    assert 1500 <= at_kill < n, "the kill must land mid-harvest"

    second = spawns(hub.url, env)
    second.put(sub)
    wait_for(lambda: second.status()["subscriptions"][0]["revisions"] == n, 180, "the resumed harvest")
    report = second.status()["subscriptions"][0]
    assert report["state"] == "running" and report["last_error"] is None
    requests_after_restart = second.metric("bw_spawn_api_requests_total")
    remaining_batches = -(-(n - at_kill) // 50)
    print(f"\nkill -9 at {at_kill}/{n}; after restart {requests_after_restart:.0f} API requests "
          f"(a fresh start would need {-(-n // 50) + 1})")
    assert requests_after_restart <= remaining_batches + 2          # resolve + the missing batches only
    stored = list(store.history(wiki_key(mediawiki.api_url), page_id))[::-1]
    assert len({r.rev_id for r in stored}) == len(stored) == n
    assert [as_expected(r) for r in stored] == expected_rows(mediawiki.expected.page(BIG_TITLE))
    assert second.metric("bw_spawn_revisions_written_total") == n - at_kill


def test_health_is_503_until_the_hub_accepts_the_registration(tmp_path, mediawiki, keyspace):
    hub = StubHub(SECRET)
    hub.status = 403                                          # refused, as a quarantined node is
    node = SpawnProcess(hub.url, {"BW_NODE_SECRET": SECRET, **base_env(mediawiki, keyspace, tmp_path)},
                        tmp_path / "refused.log")
    try:
        def health() -> tuple[int, str] | None:
            try:
                resp = requests.get(f"{node.url}/health", timeout=1)
            except requests.RequestException:
                return None
            return resp.status_code, resp.json()["state"]
        wait_for(lambda: health() == (503, "refused"), 90, "a refused registration on /health")
        assert requests.get(f"{node.url}/health", timeout=5).json()["load"] is None
        hub.status = 200
        wait_for(lambda: health() == (200, "attached"), 90, "registration accepted")
    finally:
        node.stop()
        hub.close()


def test_detach_after_hub_silence_stops_writing_then_registers_again(spawns, store, mediawiki, keyspace, tmp_path):
    hub = StubHub(SECRET, detach_after_s=2.0)
    try:
        page_id = big_page_id(mediawiki)
        node = spawns(hub.url, base_env(mediawiki, keyspace, tmp_path, BW_HOST_DELAY_S="0.3"))
        wait_for(lambda: hub.ok_registrations() == 1 and node.health()["attached"], 10, "registration")
        node.put(spec(mediawiki.api_url, "big", BIG_TITLE, content=True))
        for _ in range(4):                                    # the hub polls for a while
            time.sleep(0.5)
            assert node.status()["attached"]
        silent_since = time.monotonic()                       # ... then goes quiet and refuses registrations
        hub.status = 503
        assert stored_count(store, mediawiki, page_id) > 0
        wait_for(lambda: not node.health()["attached"], 10, "the detach")
        detach_delay = time.monotonic() - silent_since
        health = requests.get(f"{node.url}/health", timeout=5)
        assert health.status_code == 503 and health.json()["state"] == "detached"
        assert health.json()["subscribers"] == 0 and health.json()["sources"] == 0
        assert health.json()["load"] is None                  # unknown, not an idle 0 that invites scale-in
        frozen = stored_count(store, mediawiki, page_id)
        wait_for(lambda: sum(1 for _, s, _ in hub.registrations if s == 503) >= 2, 15, "re-registration attempts")
        assert stored_count(store, mediawiki, page_id) == frozen, "a detached node must not write"
        hub.status = 200
        wait_for(lambda: hub.ok_registrations() == 2 and node.health()["attached"], 30, "registration again")
        assert requests.get(f"{node.url}/health", timeout=5).status_code == 200
        assert node.metric("bw_spawn_detaches_total") == 1
        attempts = [t for t, s, _ in hub.registrations if s == 503]
        gaps = [b - a for a, b in zip(attempts, attempts[1:])]
        print(f"\ndetached {detach_delay:.1f}s after the last poll (detach_after_s=2); "
              f"re-registration gaps {[round(g, 2) for g in gaps]}")
        assert all(g >= 0.2 for g in gaps)                  # backed off, not a busy loop
    finally:
        hub.close()
