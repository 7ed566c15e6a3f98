"""The per-identity slot keeper around budget_rules, on the real clock with short windows: generations,
slots and rate under threads, lanes, slow answers, pauses and the report; and a request cut at its
window's end, sent again under the next window without counting as a failure (a local slow server)."""
import http.server
import json
import threading
import time

import pytest
import requests

from shared.wire import Budget, Window
from spawn.host_limiter import Cancelled, HostLimiter
from spawn.mediawiki import MediaWikiClient
from spawn.upstream_budget import BACKFILL, FEED, FRESH, RELEASE_IDLE_S, Demand, IdentityBudget
from spawn.wiki_session import wiki_session

SKEW = 0.0


def budget(gen=1, *, slots=1, rate=1000.0, start=-1.0, length=30.0, **kw):
    now = time.time()
    return Budget(gen=gen, wiki_host="h", windows=(Window(now + start, now + start + length, slots, rate),), **kw)


def test_an_older_generation_is_refused_and_an_equal_one_renews():
    ib = IdentityBudget("h", skew_s=SKEW)
    assert ib.apply(budget(2)) and ib.gen == 2
    assert not ib.apply(budget(1)) and ib.gen == 2
    renewed = budget(2, length=60.0)
    assert ib.apply(renewed) and ib.budget == renewed


def run_threads(ib, n, demand=Demand(), hold_s=0.05):
    """n threads each take one slot and hold it; returns (start, end) per request."""
    spans, lock = [], threading.Lock()

    def one():
        with ib.slot(demand):
            started = time.time()
            time.sleep(hold_s)
            with lock:
                spans.append((started, time.time()))
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return sorted(spans)


def max_in_flight(spans):
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_threads_never_hold_more_than_the_slots_nor_start_faster_than_the_rate():
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget(slots=2, rate=20.0))
    spans = run_threads(ib, 8, hold_s=0.1)
    assert len(spans) == 8 and max_in_flight(spans) == 2
    starts = [s for s, _ in spans]
    assert all(b - a >= 0.05 - 0.005 for a, b in zip(starts, starts[1:]))
    use = ib.use()
    assert use.requests == 8 and use.busy_s >= 0.8 and use.fresh == {} and use.backfill == {}


def test_without_a_budget_a_request_waits_says_why_and_can_be_cancelled():
    ib = IdentityBudget("h", skew_s=SKEW)
    told, cancel = [], threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(Cancelled):
        with ib.slot(Demand(BACKFILL, ("t1",)), cancel, told.append):
            pass
    assert told == ["waiting for the upstream budget of h"] and ib.use().requests == 0


def test_a_budget_arriving_serves_the_waiter_which_is_told_it_runs_again():
    ib = IdentityBudget("h", skew_s=SKEW)
    told = []
    seen = {}

    def later():
        time.sleep(0.2)
        seen["demand"] = ib.use().backfill
        ib.apply(budget())
    threading.Thread(target=later).start()
    with ib.slot(Demand(BACKFILL, ("t1", "t2")), None, told.append):
        pass
    assert told == ["waiting for the upstream budget of h", None]
    assert seen["demand"] == {"t1": 1, "t2": 1}


def queue_order(ib: IdentityBudget, demands: dict[str, Demand], first: Budget) -> list[str]:
    """The order in which sources queued before `first` arrives are served, one at a time."""
    order, lock = [], threading.Lock()

    def one(name, demand):
        with ib.slot(demand):
            with lock:
                order.append(name)
            time.sleep(0.01)
    threads = [threading.Thread(target=one, args=item) for item in demands.items()]
    for t in threads:
        t.start()
    time.sleep(0.3)             # all queued before the budget arrives
    ib.apply(first)
    for t in threads:
        t.join(10)
    return order


def test_the_freshness_lane_goes_first_and_backfill_follows_the_weights():
    ib = IdentityBudget("h", skew_s=SKEW)
    demands = {f"b{i}-{t}": Demand(BACKFILL, (t,)) for i in range(4) for t in ("heavy", "light")}
    order = queue_order(ib, {**demands, "fresh": Demand(FRESH, ("light",))},
                        budget(weights={"heavy": 3.0, "light": 1.0}))
    assert order[0] == "fresh"
    assert [name.split("-")[1] for name in order[1:5]].count("heavy") == 3


def test_endless_freshness_work_still_lets_backfill_start_every_fifth_request():
    ib = IdentityBudget("h", skew_s=SKEW)
    demands = {f"fresh{i}": Demand(FRESH, ("t",)) for i in range(12)}
    order = queue_order(ib, {"backfill": Demand(BACKFILL, ("t",)), **demands}, budget())
    assert order.index("backfill") == 4


