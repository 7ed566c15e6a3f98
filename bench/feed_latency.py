"""14. Change feed at a steady edit rate: edit → Cassandra, revision deletion → hidden.

The change feed's targets, side by side with the per-page revisit, in one run. A real hub (API and scheduler on
PostgreSQL, its default timings) and three real spawns (a fresh Cassandra keyspace, their default timings) watch
fresh pages of the writable wiki through the local edge (scripts/services/nginx.sh, anonymous profile), paced by
the hub's budget for the wiki's identity, once per mode:

  change feed         the hub's default BW_FEED_INTERVAL_S: one node reads list=recentchanges for the cluster and
                      the hub routes each changed page to its node
  per-page revisits   hub BW_FEED_INTERVAL_S=0, spawns' BW_REVISIT_MIN_S=60: every caught-up page asks "anything
                      new?" on its own, at the revisit's default lower bound

Each run subscribes PAGES two-revision pages (content included), waits until every one is caught up, counts the
wiki requests of an idle minute (the edge's access log, the run's own User-Agent), then edits the pages
round-robin at a steady rate from a thread of its own and times each edit's answer to its revision's row in
revisions_by_page (prepared CQL, polled every CHECK_EVERY_S). The feed run then hides the content of the first
revision of HIDES pages, one every HIDE_EVERY_S, and times each answer to the revision hidden in every table that
holds text (revisions_by_page: text_hidden, sha1_hidden, no sha1; no revision_text row).

A per-page revisit cycle over 10,000 watched pages is measured apart: the spawn's RevisitBatcher through its
MediaWikiClient on the benchmark wiki (bench.bench_wiki), each of its 1,000 page ids scheduled under 10 keys.

    .venv/bin/python -m bench.feed_latency
"""
import argparse
import contextlib
import functools
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from bench import bench_wiki, edge_use
from bench.change_detection import FakeClock, page_ids
from bench.common import USER_AGENT, cassandra_keyspace, heading, pg_database, table, verdict
from bench.content_storage import percentile
from bench.feed_freshness import RC, idle_minute, kind, kinds
from bench.upstream_budget import EDGE_WRITABLE, SPAWNS, the_edge
from shared.config import HubConfig, SpawnConfig
from shared.hashing import wiki_key
from shared.http import make_session
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MAX_TITLES, MediaWikiClient
from spawn.revisit import RevisitBatcher
from tests.e2e.cluster import Cluster
from tests.fixtures.edge import Edge, LoggedRequest
from tests.fixtures.writable_wiki import API_URL, RUN_DIR, AdminApi, WritableWiki
from tests.support.processes import wait_for

PAGES = 50
EDIT_EVERY_S = 0.5               # 2 edits a second, round-robin over the pages
EDITS = {"change feed": 300, "per-page revisits": 100}
HIDES = 30
HIDE_EVERY_S = 2.0
CHECK_EVERY_S = 0.2              # Cassandra is asked this often for the revisions still pending
MISS_AFTER_S = 300.0             # a revision not seen this long after its answer counts as a miss
CATCH_UP_TIMEOUT_S = 600.0
SETTLE_S = 5.0
REVISIT_MIN_S = 60
WATCHED_COPIES = 10              # the bench wiki's 1,000 page ids, each scheduled under 10 keys
FEED = "change feed"
PER_PAGE = "per-page revisits"
READ_GAP_S = 1.0                 # feed requests closer than this belong to one read (reads are seconds apart)

# tests.e2e.cluster shortens the timings for tests; the benchmark runs the defaults of shared.config
_PLACEHOLDERS = {"BW_ADMIN_TOKEN": "unused", "BW_NODE_SECRET": "unused"}
HUB_DEFAULTS = HubConfig.from_env(_PLACEHOLDERS)
SPAWN_DEFAULTS = SpawnConfig.from_env(_PLACEHOLDERS)
DEFAULT_TIMINGS = {"BW_POLL_INTERVAL_S": str(HUB_DEFAULTS.poll_interval_s),
                   "BW_NODE_FAILURES": str(HUB_DEFAULTS.node_failures),
                   "BW_DETACH_AFTER_S": str(HUB_DEFAULTS.detach_after_s),
                   "BW_ORPHAN_AFTER_S": str(HUB_DEFAULTS.orphan_after_s)}
