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


def test_the_farm_answers_what_changed_since_the_report_a_poll_names_as_spawns_do():
    node = SimNode("http://127.0.0.1:1")
    for sub_id in "abc":
        node.put(sub_id, {"id": sub_id})
    whole = poll(node, ["a", "b", "c"], report=ReportPage(None, 10))
    assert [s["id"] for s in whole["subscriptions"]] == ["a", "b", "c"] and "delta" not in whole
    steady = poll(node, ["a", "b", "c"], report=ReportPage(None, 10, since=whole["token"]))
    assert (steady["delta"], steady["subscriptions"], steady["removed"]) == (True, [], [])
    node.delete("b")
    node.put("d", {"id": "d"})
    changed = poll(node, ["a", "c", "d"], report=ReportPage(None, 10, since=steady["token"]))
    assert ([s["id"] for s in changed["subscriptions"]], changed["removed"]) == (["d"], ["b"])
    stale = poll(node, ["a", "c", "d"], report=ReportPage(None, 10, since=steady["token"]))
    assert "delta" not in stale and [s["id"] for s in stale["subscriptions"]] == ["a", "c", "d"]