def test_the_backfill_queue_counts_what_the_other_nodes_served_and_reports_its_own():
    ib = IdentityBudget("h", skew_s=SKEW)
    # equal weights, but the other nodes served heavy 3 requests more: light goes first here
    order = queue_order(ib, {f"b{i}-{t}": Demand(BACKFILL, (t,)) for i in range(3) for t in ("heavy", "light")},
                        budget(weights={"heavy": 1.0, "light": 1.0}, served={"heavy": 3.0}))
    assert [name.split("-")[1] for name in order[:3]] == ["light"] * 3
    assert ib.use().served == {"heavy": 3.0, "light": 3.0}


def test_a_source_with_a_request_in_flight_is_still_demand():
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget())
    with ib.slot(Demand(BACKFILL, ("t",))):
        assert ib.use().backfill == {"t": 1}
    assert ib.use().backfill == {}


def test_a_slow_answer_keeps_its_slot_for_the_slow_wait():
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget(slow_after_s=0.05, slow_wait_s=0.3))
    spans = run_threads(ib, 2, hold_s=0.1)
    assert spans[1][0] - spans[0][1] >= 0.3 - 0.01


def test_a_pause_stops_requests_here_and_is_reported_until_it_ends():
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget())
    ib.pause(0.3, "Maxlagged: Waiting for a database server: 6 seconds lagged")
    use = ib.use()
    assert use.paused_until > time.time() and use.pause_reason.startswith("Maxlagged") and use.throttled == 0
    # nobody was waiting when it reported, so it gave its window back; the hub's next poll brings a new one
    assert use.released_gen == 1
    ib.apply(budget(2))
    started = time.time()
    with ib.slot():
        pass
    assert time.time() - started >= 0.29
    assert ib.use().paused_until is None and ib.use().pause_reason is None