MODES = {   # (hub env, spawn env) over the defaults
    FEED: ({}, {}),
    PER_PAGE: ({"BW_FEED_INTERVAL_S": "0"}, {"BW_REVISIT_MIN_S": str(REVISIT_MIN_S)}),
}
GOALS = {"requests_per_cycle": 2, "edit_p99_s": 10.0,
         "hide_p99_s": HUB_DEFAULTS.feed_interval_s + HUB_DEFAULTS.poll_interval_s}


class Rev(NamedTuple):
    """A revision as Cassandra finds it: its page, the months its row may be in, its id."""
    page_id: int
    months: tuple[int, ...]
    rev_id: int


@dataclass(frozen=True)
class Page:
    title: str
    page_id: int
    revisions: tuple[Rev, ...]      # oldest first


@dataclass(frozen=True)
class Timed:
    """Actions made at a steady pace, each timed from its answer to what it changed being seen in the store."""
    delays: list[float]             # seconds, of those seen
    misses: int                     # not seen within MISS_AFTER_S
    rate_per_s: float               # actions answered per second, first start to last answer

    @property
    def count(self) -> int:
        return len(self.delays) + self.misses

    def at(self, p: float) -> float:
        """The p-th percentile, a miss counting as never seen."""
        return percentile(sorted(self.delays) + [float("inf")] * self.misses, p)


@dataclass(frozen=True)
class Run:
    mode: str
    idle: list[LoggedRequest]       # the cluster's wiki requests in the idle minute
    edits: Timed
    edit_requests: list[LoggedRequest]      # the cluster's wiki requests while the edits were made and found
    hides: Timed | None
    throttled: int                  # 429s over the whole run (catch-up included)
    requests: int
    feeds: list[dict]               # GET /v1/feeds at the end


def month_of(moment: datetime) -> int:
    return moment.year * 100 + moment.month


def made(page_id: int, action: Callable[[], int]) -> Rev:
    """Runs an action that makes a revision of the page and returns its id (an edit): the revision, with the
    months its timestamp may be in (the wiki's clock is this machine's)."""
    before = month_of(datetime.now(timezone.utc))
    rev_id = action()
    return Rev(page_id, tuple(sorted({before, month_of(datetime.now(timezone.utc))})), rev_id)


def create_pages(admin: AdminApi, mode: str) -> list[Page]:
    """PAGES new pages of two revisions each (a page's edit rate needs two to be known)."""
    titles = [WritableWiki.unique_title(f"Bench feed latency {mode.split()[0]}") for _ in range(PAGES)]
    first = {t: made(0, lambda: admin.edit(t, f"Revision 0, {uuid.uuid4().hex}.", summary=f"created ({mode})"))
             for t in titles}
    ids: dict[str, int] = {}
    for i in range(0, PAGES, MAX_TITLES):
        body = admin.call(action="query", prop="info", titles="|".join(titles[i:i + MAX_TITLES]))
        ids.update({p["title"]: int(p["pageid"]) for p in body["query"]["pages"]})
    return [Page(t, ids[t], (first[t]._replace(page_id=ids[t]),
                             made(ids[t], lambda: admin.edit(t, f"Revision 1, {uuid.uuid4().hex}.", summary="second"))))
            for t in titles]


