"""The scheduler's index of route keys for the change feed (blackwidow.feed_tick): built once, kept while the
snapshot, the admin API's changes and the page keys stay the same, and built again when any of them moves."""
from blackwidow import feed_tick, poller
from blackwidow.store.coordination import AssignmentView, Snapshot, SubscriptionView
from shared.hashing import source_uuid
from shared.wire import SubscriptionSpec

WIKI = "http://wiki.test/w/api.php"


def view(sid: str, title: str, node: str | None, page_key: str | None = None) -> SubscriptionView:
    spec = SubscriptionSpec(id=sid, source_uuid=str(source_uuid(WIKI, title)), tenant_id="t", wiki=WIKI, title=title)
    return SubscriptionView(sid, spec, True, "running", node, 0, None, None, page_key)


def test_the_index_is_kept_between_ticks_and_built_again_when_page_keys_change():
    snap = Snapshot({}, {"a": view("a", "Apple", "n1"), "b": view("b", "apple", "n2",
                                                                  str(source_uuid(WIKI, "Apple")))},
                    {"a": AssignmentView("n1", True, None)})
    state = poller.PollerState(cache=poller.Cached(snap, 7))

    def routes():
        return feed_tick.routes(state.feed, snap, poller._routes_version(state))
    first = routes()
    assert first == {WIKI: {str(source_uuid(WIKI, "Apple")): ["a", "b"]}}
    assert routes() is first                                         # nothing changed: no pass over the rows
    assert feed_tick.nodes_of(snap, first[WIKI][str(source_uuid(WIKI, "Apple"))]) == {"n1", "n2"}

    snap.subscriptions["b"] = view("b", "apple", "n2", str(source_uuid(WIKI, "Pear")))
    state.page_keys += 1                                             # a tick wrote a page key
    assert routes()[WIKI] == {str(source_uuid(WIKI, "Apple")): ["a"], str(source_uuid(WIKI, "Pear")): ["b"]}
    state.cache = poller.Cached(snap, 8)                             # the admin API changed something
    assert routes() is not first
