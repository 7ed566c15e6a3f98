"""2. Change detection: API requests for one revisit cycle over 1,000 watched, unchanged articles.

The spawn's RevisitBatcher (prop=info, up to 50 page ids a request) against one prop=info request per
article, both through the spawn's MediaWikiClient, on the benchmark wiki (bench.bench_wiki: 1,000
one-revision articles on its own port, built on first use).

    .venv/bin/python -m bench.change_detection
"""
import threading

from bench import bench_wiki
from bench.common import USER_AGENT, heading, table, timer, verdict
from shared.http import make_session
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MediaWikiClient
from spawn.revisit import RevisitBatcher

GOAL = 20


class FakeClock:
    """The batcher's clock: entries fall due when the benchmark says so, not on the batcher's thread."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def page_ids(client: MediaWikiClient, titles: list[str]) -> dict[str, tuple[int, int]]:
    """{title: (page_id, lastrevid)}, read 50 titles at a time (setup, not measured)."""
    out = {}
    for i in range(0, len(titles), 50):
        body = client.query({"prop": "info", "titles": "|".join(titles[i:i + 50])})
        for page in body["query"]["pages"]:
            out[page["title"]] = (page["pageid"], page["lastrevid"])
    return out


def main() -> None:
    bench_wiki.service("up")
    try:
        http = make_session(USER_AGENT)
        counted = [0]
        lock = threading.Lock()

        def on_request(outcome: str) -> None:
            with lock:
                counted[0] += 1

        client = MediaWikiClient(http, bench_wiki.API, limiter=HostLimiter(0.0), on_request=on_request)
        watched = page_ids(client, bench_wiki.watched_titles())
        assert len(watched) == bench_wiki.WATCHED, f"{len(watched)} watched pages found"

        clock = FakeClock()
        batcher = RevisitBatcher(client, min_s=60.0, clock=clock)
        woken = []
        for title, (pid, last) in watched.items():
            batcher.schedule(title, pid, last, 10.0, 3600.0, lambda t=title: woken.append(t))
        clock.now = 10.0
        counted[0] = 0
        with timer() as batched_s:
            batcher.check_due()
        batched = counted[0]
        batcher.stop()
        assert not woken, f"{len(woken)} unchanged pages were woken"

        counted[0] = 0
        changed = 0
        with timer() as single_s:
            for pid, last in watched.values():
                changed += client.last_rev_ids([pid])[pid] != last
        single = counted[0]
        assert changed == 0
        http.close()
    finally:
        bench_wiki.service("down")

    n = len(watched)
    print(heading(2, "Change detection: one revisit cycle over 1,000 unchanged articles"))
    print(f"{n:,} watched one-revision articles on the benchmark wiki, all due at once; nothing changed, "
          "so nothing may be woken. Both columns go through the spawn's MediaWikiClient (host delay 0). "
          "Request counts are exact; seconds are indications.\n")
    print(table(("method", "requests", "requests per article", "seconds", "articles/s"), [
        ("RevisitBatcher: batched prop=info (50 page ids)", batched, f"{batched / n:.3f}",
         f"{batched_s[0]:.2f}", f"{n / batched_s[0]:,.0f}"),
        ("one prop=info per article", single, f"{single / n:.3f}", f"{single_s[0]:.2f}",
         f"{n / single_s[0]:,.0f}"),
        ("ratio (one per article ÷ batched)", f"{single / batched:.0f}x", "",
         f"{single_s[0] / batched_s[0]:.1f}x", ""),
    ], right=range(1, 5)))
    print(f"\nGoal ≤ {GOAL} requests per cycle: {batched} — {verdict(batched <= GOAL)}.")


if __name__ == "__main__":
    main()
