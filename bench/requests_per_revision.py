"""1. Request efficiency: MediaWiki API requests per 1,000 revisions harvested from the local wiki.

The spawn's own path (spawn.wikis -> DataSource -> MediaWikiClient, counted by the spawn's request
metric) harvests every seeded page from scratch, and the benchmark wiki's 20,000-revision history
(bench.bench_wiki), metadata only and with content, against the seed
design's loop (rvlimit=50 per request, continuing). The floor is what any client without
apihighlimits needs: one request per 500 revisions (50 with content) and at least one per page.

    .venv/bin/python -m bench.requests_per_revision
"""
import math
import tempfile
import uuid

import requests

from bench import bench_wiki
from bench.common import LOCAL_WIKI, USER_AGENT, heading, seeded_articles, table, timer, verdict
from shared.config import SpawnConfig
from shared.hashing import source_uuid
from shared.http import make_session
from shared.revisions.sqlite_store import SQLiteRevisionStore
from shared.wire import SubscriptionSpec
from spawn.mediawiki import PageUnavailable
from spawn.metrics import SpawnMetrics
from spawn.subscriber import Subscriber
from spawn.wikis import Wikis

SEED_RVLIMIT = 50
GOAL_METADATA = 2.1
GOAL_CONTENT = 20.0


def spawn_requests(api: str, titles: list[str], content: bool) -> dict[str, tuple[int, int]]:
    """{title: (requests, revisions)} harvesting each page through a spawn's DataSource."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = SpawnConfig.from_env({"BW_NODE_SECRET": "unused", "BW_DATA_DIR": tmp, "BW_HOST_DELAY_S": "0",
                                       "BW_USER_AGENT": USER_AGENT, "BW_REVISIT_MIN_S": "3600"})
        store = SQLiteRevisionStore(f"{tmp}/revisions.db")
        metrics = SpawnMetrics()
        wikis = Wikis(config, http=make_session(USER_AGENT), store=store, metrics=metrics)
        try:
            for title in titles:
                before = _requests(metrics)
                spec = SubscriptionSpec(id=str(uuid.uuid4()), source_uuid=str(source_uuid(api, title)),
                                        tenant_id="bench", wiki=api, title=title, content=content)
                source = wikis.make_source(spec, on_limit=lambda sub: None)
                source.attach(Subscriber(spec, seen_at=0.0))
                try:
                    source.run_once()
                except PageUnavailable:
                    pass            # a title that leads to another wiki: its requests count, it has no history here
                source.stop()
                out[title] = (_requests(metrics) - before, source.written)
        finally:
            wikis.stop()
            store.close()
    return out


def _requests(metrics: SpawnMetrics) -> int:
    return int(sum(s.value for family in metrics.api_requests.collect() for s in family.samples
                   if s.name.endswith("_total")))


def seed_requests(http: requests.Session, api: str, titles: list[str],
                  content: bool) -> dict[str, tuple[int, int]]:
    """{title: (requests, revisions)} for the seed design: rvlimit=50 per request, following continue."""
    rvprop = "ids|timestamp|flags|user|userid|size|sha1|comment|tags" + ("|content" if content else "")
    out = {}
    for title in titles:
        params = {"action": "query", "format": "json", "formatversion": "2", "prop": "revisions",
                  "titles": title, "rvlimit": str(SEED_RVLIMIT), "rvdir": "newer", "rvprop": rvprop,
                  "rvslots": "main"}
        n = revisions = 0
        cont: dict = {}
        while True:
            body = http.get(api, params={**params, **cont}, timeout=60).json()
            n += 1
            revisions += len(body["query"]["pages"][0].get("revisions", []))
            if "continue" not in body:
                break
            cont = body["continue"]
        out[title] = (n, revisions)
    return out


def per_1000(requests_: int, revisions: int) -> str:
    return f"{1000 * requests_ / revisions:.2f}"


def main() -> None:
    pages = seeded_articles()
    titles = [p.title for p in pages]
    biggest = max(pages, key=lambda p: len(p.revisions))
    long_label = f"'{bench_wiki.LONG_TITLE}' (benchmark wiki)"
    http = make_session(USER_AGENT)
    rows, measured, above = [], {}, {}
    bench_wiki.service("up")
    try:
        for content, cap in ((False, 500), (True, 50)):
            with timer() as spawn_s:
                spawn = spawn_requests(LOCAL_WIKI, titles, content)
            seed = seed_requests(http, LOCAL_WIKI, titles, content)
            spawn.update(spawn_requests(bench_wiki.API, [bench_wiki.LONG_TITLE], content))
            seed.update(seed_requests(http, bench_wiki.API, [bench_wiki.LONG_TITLE], content))
            mode = "with content" if content else "metadata only"
            subsets = ((f"all {len(titles)} seeded pages", titles), (f"'{biggest.title}'", [biggest.title]),
                       (long_label, [bench_wiki.LONG_TITLE]))
            for label, subset in subsets:
                s_req = sum(spawn[t][0] for t in subset)
                s_rev = sum(spawn[t][1] for t in subset)
                o_req = sum(seed[t][0] for t in subset)
                o_rev = sum(seed[t][1] for t in subset)
                assert s_rev == o_rev, f"spawn harvested {s_rev} revisions, the seed loop {o_rev}"
                floor = sum(max(1, math.ceil(seed[t][1] / cap)) for t in subset)
                measured[(content, label)] = 1000 * s_req / s_rev
                above[(content, label)] = s_req - floor
                rows.append((mode, label, f"{s_rev:,}", s_req, per_1000(s_req, s_rev), floor,
                             per_1000(floor, s_rev), o_req, per_1000(o_req, o_rev), f"{o_req / s_req:.1f}x"))
            rows.append((mode, f"(spawn harvest time, seeded pages: {spawn_s[0]:.1f} s)", *[""] * 8))
    finally:
        bench_wiki.service("down")
        http.close()

    print(heading(1, "Request efficiency: API requests per 1,000 revisions"))
    print("Every seeded page harvested from scratch from the local wiki by the spawn's DataSource "
          f"(host delay 0), and the {bench_wiki.LONG_TITLE.lower()} of the benchmark wiki "
          f"({bench_wiki.LONG_REVISIONS:,} revisions), against the seed design's loop (rvlimit=50). "
          "*Floor*: the fewest requests any client without `apihighlimits` can make (500 revisions per "
          "request, 50 with content, one per page at least). Request counts do not depend on the machine's "
          "load.\n")
    print(table(("harvest", "pages", "revisions", "spawn requests", "spawn /1,000", "floor", "floor /1,000",
                 "seed-000 requests", "seed-000 /1,000", "seed-000 ÷ spawn"), rows, right=range(2, 10)))
    n_big = len(biggest.revisions)
    meta_big, meta_long = measured[(False, f"'{biggest.title}'")], measured[(False, long_label)]
    content_big, content_long = measured[(True, f"'{biggest.title}'")], measured[(True, long_label)]
    content_ok = max(abs(content_big - GOAL_CONTENT), abs(content_long - GOAL_CONTENT)) <= 0.1 * GOAL_CONTENT
    print(f"\nGoal ≤ {GOAL_METADATA} per 1,000 (metadata): {meta_long:.2f} on the "
          f"{bench_wiki.LONG_REVISIONS:,}-revision history — {verdict(meta_long <= GOAL_METADATA)}; "
          f"{meta_big:.2f} on '{biggest.title}' ({n_big:,} revisions) — "
          f"{verdict(meta_big <= GOAL_METADATA)}. Goal ≈ {GOAL_CONTENT:.0f} (content): {content_big:.2f} and "
          f"{content_long:.2f} — {verdict(content_ok)}.")
    floor_big = 1000 * math.ceil(n_big / 500) / n_big
    over = [n for n in above.values() if n > 0]
    cost = ("makes exactly the floor's requests in every harvest above" if not over else
            f"still exceeds the floor in {len(over)} of the harvests above (by at most {max(over)} requests)")
    print(f"\nWhy {meta_big:.2f} on {n_big:,} revisions: the spawn resolves the title (redirects, "
          f"normalisation, page id) in its first history request (`titles=…&redirects=1&prop=revisions|info`) "
          f"and reads the rest by page id from that answer's continuation, so it {cost}. The floor itself is "
          f"{floor_big:.2f} for {n_big:,} revisions (the last request is partly empty), so ≤ {GOAL_METADATA} "
          f"is out of reach there for any client without `apihighlimits`; it holds on long histories, where the "
          f"cost tends to 2.0. On the whole seeded wiki the one-request-per-page minimum dominates "
          f"({len(titles)} pages, most under 500 revisions).")


if __name__ == "__main__":
    main()
