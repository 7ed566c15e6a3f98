"""Paged polls on the spawn (spawn.poll_rounds, pure): a list is complete only with every page of one round."""
import pytest

from shared.wire import Poll, PollPage
from spawn import poll_rounds
from spawn.poll_rounds import Round
from tests.unit.spawn.test_node import make_node
from tests.unit.spawn.test_registry import spec


def run(polls):
    """Feed (round, page, pages, ids) tuples (round None: a whole list); the complete lists seen, in order."""
    current, complete = Round(), []
    for round_id, page, pages, ids in polls:
        current, done = poll_rounds.receive(current, None if round_id is None else PollPage(round_id, page, pages),
                                            ids)
        complete.append(done)
    return complete


@pytest.mark.parametrize("polls, expected", [
    # a whole list in one poll is complete at once, an empty one too
    ([(None, 0, 1, ("a", "b"))], [("a", "b")]),
    ([(None, 0, 1, ())], [()]),
    # pages of one round complete with the last one received, in any order
    ([("r", 0, 2, ("a",)), ("r", 1, 2, ("b",))], [None, ("a", "b")]),
    ([("r", 1, 2, ("b",)), ("r", 0, 2, ("a",))], [None, ("a", "b")]),
    # a repeated page changes nothing; repeated after completion it gives the same list again
    ([("r", 0, 2, ("a",)), ("r", 0, 2, ("a",)), ("r", 1, 2, ("b",)), ("r", 1, 2, ("b",))],
     [None, None, ("a", "b"), ("a", "b")]),
    # a page lost: the round never completes, and the next round starts over without the old pages
    ([("r1", 0, 2, ("a",)), ("r2", 1, 2, ("c",)), ("r2", 0, 2, ("b",))], [None, None, ("b", "c")]),
    # a whole list between pages ends the round
    ([("r", 0, 2, ("a",)), (None, 0, 1, ("x",)), ("r", 1, 2, ("b",))], [None, ("x",), None]),
])
def test_a_list_is_complete_only_with_every_page_of_one_round(polls, expected):
    assert run(polls) == expected


def paged(round_id, page, pages, *ids):
    return Poll(node_id="node-1", assigned=ids, page=PollPage(round_id, page, pages))


def test_a_spawn_drops_an_orphan_only_from_a_complete_paged_list():
    h, node = make_node()
    node.register_once()
    for sub_id in ("a", "b", "c"):
        node.put(spec(sub_id))
    h.clock.advance(30)                                   # past orphan_after_s (20 s) for all three
    node.heartbeat(paged("r1", 0, 2, "a"))                # "b" is on the page that never comes
    assert {s.id for s in h.registry.snapshot()} == {"a", "b", "c"}
    node.heartbeat(paged("r2", 0, 2, "a"))
    node.heartbeat(paged("r2", 1, 2, "b"))                # complete: "c" is named by neither page
    assert {s.id for s in h.registry.snapshot()} == {"a", "b"}
    h.clock.advance(30)
    node.keepalive()                                      # the complete list stays named between polls
    assert {s.id for s in h.registry.snapshot()} == {"a", "b"}


def test_a_bounded_report_pages_through_the_subscriptions_in_id_order():
    h, node = make_node()
    node.register_once()
    for sub_id in ("d", "a", "c", "b", "e"):
        node.put(spec(sub_id))
    pages, after = [], None
    while True:
        report = node.heartbeat(Poll.from_dict({"node_id": "node-1", "assigned": ["a", "b", "c", "d", "e"],
                                                "report": {"after": after, "limit": 2}}))
        pages.append([s.id for s in report.subscriptions])
        after = report.next
        if after is None:
            break
    assert pages == [["a", "b"], ["c", "d"], ["e"]]
    assert len(node.heartbeat(Poll(node_id="node-1", assigned=("a",))).subscriptions) == 5    # unbounded: all