class SlowOnce(http.server.BaseHTTPRequestHandler):
    """api.php answering its first request after 3 s and every later one at once."""
    calls: list[float] = []

    def do_GET(self):
        SlowOnce.calls.append(time.time())
        if len(SlowOnce.calls) == 1:
            time.sleep(3.0)
        body = json.dumps({"query": {"pages": [{"pageid": 7, "ns": 0, "title": "Page", "lastrevid": 9}]}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass            # the client gave up at its window's end

    def log_message(self, *args):
        pass


def slow_server():
    SlowOnce.calls = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowOnce)
    server.daemon_threads, server.block_on_close = True, False     # the slow answer is not waited for
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def paced_client(server, ib, outcomes, timeout=10.0):
    session = wiki_session("bw-test/1.0 (https://example.org/bw; ops@example.org)",
                           (f"127.0.0.1:{server.server_port}",))
    return MediaWikiClient(session, f"http://127.0.0.1:{server.server_port}/api.php", limiter=HostLimiter(0),
                           budget=ib, max_attempts=1, on_request=outcomes.append, timeout=timeout)


def test_a_request_cut_at_its_windows_end_is_sent_again_under_the_next_and_not_counted_as_a_failure():
    server = slow_server()
    try:
        now = time.time()
        ib = IdentityBudget("h", skew_s=SKEW)
        ib.apply(Budget(gen=1, wiki_host="h", slow_after_s=60.0,
                        windows=(Window(now - 1, now + 1.0, 1, 10.0), Window(now + 1.5, now + 30, 1, 10.0))))
        outcomes = []
        page = paced_client(server, ib, outcomes).resolve("Page")
        assert page.page_id == 7 and outcomes == ["window_closed", "ok"]
        first, second = SlowOnce.calls
        assert second >= now + 1.5 and time.time() < first + 3.0     # cut at the end, not after the 3 s
    finally:
        server.shutdown()
        server.server_close()


def renewed_while_in_flight() -> IdentityBudget:
    """A hold ending 1 s from now, renewed to 30 s half a second later (the next poll, as the hub plans
    renewals two polls ahead)."""
    now = time.time()
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(Budget(gen=1, wiki_host="h", slow_after_s=60.0, windows=(Window(now - 1, now + 1.0, 1, 10.0),)))
    renewed = Budget(gen=2, wiki_host="h", slow_after_s=60.0, windows=(Window(now - 1, now + 30, 1, 10.0),))
    threading.Timer(0.5, ib.apply, (renewed,)).start()
    return ib


def test_a_request_runs_on_when_its_hold_is_renewed_while_it_waits_for_the_answer():
    server = slow_server()
    try:
        ib = renewed_while_in_flight()
        outcomes = []
        page = paced_client(server, ib, outcomes).resolve("Page")
        assert page.page_id == 7 and outcomes == ["ok"] and len(SlowOnce.calls) == 1
        assert time.time() - SlowOnce.calls[0] >= 2.9               # the whole answer, not cut at now + 1
    finally:
        server.shutdown()
        server.server_close()


def test_a_wiki_that_never_answers_within_a_renewed_window_is_a_read_timeout_not_a_closed_window():
    from spawn.mediawiki import TransportError
    server = slow_server()
    try:
        ib = renewed_while_in_flight()
        outcomes = []
        with pytest.raises(TransportError, match="ReadTimeout"):
            paced_client(server, ib, outcomes, timeout=2.0).resolve("Page")
        assert outcomes == ["transport"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_revisit_check_waits_as_freshness_demand_of_the_pages_tenants():
    from spawn.revisit import RevisitBatcher
    ib = IdentityBudget("h", skew_s=SKEW)
    client = MediaWikiClient(requests.Session(), "http://127.0.0.1:9/api.php", limiter=HostLimiter(0), budget=ib)
    batcher = RevisitBatcher(client, min_s=60)
    batcher.schedule("k1", 1, 10, 0.0, 60.0, lambda: None, ("t1",))
    batcher.schedule("k2", 2, 20, 0.0, 60.0, lambda: None, ("t1", "t2"))
    try:
        deadline = time.time() + 5
        while ib.use().fresh != {"t1": 1, "t2": 1} and time.time() < deadline:
            time.sleep(0.05)
        assert ib.use().fresh == {"t1": 1, "t2": 1} and ib.use().requests == 0    # one check for both pages
    finally:
        batcher.stop()


def test_a_source_that_must_log_in_waits_for_its_turn_reports_it_and_goes_on_when_given():
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget(credential="bot"))
    told, seen = [], {}

    def later():
        time.sleep(0.2)
        seen["use"] = ib.use()
        ib.apply(budget(gen=2, credential="bot", login=True))
    threading.Thread(target=later).start()
    with ib.login_turn(Demand(BACKFILL, ("t1",)), None, told.append):
        assert ib.use().needs_login           # still logging in: the turn stays here until the block ends
    assert told == ["waiting for its turn to log in to h", None]
    assert seen["use"].needs_login and seen["use"].backfill == {"t1": 1}     # demand, so the hub can pick it
    assert not ib.use().needs_login


def test_an_idle_node_gives_its_windows_back_and_starts_nothing_under_them_until_a_newer_budget():
    now = [1_000.0]
    ib = IdentityBudget("h", skew_s=SKEW, clock=lambda: now[0])
    ib.apply(Budget(gen=4, wiki_host="h", windows=(Window(990.0, 1_030.0, 1, 1000.0),)))
    with ib.slot():
        pass
    assert ib.use().released_gen is None           # a request started within RELEASE_IDLE_S
    now[0] += RELEASE_IDLE_S
    assert ib.use().released_gen == 4
    assert ib.apply(Budget(gen=4, wiki_host="h", windows=(Window(990.0, 1_030.0, 1, 1000.0),)))
    cancel = threading.Event()
    told: list = []
    waiter = threading.Thread(target=lambda: _try_slot(ib, cancel, told))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive() and told == ["waiting for the upstream budget of h"]     # an equal gen: still given back
    use = ib.use()
    assert use.backfill == {"t": 1} and use.released_gen == 4      # a source waits: demand, nothing new given back
    ib.apply(Budget(gen=5, wiki_host="h", windows=(Window(1_000.0, 1_030.0, 1, 1000.0),)))
    waiter.join(2)
    assert not waiter.is_alive() and told[-1] is None and ib.use().released_gen is None


def _try_slot(ib: IdentityBudget, cancel: threading.Event, told: list) -> None:
    with ib.slot(Demand(BACKFILL, ("t",)), cancel, told.append):
        pass


def holding() -> tuple[list[float], IdentityBudget, tuple[Window, ...]]:
    """(the clock, as a list to move it; an IdentityBudget on it holding one open window of gen 4; the window)."""
    now = [1_000.0]
    ib = IdentityBudget("h", skew_s=SKEW, clock=lambda: now[0])
    window = (Window(990.0, 1_030.0, 1, 1000.0),)
    ib.apply(Budget(gen=4, wiki_host="h", windows=window))
    return now, ib, window


def test_asked_to_give_back_it_starts_nothing_more_and_gives_back_once_its_request_has_ended():
    now, ib, window = holding()
    with ib.slot():
        ib.apply(Budget(gen=5, wiki_host="h", windows=window, give_back=True))
        assert ib.use().released_gen is None        # its request is still in flight
    assert ib.use().released_gen == 5               # ended: given back at once, no idle time needed
    cancel = threading.Event()
    told: list = []
    waiter = threading.Thread(target=lambda: _try_slot(ib, cancel, told))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive()                        # nothing starts under the gen it was asked for
    now[0] += 0.01                                  # past the request spacing of the window's rate
    ib.apply(Budget(gen=6, wiki_host="h", windows=window))
    waiter.join(2)
    assert not waiter.is_alive() and ib.use().released_gen is None


def test_a_feed_read_goes_before_the_freshness_lane_and_counts_as_backfill_demand():
    ib = IdentityBudget("h", skew_s=SKEW)
    order = queue_order(ib, {"fresh": Demand(FRESH, ("t",)), "backfill": Demand(BACKFILL, ("t",)),
                             "feed": Demand(FEED, ("t",))}, budget())
    assert order == ["feed", "fresh", "backfill"]
    ib = IdentityBudget("h", skew_s=SKEW)
    ib.apply(budget())
    with ib.slot(Demand(FEED, ("t",))):
        use = ib.use()
    assert use.backfill == {"t": 1} and use.fresh == {} and use.served == {}     # no tenant pays for the feed


def _waiter(ib: IdentityBudget, demand: Demand, started: list, name: str) -> threading.Thread:
    def run():
        with ib.slot(demand):
            started.append(name)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_asked_with_freshness_work_it_serves_what_waited_then_gives_back():
    now = [1_000.0]
    ib = IdentityBudget("h", skew_s=SKEW, clock=lambda: now[0])
    window = (Window(990.0, 1_030.0, 1, 1000.0),)
    started: list = []
    ib.apply(Budget(gen=4, wiki_host="h", windows=window))
    with ib.slot(Demand(FRESH, ("t",))):             # the slot is busy while three sources queue
        early = [_waiter(ib, Demand(FRESH, ("t",)), started, "fresh-1"),
                 _waiter(ib, Demand(BACKFILL, ("t",)), started, "backfill")]
        time.sleep(0.2)
        ib.apply(Budget(gen=5, wiki_host="h", windows=window, give_back=True))
        late = _waiter(ib, Demand(FRESH, ("t",)), started, "fresh-2")
        time.sleep(0.2)
        now[0] += 0.01
    early[0].join(2)
    time.sleep(0.3)
    # the freshness source that waited before the ask is served; the backfill and the later one are not
    assert started == ["fresh-1"] and early[1].is_alive() and late.is_alive()
    assert ib.use().released_gen == 5
    now[0] += 0.01
    ib.apply(Budget(gen=6, wiki_host="h", windows=window))
    late.join(2)
    now[0] += 0.01
    early[1].join(2)
    assert started[1:] == ["fresh-2", "backfill"]


def test_a_feed_reader_keeps_its_windows_between_reads_until_asked():
    now, ib, window = holding()
    with ib.following():
        with ib.slot(Demand(FEED, ("t",))):
            pass
        now[0] += 5 * RELEASE_IDLE_S
        use = ib.use()
        assert use.following and use.released_gen is None and use.backfill == {}
        ib.apply(Budget(gen=5, wiki_host="h", windows=window, give_back=True))
        assert ib.use().released_gen == 5
    now[0] += 0.01
    ib.apply(Budget(gen=6, wiki_host="h", windows=window))
    assert not ib.use().following
    now[0] += RELEASE_IDLE_S
    assert ib.use().released_gen == 6                  # no reader: idle windows go back as before


def test_granted_and_asked_again_after_giving_back_it_serves_what_waits_now():
    # a node asked at every turn: the ask that comes with a later turn is a new one, so the freshness work that
    # arrived after the first ask is served in the second turn, not refused turn after turn
    now, ib, window = holding()
    started: list = []
    ib.apply(Budget(gen=5, wiki_host="h", windows=window, give_back=True))
    assert ib.use().released_gen == 5                  # nothing waited: given back at once
    late = _waiter(ib, Demand(FRESH, ("t",)), started, "fresh")
    time.sleep(0.2)
    assert late.is_alive()                             # arrived after the ask: not in this turn
    now[0] += 0.01
    ib.apply(Budget(gen=6, wiki_host="h", windows=window, give_back=True))
    late.join(2)
    assert started == ["fresh"] and ib.use().released_gen == 6
