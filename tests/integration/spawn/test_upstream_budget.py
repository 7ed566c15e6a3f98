"""A spawn's wiki requests under an upstream budget, measured on the local edge's access log
(scripts/services/nginx.sh, in front of the seeded and the writable wiki): nothing without a budget,
never more than the window's slots in flight nor its start rate, nothing outside the window; and a
bot-password login through the edge."""
import json
import time
import uuid

import pytest

from shared.config import SpawnConfig
from shared.hashing import source_uuid
from shared.revisions.sqlite_store import SQLiteRevisionStore
from shared.wire import Budget, Poll, SubscriptionSpec, Window
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import AuthRefused, MediaWikiClient
from spawn.metrics import SpawnMetrics
from spawn.node import Node
from spawn.registry import Registry
from spawn.upstream_budget import IdentityBudget, UpstreamBudgets
from spawn.wiki_auth import WikiAuth, load_credentials
from spawn.wiki_session import wiki_session
from spawn.wikis import Wikis
from tests.support.processes import wait_for

pytestmark = pytest.mark.integration

# small histories (one request each, quick to answer): many requests queue for the one slot
TITLES = ("Black widow", "Jumping spider", "Charlotte's Web", "Spiders & webs (1999)", "Wolf spider",
          "Huntsman spider", "Trapdoor spider", "Tarantula", "Web crawler")
SKEW = 0.5
TOLERANCE = 0.02        # nginx logs milliseconds; the spawn's and nginx's view of a start differ by a little
# a request cut at its deadline is logged once nginx sees the connection close; the hub's handover gap
# between two holders of a slot (2 x skew) is far larger
ABORT_TOLERANCE = 0.15


def unique_agent(what: str) -> str:
    return f"BlackWidowTests/0.1 ({what} {uuid.uuid4().hex[:8]}; blackwidow@example.org)"


@pytest.fixture
def spawn_node(edge, tmp_path):
    """An in-process spawn (registry, sources, identity budgets) harvesting the seeded wiki through the edge."""
    agent = unique_agent("upstream budget")
    config = SpawnConfig.from_env({"BW_NODE_SECRET": "s", "BW_DATA_DIR": str(tmp_path), "BW_USER_AGENT": agent,
                                   "BW_WIKI_ALLOWLIST": f"127.0.0.1:{edge.seeded_port}"})
    store = SQLiteRevisionStore(str(tmp_path / "revisions.db"))
    budgets = UpstreamBudgets(skew_s=SKEW)
    wikis = Wikis(config, http=wiki_session(agent, config.wiki_allowlist), store=store, metrics=SpawnMetrics(),
                  budgets=budgets)
    registry = Registry(wikis.make_source, orphan_after_s=600)
    node = Node(registry, None, advertise_url="http://127.0.0.1:1", detach_after_s=600,   # type: ignore[arg-type]
                budgets=budgets)
    yield node, agent
    registry.clear()
    wikis.stop()
    store.close()


