"""last_error says what is wrong now: an old error does not outlive recovery."""
from shared.wire import SubscriptionSpec
from spawn.subscriber import Subscriber


def make() -> Subscriber:
    return Subscriber(SubscriptionSpec(id="s", source_uuid="u", tenant_id="t",
                                       wiki="http://127.0.0.1:8780/api.php", title="T"), seen_at=0)


def test_retry_message_is_cleared_by_the_next_delivery():
    sub = make()
    sub.note_error("ReadTimeout: stalled (retrying in 4.0s)")
    assert sub.status().last_error.startswith("ReadTimeout")
    sub.deliver([1, 2])
    status = sub.status()
    assert status.last_error is None and status.revisions == 2 and status.state == "running"


def test_waiting_error_is_cleared_when_the_source_runs_again():
    sub = make()
    sub.set_state("waiting", "BadResponse: truncated JSON")
    assert sub.status().last_error == "BadResponse: truncated JSON"
    sub.set_state("running")
    assert sub.status().last_error is None


def test_an_error_without_progress_stays_visible():
    sub = make()
    sub.set_state("waiting", "Maxlagged: lagged 12 s")
    sub.deliver([])
    assert sub.status().last_error == "Maxlagged: lagged 12 s"