class Store:
    """Prepared reads of one run's keyspace: the revisions stored for a page, and whether a text is hidden."""

    def __init__(self, session: Any, keyspace: str, wiki: str):
        self.session = session
        self.wiki = wiki
        self._page = session.prepare(f"SELECT rev_id, text_hidden, sha1_hidden, sha1 FROM {keyspace}.revisions_by_page "
                                     "WHERE wiki = ? AND page_id = ? AND month = ?")
        self._text = session.prepare(f"SELECT rev_id FROM {keyspace}.revision_text WHERE wiki = ? AND rev_id = ?")

    def rows(self, page_id: int, months: tuple[int, ...]) -> dict[int, Any]:
        return {row.rev_id: row for month in months
                for row in self.session.execute(self._page, (self.wiki, page_id, month))}

    def has_text(self, rev_id: int) -> bool:
        return self.session.execute(self._text, (self.wiki, rev_id)).one() is not None

    def hidden(self, row: Any) -> bool:
        """The revision's text is gone from every table that holds it (docs/analysts.md)."""
        return (row is not None and row.text_hidden is True and row.sha1_hidden is True and row.sha1 is None
                and not self.has_text(row.rev_id))

    def seen(self, pending: Sequence[Rev], test: Callable[[Any], bool]) -> dict[Rev, float]:
        """The pending revisions whose revisions_by_page row passes `test`, each with when it was read."""
        out: dict[Rev, float] = {}
        for page_id, months in {(r.page_id, r.months) for r in pending}:
            rows = self.rows(page_id, months)
            now = time.monotonic()
            out.update({r: now for r in pending if (r.page_id, r.months) == (page_id, months)
                        and test(rows.get(r.rev_id))})
        return out

    def stored(self, pending: Sequence[Rev]) -> dict[Rev, float]:
        return self.seen(pending, lambda row: row is not None)

    def text_hidden(self, pending: Sequence[Rev]) -> dict[Rev, float]:
        return self.seen(pending, self.hidden)


def paced(actions: Sequence[Callable[[], Rev]], every_s: float,
          seen: Callable[[Sequence[Rev]], dict[Rev, float]]) -> Timed:
    """Makes the actions one every `every_s` on a thread of their own (a slow answer does not shift the ones
    after it) while this thread asks `seen` every CHECK_EVERY_S about those answered and not seen yet."""
    answered: SimpleQueue[tuple[Rev, float]] = SimpleQueue()
    span: list[float] = []

    def act() -> None:
        begin = time.monotonic()
        for i, action in enumerate(actions):
            time.sleep(max(0.0, begin + i * every_s - time.monotonic()))
            answered.put((action(), time.monotonic()))
        span.append(time.monotonic() - begin)

    pending: dict[Rev, float] = {}
    delays: list[float] = []
    misses = 0
    with ThreadPoolExecutor(1) as pool:
        acting = pool.submit(act)
        while not acting.done() or not answered.empty() or pending:
            try:
                while True:
                    rev, at = answered.get_nowait()
                    pending[rev] = at
            except Empty:
                pass
            if pending:
                for rev, when in seen(list(pending)).items():
                    delays.append(when - pending.pop(rev))
                now = time.monotonic()
                for rev in [r for r, at in pending.items() if now - at > MISS_AFTER_S]:
                    misses += 1
                    del pending[rev]
            time.sleep(CHECK_EVERY_S)
        acting.result()
    return Timed(delays, misses, len(actions) / span[0])


def user_agent(mode: str) -> str:
    return f"BlackWidowBench/{uuid.uuid4().hex[:8]} (feed latency, {mode}; ops@example.org)"


@contextlib.contextmanager
def watching(mode: str, edge: Edge, pages: Sequence[Page], run_dir: Path, ua: str) -> Iterator[tuple[Cluster, Store]]:
    """The mode's cluster on a fresh database and keyspace (default timings, the run's User-Agent), one tenant
    subscribed to the pages with content, once every page is caught up (and, with a feed, the feed read)."""
    hub_env, spawn_env = MODES[mode]
    newest = {p.title: p.revisions[-1].rev_id for p in pages}
    slug = "bench_latency_" + ("feed" if mode == FEED else "pages")
    with pg_database(slug) as db_url, cassandra_keyspace(slug) as (session, keyspace):
        spawn_defaults = {**DEFAULT_TIMINGS, "BW_HOST_DELAY_S": str(SPAWN_DEFAULTS.host_delay_s)}
        cluster = Cluster(run_dir / slug, database_url=db_url, keyspace=keyspace, user_agent=ua,
                          allowlist=EDGE_WRITABLE, hub_env={**DEFAULT_TIMINGS, **hub_env},
                          spawn_env={**spawn_defaults, **spawn_env})
        try:
            cluster.start(SPAWNS)
            readers = cluster.tenant("readers")["id"]
            cluster.subscribe(readers, edge.writable_api_url, [{"title": p.title} for p in pages], content=True)
            wait_for(lambda: sorted((s["title"], s["revisions"], s["last_rev_id"]) for s in cluster.hub.subscriptions())
                     == sorted((t, 2, rev_id) for t, rev_id in newest.items()),
                     CATCH_UP_TIMEOUT_S, 1.0, f"{len(pages)} pages caught up ({mode})")
            feed_read = (lambda: mode != FEED or any(f["lag_s"] is not None and f["error"] is None
                                                     for f in cluster.hub.get("/v1/feeds")["items"]))
            wait_for(feed_read, 120, 1.0, "the writable wiki's feed read")
            yield cluster, Store(session, keyspace, wiki_key(edge.writable_api_url))
        finally:
            cluster.stop()


