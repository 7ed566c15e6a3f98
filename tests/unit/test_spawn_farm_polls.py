"""The benchmark's simulated spawns take bounded polls as real ones do (bench.spawn_farm.SimNode): a paged list
names nothing for the orphan rule until its round is complete, and a report page starts after its cursor."""
import json

from bench.spawn_farm import SimNode
from shared.wire import Poll, PollPage, ReportPage


def poll(node: SimNode, ids, page=None, report=None) -> dict:
    body = Poll(node_id=node.node_id, assigned=tuple(ids), page=page, report=report).to_dict()
    return json.loads(node.report(node.polled(json.dumps(body).encode())))


def test_a_paged_list_becomes_what_keepalives_refresh_only_once_complete_and_reports_page_by_id():
    node = SimNode("http://127.0.0.1:1")
    for sub_id in "abcde":
        node.put(sub_id, {"id": sub_id})
    poll(node, ["a", "b"], PollPage("r", 0, 2))
    assert node.last_assigned == ()
    poll(node, ["c", "d"], PollPage("r", 1, 2))
    assert node.last_assigned == ("a", "b", "c", "d")
    first = poll(node, ["a"], report=ReportPage(None, 2))
    second = poll(node, ["a"], report=ReportPage(first["next"], 2))
    assert [s["id"] for s in first["subscriptions"]] == ["a", "b"] and first["next"] == "b"
    assert [s["id"] for s in second["subscriptions"]] == ["c", "d"]
    assert len(poll(node, ["a"])["subscriptions"]) == 5 and "next" not in poll(node, ["a"])
