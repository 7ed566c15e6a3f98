"""13. Change feed: requests and freshness for watched pages.

One real hub (API and scheduler on PostgreSQL) and two real spawns (writing to Cassandra) watch pages of the
writable wiki through the local edge (scripts/services/nginx.sh, anonymous profile), paced by the hub's budget
for the wiki's identity, in two runs side by side:

  per-page revisits   no change feed (hub BW_FEED_INTERVAL_S=0); every caught-up page asks "anything new?" every
                      60 s (spawn BW_REVISIT_MIN_S = BW_REVISIT_MAX_S = 60: the freshest the per-page path gets
                      at its default lower bound), 50 pages a prop=info request when their checks fall due together
  change feed         the hub's default BW_FEED_INTERVAL_S (3 s): one node reads list=recentchanges for the
                      cluster, the hub routes changed pages to their nodes; revisit bounds at their defaults

Each run watches fresh pages (created first, one revision each), waits until every one is caught up, then counts
the wiki requests the cluster makes in an idle minute (from the edge's access log, by the run's own User-Agent)
and times edit -> the new revision stored (the subscription's last_rev_id, through the admin API) for edits on
distinct watched pages, one every few seconds.

    .venv/bin/python -m bench.feed_freshness
"""
import argparse
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import parse_qs, urlsplit

from bench.common import cassandra_keyspace, heading, pg_database, table, verdict
from bench.upstream_budget import EDGE_WRITABLE, the_edge
from shared.config import HubConfig
from spawn.mediawiki import MAX_TITLES
from tests.e2e.cluster import Cluster
from tests.fixtures.edge import Edge, LoggedRequest
from tests.fixtures.writable_wiki import API_URL, RUN_DIR, AdminApi, WritableWiki
from tests.support.hub import HubProcesses
from tests.support.processes import wait_for

SPAWNS = 2
WATCHED = 60
EDITS = 12
EDIT_EVERY_S = 5.0
POLL_S = 0.25                    # the admin API is asked this often whether an edit is stored
EDIT_TIMEOUT_S = 180.0           # per edit: the per-page path may take a whole revisit interval and more
CATCH_UP_TIMEOUT_S = 600.0
SETTLE_S = 5.0                   # after the last page caught up, before the idle minute starts
IDLE_S = 60.0
REVISIT_S = 60
FEED_INTERVAL_S = HubConfig.feed_interval_s      # the hub's default
PER_PAGE = "per-page revisits"
FEED = "change feed"
MODES = {
    PER_PAGE: ({"BW_FEED_INTERVAL_S": "0"},
               {"BW_REVISIT_MIN_S": str(REVISIT_S), "BW_REVISIT_MAX_S": str(REVISIT_S)}),
    FEED: ({"BW_FEED_INTERVAL_S": str(FEED_INTERVAL_S)}, {}),
}
RC, INFO, HISTORY = "list=recentchanges", "prop=info", "prop=revisions"
# idle: at most one request per feed read (a read that finds nothing is one request), whatever the page count
GOALS = {"median_s": 15.0, "idle_per_min": round(60 / FEED_INTERVAL_S)}
SCALE_PAGES = 10_000
WIKIMEDIA_ANON_PER_MIN = 200


@dataclass(frozen=True)
class Run:
    mode: str
    watched: int
    idle: list[LoggedRequest]        # the cluster's wiki requests in the idle minute
    delays: list[float]              # edit -> stored, seconds, one per edit
    throttled: int                   # 429s over the whole run (catch-up included)
    requests: int                    # wiki requests over the whole run
    feeds: list[dict]                # GET /v1/feeds at the end


def user_agent(mode: str) -> str:
    return f"BlackWidowBench/{uuid.uuid4().hex[:8]} (feed freshness, {mode}; ops@example.org)"


def kind(r: LoggedRequest) -> str:
    """What a logged request asked: the feed, a revisit check, a history read, or anything else."""
    query = parse_qs(urlsplit(r.uri).query)
    # a feed read asks list=recentchanges|logevents (the suppression log rides along)
    if "recentchanges" in {name for value in query.get("list", []) for name in value.split("|")}:
        return RC
    return {"info": INFO, "revisions": HISTORY}.get(query.get("prop", [""])[0], "other")