def run(mode: str, edge: Edge, admin: AdminApi, run_dir: Path) -> Run:
    ua = user_agent(mode)
    pages = create_pages(admin, mode)
    offset = edge.log_offset()
    with watching(mode, edge, pages, run_dir, ua) as (cluster, store):
        time.sleep(SETTLE_S)
        idle = idle_minute(edge, ua)
        edit_offset = edge.log_offset()

        def edit(n: int) -> Callable[[], Rev]:
            page = pages[n % PAGES]
            return lambda: made(page.page_id, lambda: admin.edit(page.title, f"Edit {n}, {uuid.uuid4().hex}.",
                                                                 summary="latency probe"))
        edits = paced([edit(n) for n in range(EDITS[mode])], EDIT_EVERY_S, store.stored)
        edit_requests = edge.read_log(edit_offset, user_agent=ua)

        hides = None
        if mode == FEED:
            targets = [p.revisions[0] for p in pages[:HIDES]]
            assert all(store.has_text(r.rev_id) and not store.hidden(store.rows(r.page_id, r.months)[r.rev_id])
                       for r in targets), "a revision to hide has no stored text"

            def hide(rev: Rev) -> Callable[[], Rev]:
                def action() -> Rev:
                    admin.revisiondelete([rev.rev_id], hide=("content",), reason="latency probe")
                    return rev
                return action
            hides = paced([hide(r) for r in targets], HIDE_EVERY_S, store.text_hidden)
        feeds = cluster.hub.get("/v1/feeds")["items"]
    logged = edge.read_log(offset, user_agent=ua)
    return Run(mode, idle, edits, edit_requests, hides, sum(1 for r in logged if r.status == 429), len(logged), feeds)


def per_page_cycle() -> tuple[int, int]:
    """(prop=info requests, entries) for one due round of a RevisitBatcher holding each of the bench wiki's
    watched page ids under WATCHED_COPIES keys, nothing changed."""
    bench_wiki.service("up")
    try:
        sent: list[str] = []            # one outcome per HTTP request the client made
        client = MediaWikiClient(make_session(USER_AGENT), bench_wiki.API, limiter=HostLimiter(0.0),
                                 on_request=sent.append)
        watched = page_ids(client, bench_wiki.watched_titles())
        clock = FakeClock()
        batcher = RevisitBatcher(client, min_s=float(REVISIT_MIN_S), clock=clock)
        woken: list[str] = []
        keys = [(f"{title} #{copy}", pid, last) for copy in range(WATCHED_COPIES)
                for title, (pid, last) in watched.items()]
        for key, pid, last in keys:
            batcher.schedule(key, pid, last, 10.0, 3600.0, functools.partial(woken.append, key))
        clock.now = 10.0
        sent.clear()
        batcher.check_due()
        batcher.stop()
        client.http.close()
        assert len(watched) == bench_wiki.WATCHED and not woken, (len(watched), len(woken))
        return len(sent), len(keys)
    finally:
        bench_wiki.service("down")


class FeedReads(NamedTuple):
    requests: int           # list=recentchanges requests
    reads: int              # a read's requests follow each other within READ_GAP_S
    every_s: float          # mean time from one read's start to the next one's

    @property
    def per_read(self) -> float:
        return self.requests / self.reads if self.reads else float("nan")


