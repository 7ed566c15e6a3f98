"""The scheduler's keepalives come from a process of its own (blackwidow.keepalive): they reach every node it
was told of, follow the node list when it changes, carry the node secret, and stop when told to or when the
scheduler's process is gone."""
import logging
import multiprocessing
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sqlalchemy as sa

from blackwidow import keepalive, scheduler
from blackwidow.store import coordination, register_node
from tests.fixtures.http_replies import reply_json
from tests.fixtures.hub import hub_config


class Node:
    """A node that notes each call: (path, Authorization header)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                node.calls.append((self.path, self.headers.get("Authorization")))
                reply_json(self, b'{"node_id": "n", "boot_id": "b", "attached": true}')

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self) -> int:
        return len(self.calls)


def quiet(node: Node, quiet_s: float = 1.0, timeout_s: float = 15.0) -> bool:
    """Whether calls to the node stop for `quiet_s` (several keepalive rounds) within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = node.count()
        time.sleep(quiet_s)
        if node.count() == seen:
            return True
    return False


def wait(predicate, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_keepalives_come_from_a_process_of_their_own_and_follow_the_node_list(sqlite_url):
    config = hub_config(sqlite_url, BW_POLL_INTERVAL_S="0.3")      # a keepalive round every 0.3 s
    a, b = Node(), Node()
    nodes = {"a": a.url}
    rounds: list[tuple[int, int]] = []
    thread, stop = keepalive.start(config, "bw-test/1 (ops@example.org)", lambda: dict(nodes),
                                   lambda sent, failed: rounds.append((sent, failed)))
    try:
        children = [p for p in multiprocessing.active_children() if p.name == "bw-keepalive"]
        assert len(children) == 1 and children[0].pid != os.getpid()
        assert wait(lambda: a.count() >= 2)
        assert b.count() == 0
        assert a.calls[0] == ("/v1/keepalive", f"Bearer {config.node_secret}")
        nodes["b"] = b.url                       # a node joined: kept alive from the next rounds on
        assert wait(lambda: b.count() >= 2)
        del nodes["a"]                           # gone: once the process has the new list, it stops there
        assert quiet(a)
        left, reached = a.count(), b.count()
        assert wait(lambda: b.count() >= reached + 4)
        assert a.count() == left
        assert rounds and all(failed == 0 for _, failed in rounds)
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()
    assert not [p for p in multiprocessing.active_children() if p.name == "bw-keepalive"]
    after = b.count()
    time.sleep(1.0)
    assert b.count() == after                    # stopped: nothing more is sent


def test_a_keepalive_process_stops_when_its_scheduler_goes(sqlite_url):
    """Its pipe closes with the scheduler: the process exits rather than keep nodes attached to nobody."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    node = Node()
    process = context.Process(target=keepalive._serve, args=(theirs, "s3cret", "bw-test/1 (ops@example.org)", 0.2),
                              daemon=True)
    process.start()
    theirs.close()
    ours.send({"n": node.url})
    assert wait(lambda: node.count() >= 2)
    ours.close()                                 # what the scheduler's death does to the pipe
    process.join(10)
    assert process.exitcode == 0


def test_a_stop_signal_to_the_process_group_is_an_expected_end_and_a_crash_is_not(sqlite_url, caplog):
    config = hub_config(sqlite_url, BW_POLL_INTERVAL_S="0.3")
    node = Node()
    for sig, level, event in ((signal.SIGTERM, logging.INFO, "keepalive.process_stopped"),
                              (signal.SIGKILL, logging.ERROR, "keepalive.process_lost")):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="blackwidow.keepalive"):
            thread, stop = keepalive.start(config, "bw-test/1 (ops@example.org)", lambda: {"n": node.url})
            try:
                child, = [p for p in multiprocessing.active_children() if p.name == "bw-keepalive"]
                assert wait(lambda: node.count() >= 1)
                os.kill(child.pid, sig)
                thread.join(15)
                assert not thread.is_alive()
            finally:
                stop.set()
                thread.join(15)
        assert [(r.levelno, r.msg) for r in caplog.records] == [(level, event)]


def test_keepalives_go_to_a_node_from_its_registration_not_from_the_next_tick(hub_maker, monkeypatch):
    nodes = scheduler.live_nodes(hub_maker)
    assert nodes() == {}
    with hub_maker.begin() as session:
        first = register_node(session, "http://127.0.0.1:9")[0].id
    assert nodes() == {first: "http://127.0.0.1:9"}          # no tick ran in between
    with hub_maker.begin() as session:
        second = register_node(session, "http://127.0.0.1:10")[0]
        second.state = coordination.DEAD
    assert nodes() == {first: "http://127.0.0.1:9"}          # a dead node's work moved: not kept alive

    def unreadable(session):
        raise sa.exc.OperationalError("select", {}, Exception("database gone"))

    monkeypatch.setattr(scheduler, "live_node_urls", unreadable)
    assert nodes() == {first: "http://127.0.0.1:9"}          # the last list, until the database answers


class _Process:
    exitcode = 0

    def join(self, timeout=None) -> None:
        pass

    def is_alive(self) -> bool:
        return False


def test_rounds_as_frequent_as_the_list_wait_do_not_keep_the_list_from_being_read():
    """The bridge reads the node list every `every_s` however often rounds arrive (rounds every 0.05 s here)."""
    ours, theirs = multiprocessing.Pipe()
    reads: list[float] = []
    stop = threading.Event()

    def nodes() -> dict[str, str]:
        reads.append(time.monotonic())
        return {}

    def feed() -> None:
        while not stop.is_set():
            theirs.send((1, 0))
            time.sleep(0.05)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    bridge = threading.Thread(target=keepalive._bridge, args=(ours, _Process(), nodes, None, 0.3, stop), daemon=True)
    bridge.start()
    time.sleep(1.5)
    stop.set()
    bridge.join(5)
    feeder.join(5)
    assert len(reads) >= 4