def kinds(logged: Sequence[LoggedRequest]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in logged:
        out[kind(r)] = out.get(kind(r), 0) + 1
    return out


def create_pages(admin: AdminApi, mode: str) -> dict[str, int]:
    """WATCHED new pages of one revision each: {title: its revision id}."""
    prefix = f"Bench feed freshness {mode.split()[0]}"
    titles = [WritableWiki.unique_title(prefix) for _ in range(WATCHED)]
    return {t: admin.edit(t, f"A watched page ({mode}), {uuid.uuid4().hex}.", summary="created") for t in titles}


def rows_by_id(hub: HubProcesses) -> dict[str, dict]:
    return {s["id"]: s for s in hub.subscriptions()}


def idle_minute(edge: Edge, ua: str) -> list[LoggedRequest]:
    """The requests the run's identity made in IDLE_S seconds from now (their log lines' times)."""
    begin, offset = time.time(), edge.log_offset()
    time.sleep(IDLE_S)
    return [r for r in edge.read_log(offset, user_agent=ua) if begin <= r.msec < begin + IDLE_S]


def time_edits(admin: AdminApi, hub: HubProcesses, ids: dict[str, str], titles: Sequence[str]) -> list[float]:
    """Edits each page once, one every EDIT_EVERY_S, and times each edit (once answered) to the moment its
    subscription's last_rev_id is the edit's revision, polling the admin API every POLL_S."""
    pending: dict[str, tuple[int, float]] = {}        # subscription id -> (revision id, edited at)
    delays: list[float] = []
    todo = list(titles)
    next_edit = time.monotonic()
    while todo or pending:
        if todo and time.monotonic() >= next_edit:
            title = todo.pop(0)
            revid = admin.edit(title, f"A change to find, {uuid.uuid4().hex}.", summary="freshness probe")
            pending[ids[title]] = (revid, time.monotonic())
            next_edit += EDIT_EVERY_S
        rows = rows_by_id(hub)
        now = time.monotonic()
        for sub_id, (revid, edited) in list(pending.items()):
            if rows[sub_id]["last_rev_id"] == revid:
                delays.append(now - edited)
                del pending[sub_id]
            elif now - edited > EDIT_TIMEOUT_S:
                raise AssertionError(f"revision {revid} of {rows[sub_id]['title']!r} not stored within "
                                     f"{EDIT_TIMEOUT_S:.0f} s (subscription {rows[sub_id]})")
        time.sleep(POLL_S)
    return delays


def run(mode: str, edge: Edge, admin: AdminApi, run_dir: Path) -> Run:
    hub_env, spawn_env = MODES[mode]
    ua = user_agent(mode)
    created = create_pages(admin, mode)
    slug = "bench_feed_" + ("feed" if mode == FEED else "pages")
    with pg_database(slug) as db_url, cassandra_keyspace(slug) as (_, keyspace):
        cluster = Cluster(run_dir / slug, database_url=db_url, keyspace=keyspace, user_agent=ua,
                          allowlist=EDGE_WRITABLE, hub_env=hub_env, spawn_env=spawn_env)
        try:
            cluster.start(SPAWNS)
            offset = edge.log_offset()
            tenant = cluster.tenant("watchers")
            cluster.subscribe(tenant["id"], edge.writable_api_url, [{"title": t} for t in created])
            ids = {s["title"]: s["id"] for s in cluster.hub.subscriptions()}
            assert sorted(ids) == sorted(created), f"subscribed titles differ: {sorted(ids)[:3]} ..."

            def caught_up() -> bool:
                return all(s["revisions"] == 1 and s["last_rev_id"] == created[s["title"]]
                           for s in cluster.hub.subscriptions())
            wait_for(caught_up, CATCH_UP_TIMEOUT_S, 1.0, f"{WATCHED} watched pages caught up ({mode})")
            if mode == FEED:
                wait_for(lambda: any(f["reader"] and f["position"] and f["error"] is None
                                     for f in cluster.hub.get("/v1/feeds")["items"]), 120, 1.0,
                         "the writable wiki's feed read")
            time.sleep(SETTLE_S)
            idle = idle_minute(edge, ua)
            delays = time_edits(admin, cluster.hub, ids, list(created)[:EDITS])
            feeds = cluster.hub.get("/v1/feeds")["items"]
            logged = edge.read_log(offset, user_agent=ua)
            return Run(mode, len(created), idle, delays, sum(1 for r in logged if r.status == 429), len(logged),
                       feeds)
        finally:
            cluster.stop()


def report(runs: dict[str, Run]) -> None:
    per_page, feed = runs[PER_PAGE], runs[FEED]
    print(heading(13, "Change feed: requests and freshness for watched pages"))
    print(f"A real hub and {SPAWNS} real spawns (Cassandra) watch {WATCHED} pages of the writable wiki through the "
          "local edge (anonymous profile: 1 in flight, 5 r/s, 200/min), paced by the hub's budget for the wiki's "
          "identity, once per mode with fresh pages: **per-page revisits** (no feed; every caught-up page checked "
          f"every {REVISIT_S} s, BW_REVISIT_MIN_S = BW_REVISIT_MAX_S = {REVISIT_S}, batched prop=info) and "
          f"**change feed** (one list=recentchanges reader for the cluster every {FEED_INTERVAL_S:g} s, revisit bounds "
          f"at their defaults). Once every page was caught up: the wiki requests the cluster made in an idle "
          f"minute (edge access log, the run's own User-Agent), then {EDITS} edits on distinct watched pages, one "
          f"every {EDIT_EVERY_S:.0f} s, each timed from the edit's answer to its revision id being the "
          f"subscription's last_rev_id (admin API polled every {POLL_S} s).\n")
    rows = [[r.mode, r.watched, len(r.idle), len(r.delays), f"{statistics.median(r.delays):.1f}",
             f"{max(r.delays):.1f}"] for r in (per_page, feed)]
    idle_ratio = f"{len(per_page.idle) / len(feed.idle):.1f}×" if feed.idle else "–"
    rows.append(["per-page ÷ feed", "", idle_ratio, "",
                 f"{statistics.median(per_page.delays) / statistics.median(feed.delays):.1f}×", ""])
    print(table(["mode", "watched pages", "wiki requests in an idle minute", "edits", "median edit→stored (s)",
                 "max edit→stored (s)"], rows, right=(1, 2, 3, 4, 5)))
    print()
    for r in (per_page, feed):
        split = ", ".join(f"{k} {n}" for k, n in sorted(kinds(r.idle).items())) or "none"
        feeds = ", ".join(f"{f['wiki']} read by {f['reader']}, {f['changes']} changes" for f in r.feeds) or "none"
        print(f"- {r.mode}: idle minute's requests by kind: {split}; each edit→stored (s): "
              f"{', '.join(f'{d:.1f}' for d in r.delays)}; 429 answers over the whole run: {r.throttled} "
              f"(of {r.requests} wiki requests, catch-up included); feeds listed at the end: "
              f"{feeds}")
    checks, histories, reads = kinds(per_page.idle).get(INFO, 0), kinds(per_page.idle).get(HISTORY, 0), \
        kinds(feed.idle).get(RC, 0)
    print()
    print(f"Reading the idle minute. Of the per-page mode's {len(per_page.idle)} requests, {checks} are revisit "
          f"checks (prop=info, {WATCHED * 60 / REVISIT_S / checks if checks else 0:.0f} pages a request on average: "
          "pages fall due one by one as they were caught up, so few checks share a request) and "
          f"{histories} are history reads: each caught-up page's history check (spawn/source.py `_verify`) runs "
          f"every BW_REVISIT_MAX_S, which this mode sets to {REVISIT_S} s to pin the revisit interval, so every "
          "page's whole history is also compared each minute (at the default, a day, it is not). Revisit checks "
          f"alone against the feed's reads: {checks} vs {reads}"
          + (f" ({checks / reads:.1f}×)." if reads else "."))
    per_page_scale = SCALE_PAGES / MAX_TITLES * 60 / REVISIT_S
    feed_scale = 60 / FEED_INTERVAL_S
    print()
    print(f"Computed, not measured: {SCALE_PAGES:,} watched pages revisited every {REVISIT_S} s cost at best "
          f"{SCALE_PAGES:,}/{MAX_TITLES} = {per_page_scale:.0f} prop=info requests/min (every check batched "
          f"{MAX_TITLES} to a request), the whole of Wikimedia's anonymous bot limit of {WIKIMEDIA_ANON_PER_MIN} "
          f"requests/min, before any history is read; the feed costs 1 request per {FEED_INTERVAL_S:g} s interval "
          f"when nothing changed, {feed_scale:.0f} requests/min whatever the page count.")
    print()
    median = statistics.median(feed.delays)
    print(f"- change feed median edit→stored: {median:.1f} s over {len(feed.delays)} edits (goal ≤ "
          f"{GOALS['median_s']:.0f} s) {verdict(median <= GOALS['median_s'])}")
    print(f"- change feed idle requests/min, {feed.watched} watched pages: {len(feed.idle)} (goal ≤ "
          f"{GOALS['idle_per_min']}, one per read, whatever the page count) "
          f"{verdict(len(feed.idle) <= GOALS['idle_per_min'])}")


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    edge = the_edge()
    admin = WritableWiki(API_URL, RUN_DIR).admin()
    with tempfile.TemporaryDirectory(prefix="bench-feed-") as tmp:
        runs = {mode: run(mode, edge, admin, Path(tmp)) for mode in MODES}
    report(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