def feed_reads(logged: Sequence[LoggedRequest]) -> FeedReads:
    feed = sorted((r for r in logged if kind(r) == RC), key=edge_use.start)
    starts = [edge_use.start(r) for before, r in zip([None, *feed], feed)
              if before is None or edge_use.start(r) - before.msec > READ_GAP_S]
    every = (starts[-1] - starts[0]) / (len(starts) - 1) if len(starts) > 1 else float("nan")
    return FeedReads(len(feed), len(starts), every)


def seconds(value: float) -> str:
    return f"> {MISS_AFTER_S:.0f}" if value == float("inf") else f"{value:.1f}"


def by_kind(logged: Sequence[LoggedRequest]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds(logged).items())) or "none"


def report(runs: dict[str, Run], cycle: tuple[int, int]) -> None:
    feed, per_page = runs[FEED], runs[PER_PAGE]
    assert feed.hides is not None
    idle_reads, edit_reads = feed_reads(feed.idle), feed_reads(feed.edit_requests)
    requests, reads, per_read = idle_reads.requests, idle_reads.reads, idle_reads.per_read
    batched, entries = cycle
    print(heading(14, "Change feed at a steady edit rate: edit → Cassandra, revision deletion → hidden"))
    print(f"A real hub and {SPAWNS} real spawns watch {PAGES} fresh two-revision pages of the writable wiki "
          "(content included) through the local edge (anonymous profile: 1 in flight, 5 r/s, 200/min), paced by "
          "the hub's budget for the wiki's identity, with the default timings of shared.config (hub poll every "
          f"{HUB_DEFAULTS.poll_interval_s:.0f} s), once per mode: **{FEED}** (the hub's default BW_FEED_INTERVAL_S, "
          f"{HUB_DEFAULTS.feed_interval_s:.0f} s: one list=recentchanges reader for the cluster) and **{PER_PAGE}** "
          f"(BW_FEED_INTERVAL_S=0, spawns' BW_REVISIT_MIN_S={REVISIT_MIN_S}). Once every page was caught up: the "
          "cluster's wiki requests in an idle minute (edge access log, the run's own User-Agent); then edits "
          f"round-robin over the pages, one every {EDIT_EVERY_S} s from a thread of their own "
          f"({EDITS[FEED]} in the feed run, {EDITS[PER_PAGE]} in the per-page run), each timed from the edit's "
          "answer to its row in revisions_by_page (prepared CQL, polled every "
          f"{CHECK_EVERY_S} s; a revision not there {MISS_AFTER_S:.0f} s after its edit is a miss, and counts as "
          f"never in the percentiles). In the feed run, then, the content of the first revision of {HIDES} pages "
          f"hidden (revisiondelete), one every {HIDE_EVERY_S:.0f} s, each timed from the answer to text_hidden and "
          "sha1_hidden true, sha1 null and no revision_text row. A per-page cycle over "
          f"{entries:,} pages is the spawn's RevisitBatcher through its MediaWikiClient on the benchmark wiki "
          f"({entries // WATCHED_COPIES:,} watched one-revision pages, each page id scheduled under "
          f"{WATCHED_COPIES} keys), all due at once, nothing changed.\n")

    print(table(["requests per cycle, nothing changed", "what a cycle is", "requests per cycle", "measured"], [
        [FEED, "one read of list=recentchanges", f"{per_read:.2f}",
         f"{requests} list=recentchanges requests in {reads} reads over an idle minute, one read every "
         f"{idle_reads.every_s:.1f} s (edge log)"],
        [PER_PAGE, f"{entries:,} watched pages asked once", batched,
         f"RevisitBatcher, {MAX_TITLES} page ids a prop=info request (client count)"],
        ["per-page ÷ feed", "", f"{batched / per_read:.0f}×", ""],
    ], right=(2,)))
    print()
    print(table(["run", "idle minute's wiki requests", "by kind"],
                [[r.mode, len(r.idle), by_kind(r.idle)] for r in (feed, per_page)], right=(1,)))
    print()

    def timed_row(name: str, t: Timed, extra: list) -> list:
        return [name, t.count, f"{t.rate_per_s:.2f}", t.misses, seconds(t.at(50)), seconds(t.at(99)),
                seconds(t.at(100)), *extra]

    rows = [timed_row(r.mode, r.edits, [len(r.edit_requests), f"{len(r.edit_requests) / r.edits.count:.2f}",
                                        r.throttled]) for r in (feed, per_page)]
    rows.append(["per-page ÷ feed", "", "", "", f"{per_page.edits.at(50) / feed.edits.at(50):.1f}×",
                 f"{per_page.edits.at(99) / feed.edits.at(99):.1f}×", "", "", "", ""])
    print(table(["edit → row in revisions_by_page", "edits", "edits/s", "misses", "p50 s", "p99 s", "max s",
                 "wiki requests meanwhile", "per edit", "429s (whole run)"], rows, right=range(1, 10)))
    print()
    print(table(["revision deletion → hidden in every table", "hidden", "per s", "misses", "p50 s", "p99 s",
                 "max s"], [timed_row(FEED, feed.hides, [])], right=range(1, 7)))
    print()
    for r in (feed, per_page):
        feeds = ", ".join(f"read by {f['reader']}, {f['changes']} changes, {f['gaps']} gaps, error {f['error']}"
                          for f in r.feeds) or "none"
        print(f"- {r.mode}: wiki requests while the edits were made and found, by kind: {by_kind(r.edit_requests)}; "
              f"{r.requests} wiki requests and {r.throttled} 429 answers over the whole run (catch-up included); "
              f"feeds at the end: {feeds}")
    print(f"- change feed reads (BW_FEED_INTERVAL_S {HUB_DEFAULTS.feed_interval_s:.0f} s): one every "
          f"{idle_reads.every_s:.1f} s in the idle minute ({reads} reads), one every {edit_reads.every_s:.1f} s while "
          f"the edits were made and found ({edit_reads.reads} reads); each waits for a slot of the identity's budget")
    print(f"- per-page ÷ feed: requests per cycle {batched / per_read:.0f}× ({batched} vs {per_read:.2f}); edit → "
          f"stored p50 {per_page.edits.at(50) / feed.edits.at(50):.1f}×, p99 "
          f"{per_page.edits.at(99) / feed.edits.at(99):.1f}×")
    print()
    p99, hide_p99 = feed.edits.at(99), feed.hides.at(99)
    print(f"- change feed requests per cycle, nothing changed: {per_read:.2f} ({requests} requests in {reads} "
          f"reads over an idle minute; per-page revisits: {batched} for {entries:,} pages) (goal ≤ "
          f"{GOALS['requests_per_cycle']}) {verdict(per_read <= GOALS['requests_per_cycle'])}")
    print(f"- change feed edit → row in Cassandra: p50 {seconds(feed.edits.at(50))} s, p99 {seconds(p99)} s over "
          f"{feed.edits.count} edits at {feed.edits.rate_per_s:.1f}/s, {feed.edits.misses} misses (per-page revisits: "
          f"p50 {seconds(per_page.edits.at(50))} s, p99 {seconds(per_page.edits.at(99))} s) (goal p99 ≤ "
          f"{GOALS['edit_p99_s']:.0f} s) {verdict(p99 <= GOALS['edit_p99_s'])}")
    print(f"- revision deletion → hidden in every table: p50 {seconds(feed.hides.at(50))} s, p99 {seconds(hide_p99)} s "
          f"over {feed.hides.count} revisions, {feed.hides.misses} misses (goal p99 ≤ one feed cycle + one poll "
          f"interval = {GOALS['hide_p99_s']:.0f} s) {verdict(hide_p99 <= GOALS['hide_p99_s'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the hub's and spawns' logs in this directory")
    args = parser.parse_args()
    edge = the_edge()
    admin = WritableWiki(API_URL, RUN_DIR).admin()
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        run_dir = args.keep or Path(tmp)
        runs = {mode: run(mode, edge, admin, run_dir) for mode in MODES}
    report(runs, per_page_cycle())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
