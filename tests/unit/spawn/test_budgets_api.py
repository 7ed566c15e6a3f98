"""POST /v1/budgets (a budget round: Budgets the hub changed between polls) through falcon.testing.TestClient over
create_app with the spawn's real UpstreamBudgets: the Budget is applied as a poll's is, the answer is the node's
use now (a slot given back when asked), Budgets meant for another node and bad bodies are refused."""
import time

import pytest
from falcon import testing

from shared.wire import Budget, Window
from spawn.app import create_app
from spawn.host_limiter import Backoff
from spawn.node import Node
from spawn.upstream_budget import UpstreamBudgets
from tests.unit.spawn.test_api import AUTH, SECRET
from tests.unit.spawn.test_node import FakeHub, Harness

HOST = "wiki.example.org"


@pytest.fixture
def env():
    h = Harness()
    node = Node(h.registry, FakeHub(), advertise_url="http://127.0.0.1:9999", detach_after_s=15.0,
                backoff=Backoff(base_s=1.0, cap_s=8.0, rand=lambda: 1.0), clock=h.clock,
                budgets=UpstreamBudgets(skew_s=0.5))
    node.register_once()
    return node, testing.TestClient(create_app(node, secret=SECRET, metrics_port=80))


def budget(gen: int, *, give_back: bool = False) -> Budget:
    now = time.time()
    return Budget(gen=gen, wiki_host=HOST, windows=(Window(now - 1, now + 15, 1, 3.0),), give_back=give_back)


def post(client, body, headers=AUTH):
    return client.simulate_post("/v1/budgets", json=body, headers=headers)


def test_a_rounds_budget_is_applied_as_a_polls_and_the_answer_is_the_nodes_use(env):
    node, client = env
    resp = post(client, {"node_id": node.node_id, "budgets": {HOST: budget(7).to_dict()}})
    assert resp.status_code == 200, resp.json
    assert resp.json["node_id"] == node.node_id
    # nothing of this node's waits for a request: it gives the windows back at once
    assert resp.json["identities"][HOST]["gen"] == 7 and resp.json["identities"][HOST]["released_gen"] == 7
    applied = node.budgets.identity(HOST).budget
    assert applied is not None and (applied.gen, applied.wiki_host, len(applied.windows)) == (7, HOST, 1)
    # an older gen, as a late poll might carry, does not replace it
    post(client, {"node_id": node.node_id, "budgets": {HOST: budget(6).to_dict()}})
    assert node.budgets.identity(HOST).gen == 7


def test_a_node_asked_to_give_back_with_nothing_waiting_says_so_in_its_answer(env):
    node, client = env
    post(client, {"node_id": node.node_id, "budgets": {HOST: budget(7).to_dict()}})
    resp = post(client, {"node_id": node.node_id, "budgets": {HOST: budget(8, give_back=True).to_dict()}})
    assert resp.json["identities"][HOST]["released_gen"] == 8
    # a round with no Budget only asks: the same answer, nothing applied
    again = post(client, {"node_id": node.node_id})
    assert again.status_code == 200 and again.json["identities"][HOST]["released_gen"] == 8
    assert node.budgets.identity(HOST).gen == 8


def test_budgets_meant_for_another_node_are_refused_and_not_applied(env):
    node, client = env
    resp = post(client, {"node_id": "someone-else", "budgets": {HOST: budget(7).to_dict()}})
    assert resp.status_code == 409 and resp.json["error"]["field"] == "node_id"
    assert node.budgets.report() == {}


@pytest.mark.parametrize("body, field", [
    ({}, "node_id"),
    ({"node_id": 3}, "node_id"),
    ({"node_id": "n", "budgets": []}, "budgets"),
    ({"node_id": "n", "budgets": {HOST: {"wiki_host": HOST}}}, "budgets"),
    ({"node_id": "n", "budgets": {f"h{i}": {"gen": 1, "wiki_host": f"h{i}"} for i in range(101)}}, "budgets"),
])
def test_a_bad_body_is_refused_naming_the_field(env, body, field):
    _, client = env
    resp = post(client, body)
    assert resp.status_code == 422 and resp.json["error"]["field"] == field


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}])
def test_a_round_without_the_node_secret_is_401(env, headers):
    node, client = env
    assert post(client, {"node_id": node.node_id}, headers).status_code == 401
