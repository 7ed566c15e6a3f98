"""Chaos: while three tenants' articles are harvested (hub API, scheduler and 3 spawns as separate processes
on PostgreSQL, Cassandra and the local MediaWiki), kill -9 a random spawn 5 times and the whole hub twice,
restarting each. Afterwards every revision of every article is in Cassandra exactly once and equal to the
generator's history, and no quota was ever exceeded: neither a subscription's own nor a tenant's (leased to
the spawns, docs/quotas.md).

* "full" subscribes to every article, no quota: each ends running, at the wiki's latest revision.
* "capped" has per-subscription quotas under a tenant quota that leaves room: each ends limit_reached,
  at exactly its quota.
* "budget" has only a tenant quota, far below its articles' histories: it ends using all of it, its
  subscriptions limit_reached with the tenant's numbers as the reason.

BW_E2E_SEED=<n> replays one schedule of kills (the seed is printed)."""
import os
import random
import threading
import time

import pytest
import requests

from tests.e2e.harvest_check import articles, harvest_problems, stored_total, targets
from tests.support.processes import wait_for
from tools.wikigen import BIG_TITLE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPAWN_KILLS, HUB_KILLS = 5, 2
# Per-subscription quotas of the second tenant, each far below its article's history.
CAPPED = {BIG_TITLE: 900, "Orb-weaver spider": 300, "Spider silk": 120, "Tarantula": 45}
CAPPED_TENANT_QUOTA = sum(CAPPED.values()) + 500
BUDGET = 1000
HELD_BACK_PER_S = 1.0
BUDGET_TITLES = (BIG_TITLE, "Orb-weaver spider", "Spider silk", "Ünïcödé – 東京")


class QuotaWatch:
    """Samples the hub's view several times a second and keeps every quota overshoot it ever sees."""

    def __init__(self, hub):
        self.hub = hub
        self.violations: list[str] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            try:
                subs = self.hub.subscriptions()
                tenants = self.hub.get("/v1/tenants")["items"]
            except requests.RequestException:
                continue            # the hub is down: it is being killed on purpose
            self.samples += 1
            self.violations += [f"subscription {s['title']!r}: {s['revisions']} > quota {s['quota']}"
                                for s in subs if s["quota"] is not None and s["revisions"] > s["quota"]]
            self.violations += [f"tenant {t['name']}: {t['used']} > quota {t['quota']}"
                                for t in tenants if t["quota"] is not None and t["used"] > t["quota"]]


def test_kill_spawns_and_hub_while_harvesting_loses_nothing(make_cluster, mediawiki, cassandra_session,
                                                            keyspace, record_timing):
    seed = int(os.environ.get("BW_E2E_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    print(f"\nchaos seed {seed} (BW_E2E_SEED={seed} replays it)")
    # a polite host delay keeps the harvest going for a minute, long enough for every kill to land mid-harvest
    # the kills below are the scenario, not a poison page: the hub must not quarantine a spawn for restarting
    cluster = make_cluster(spawn_env={"BW_HOST_DELAY_S": "0.5"},
                           hub_env={"BW_NODE_FLAP_RESTARTS": "1000"}).start(spawns=3)
    hub, api = cluster.hub, mediawiki.api_url
    titles = articles(mediawiki)
    pages = targets(mediawiki, titles)
    total = sum(len(mediawiki.expected.page(t).revisions) for t in titles)

    # the wiki identity held to a slower rate from the start until the kills have landed: however fast the
    # machine, the harvest cannot end before the chaos does
    identity = f"/v1/identities/{api.split('/')[2]}"
    hub.put(identity, {"per_s": HELD_BACK_PER_S})            # the host's defaults for every other limit
    full = cluster.tenant("chaos-full")
    capped = cluster.tenant("chaos-capped", quota=CAPPED_TENANT_QUOTA)
    budget = cluster.tenant("chaos-budget", quota=BUDGET)
    cluster.subscribe(full["id"], api, [{"title": t} for t in titles], content=True)
    cluster.subscribe(capped["id"], api, [{"title": t, "quota": q} for t, q in CAPPED.items()], content=True)
    cluster.subscribe(budget["id"], api, [{"title": t} for t in BUDGET_TITLES], content=True)

    def finished(s: dict) -> bool:
        if s["tenant_id"] == capped["id"]:
            return (s["state"], s["revisions"]) == ("limit_reached", s["quota"])
        if s["tenant_id"] == budget["id"]:
            return s["state"] == "limit_reached" and (s["last_error"] or "").startswith("tenant quota used up")
        return (s["state"], s["last_rev_id"]) == ("running", pages[s["title"]][1])

    def done() -> bool:
        subs = hub.subscriptions()
        used = hub.get(f"/v1/tenants/{budget['id']}")["used"]
        return len(subs) == len(titles) + len(CAPPED) + len(BUDGET_TITLES) and all(map(finished, subs)) \
            and used >= 0.95 * BUDGET

    started = time.monotonic()
    with QuotaWatch(hub) as watch:
        wait_for(lambda: stored_total(cassandra_session, keyspace, api, pages) > 0, 60, 0.2,
                 "the first revisions")
        events = ["spawn"] * SPAWN_KILLS + ["hub"] * HUB_KILLS
        rng.shuffle(events)
        landed = []
        for n, event in enumerate(events, 1):
            time.sleep(rng.uniform(1.0, 3.0))
            stored = stored_total(cassandra_session, keyspace, api, pages)
            down = rng.uniform(0.0, 3.0)
            if event == "spawn":
                victim = rng.choice(cluster.spawns)
                victim.kill9()
                time.sleep(down)
                victim.start()
                what = f"spawn {victim.index}"
            else:
                hub.kill9()
                time.sleep(down)
                hub.start(str(n + 1))
                what = "hub API and scheduler"
            landed.append(stored)
            print(f"kill -9 #{n}: {what} at {stored}/{total} stored, down {down:.1f} s before restarting")
        assert all(stored < total for stored in landed), "the harvest ended before the chaos did"
        hub.put(identity, {})                                 # the host's defaults again

        try:
            wait_for(done, 360, 0.5, "the harvest to complete after the chaos")
        except AssertionError as exc:
            left = [(s["title"], s["tenant_id"][:8], s["state"], s["revisions"], s["node"], s["last_error"])
                    for s in hub.subscriptions() if not finished(s)]
            tenant = hub.get(f"/v1/tenants/{budget['id']}")
            raise AssertionError(f"{exc}; budget tenant {tenant}; "
                                 f"unfinished {left}; nodes {hub.nodes()}") from None
        elapsed = time.monotonic() - started
    record_timing("chaos: harvest with 7 kills", elapsed, f"{total} revisions, seed {seed}")

    assert watch.samples > 20 and not watch.violations, watch.violations[:10]
    subs = hub.subscriptions()
    assert {s["state"] for s in subs} == {"running", "limit_reached"}
    assert sorted(s["revisions"] for s in subs if s["tenant_id"] == capped["id"]) == sorted(CAPPED.values())
    tenants = {t["name"]: t for t in hub.get("/v1/tenants")["items"]}
    assert tenants["chaos-capped"]["used"] == sum(CAPPED.values())
    assert 0.95 * BUDGET <= tenants["chaos-budget"]["used"] <= BUDGET
    print(f"budget tenant: {tenants['chaos-budget']['used']} of {BUDGET} revisions used, "
          f"{tenants['chaos-budget']['leased']} leased")
    assert sorted(n["state"] for n in hub.nodes()) == ["live"] * 3
    problems = harvest_problems(cassandra_session, keyspace, api, mediawiki, pages)
    assert not problems, problems