def test_a_budget_of_one_slot_at_two_per_second_is_never_exceeded_and_nothing_goes_without_one(edge, spawn_node):
    node, agent = spawn_node
    identity = f"127.0.0.1:{edge.seeded_port}"
    offset = edge.log_offset()
    for i, title in enumerate(TITLES):
        node.put(SubscriptionSpec(id=f"s{i}", source_uuid=str(source_uuid(edge.seeded_api_url, title)),
                                  tenant_id=("t1", "t2")[i % 2], wiki=edge.seeded_api_url, title=title,
                                  identity=identity))
    wait_for(lambda: all(s.state == "waiting" for s in node.report().subscriptions), 5, what="sources waiting")
    time.sleep(1.0)
    assert edge.read_log(offset, user_agent=agent, timeout_s=0) == []
    assert {s.last_error for s in node.report().subscriptions} == {f"waiting for the upstream budget of {identity}"}
    assert node.report().identities[identity].backfill == {"t1": 5, "t2": 4}

    start = time.time() + 0.5
    window = Window(start=start, end=start + 8.0, slots=1, rate_per_s=2.0)
    # slow answers (a loaded test machine) must not idle the slot here: this test measures slots and rate
    budget = Budget(gen=1, wiki_host=identity, windows=(window,), slow_after_s=60.0, weights={"t1": 1.0, "t2": 1.0})
    node.heartbeat(Poll(node_id=node.node_id, budgets={identity: budget}))
    time.sleep(window.end - time.time() + 1.5)
    logged = sorted(edge.read_log(offset, user_agent=agent), key=lambda r: r.msec - r.request_time)
    spans = [(r.msec - r.request_time, r.msec) for r in logged]
    assert len(spans) >= len(TITLES), spans     # each source asked at least once; at most 2/s over 7 s
    # only the last may have been cut at the window's end (nginx logs 499: the client closed it)
    assert all(r.status == 200 for r in logged[:-1]) and logged[-1].status in (200, 499), [r.status for r in logged]
    assert spans[0][0] >= window.start + SKEW - TOLERANCE
    assert spans[-1][1] <= window.end - SKEW + ABORT_TOLERANCE
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        assert s1 >= e0 - TOLERANCE, "two requests in flight at once"
        assert s1 - s0 >= 0.5 - TOLERANCE, "more than 2 request starts per second"
    use = node.report().identities[identity]
    assert use.gen == 1 and use.requests == len(spans) and use.throttled == 0 and use.busy_s > 0
    # after the window: a newcomer asks nothing and says why
    after = edge.log_offset()
    late = "Synthetic article 1"
    node.put(SubscriptionSpec(id="late", source_uuid=str(source_uuid(edge.seeded_api_url, late)), tenant_id="t1",
                              wiki=edge.seeded_api_url, title=late, identity=identity))
    wait_for(lambda: any(s.id == "late" and s.state == "waiting" for s in node.report().subscriptions), 5,
             what="the newcomer waiting")
    time.sleep(1.0)
    assert edge.read_log(after, user_agent=agent, timeout_s=0) == []
    late_status = next(s for s in node.report().subscriptions if s.id == "late")
    assert late_status.last_error == f"waiting for the upstream budget of {identity}"


def paced_client(api_url: str, agent: str, credentials_file, credential: str | None):
    now = time.time()
    budget = IdentityBudget(api_url.split("/")[2], skew_s=SKEW)
    budget.apply(Budget(gen=1, wiki_host=budget.identity, credential=credential,
                        windows=(Window(now - 1, now + 60, 3, 10.0),), login=credential is not None))
    allow = (budget.identity,)
    http = wiki_session(agent, allow)
    auth = WikiAuth(load_credentials(str(credentials_file)), anonymous=http,
                    make_session=lambda: wiki_session(agent, allow))
    return MediaWikiClient(http, api_url, limiter=HostLimiter(0), budget=budget, auth=auth), budget


def test_a_bot_password_logs_in_through_the_edge_and_is_metered_as_the_account(edge, writable_wiki):
    agent = unique_agent("bot password")
    offset = edge.log_offset()
    client, budget = paced_client(edge.writable_api_url, agent, writable_wiki.credentials_file,
                                  writable_wiki.credential_name)
    assert client.resolve("Main Page").title == "Main Page"
    assert client.resolve("Main Page").title == "Main Page"     # the session is kept: no second login
    tokens, login, *queries = edge.read_log(offset, user_agent=agent, at_least=4)
    assert (tokens.method, login.method) == ("GET", "POST") and "lgpassword" not in login.uri
    assert [(q.identity_class, q.status) for q in queries] == [("auth", 200), ("auth", 200)]
    assert budget.use().requests == 4 and budget.use().auth_error is None


def test_credentials_the_wiki_refuses_are_reported_and_not_tried_again(edge, writable_wiki, tmp_path):
    agent = unique_agent("wrong bot password")
    creds = json.loads(writable_wiki.credentials_file.read_text())
    creds[writable_wiki.credential_name]["password"] = "not-the-password-" + uuid.uuid4().hex
    wrong = tmp_path / "credentials.json"
    wrong.write_text(json.dumps(creds))
    offset = edge.log_offset()
    client, budget = paced_client(edge.writable_api_url, agent, wrong, writable_wiki.credential_name)
    for _ in range(3):
        with pytest.raises(AuthRefused) as refused:
            client.resolve("Main Page")
    assert "not-the-password" not in str(refused.value)
    assert len(edge.read_log(offset, user_agent=agent, at_least=2)) == 2      # one token, one login
    assert budget.use().auth_error
