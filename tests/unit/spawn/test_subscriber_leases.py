"""A subscriber's lease as the hub sees it in status(): a cap lowered while a batch decided under the
old one is being written is not shown applied before that batch is delivered (the hub, seeing it applied,
would count on the lower cap while the batch may exceed it)."""
from shared.wire import SubscriptionSpec
from spawn.subscriber import Subscriber


def leased() -> Subscriber:
    sub = Subscriber(SubscriptionSpec(id="s", source_uuid="u", tenant_id="t", leased=True,
                                      wiki="http://127.0.0.1:8780/api.php", title="T"), seen_at=0, clock=lambda: 0.0)
    sub.offer_lease(1, 200, 60.0)
    sub.deliver(list(range(150)))
    return sub


def shown(sub: Subscriber) -> tuple[int, int, int]:
    status = sub.status()
    return status.revisions, status.lease.gen, status.lease.cap


def test_a_lower_cap_arriving_during_a_pledged_batch_shows_once_the_batch_is_delivered():
    sub = leased()
    allowance = sub.pledge()
    assert allowance == 50
    sub.offer_lease(2, 166, 60.0)                   # the hub lowers the cap to what it saw: 150 + 16
    assert shown(sub) == (150, 1, 200)              # not applied yet, as far as the hub may count on it
    assert sub.deliver(list(range(150, 167)), allowance) == 17      # decided under the old lease
    sub.settle()
    assert shown(sub) == (167, 2, 166)              # the hub now sees the count above the cap it confirms
    assert sub.remaining() == 0


def test_without_a_pledge_a_new_lease_shows_at_once_and_a_batch_not_written_settles_too():
    sub = leased()
    sub.offer_lease(2, 180, 60.0)
    assert shown(sub) == (150, 2, 180)
    sub.pledge()
    sub.offer_lease(3, 170, 60.0)
    assert shown(sub) == (150, 2, 180)
    sub.settle()                                    # the write failed: nothing delivered
    assert shown(sub) == (150, 3, 170)
