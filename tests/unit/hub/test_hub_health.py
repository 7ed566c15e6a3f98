"""The hub's health decision (pure, one line per rule) and GET /health over a real SQLite store."""
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow.db import make_sessionmaker
from blackwidow.health import SchedulerRow, hub_health, stale_after_s
from blackwidow.models import SchedulerEpoch
from tests.fixtures.hub import api_client, hub_config

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=timezone.utc)


def ago(seconds: float, *, naive: bool = False) -> datetime:
    at = NOW - timedelta(seconds=seconds)
    return at.replace(tzinfo=None) if naive else at


LEADER = "hub-1:4242"


@pytest.mark.parametrize("database_ok, row, interval, healthy, scheduler", [
    (False, None, 2.0, False, "unknown"),                                   # database down
    (False, SchedulerRow(LEADER, ago(1)), 2.0, False, "unknown"),          # ... whatever the row said
    (True, None, 2.0, False, "absent"),                                     # no scheduler ever started
    (True, SchedulerRow(None, ago(1)), 2.0, False, "no_leader"),           # the leader stopped, none took over
    (True, SchedulerRow("", ago(1)), 2.0, False, "no_leader"),
    (True, SchedulerRow(LEADER, None), 2.0, False, "starting"),            # leads, no tick finished yet
    (True, SchedulerRow(LEADER, ago(1)), 2.0, True, "ok"),
    (True, SchedulerRow(LEADER, ago(30)), 2.0, True, "ok"),                # at the limit (30 s floor)
    (True, SchedulerRow(LEADER, ago(31)), 2.0, False, "stalled"),          # wedged
    (True, SchedulerRow(LEADER, ago(31)), 5.0, True, "ok"),                # 10 intervals = 50 s
    (True, SchedulerRow(LEADER, ago(51)), 5.0, False, "stalled"),
    (True, SchedulerRow(LEADER, ago(5, naive=True)), 2.0, True, "ok"),     # SQLite: naive UTC
    (True, SchedulerRow(LEADER, ago(40, naive=True)), 2.0, False, "stalled"),
    (True, SchedulerRow(LEADER, ago(-3)), 2.0, True, "ok"),                # scheduler's clock a little ahead
])
def test_hub_health(database_ok, row, interval, healthy, scheduler):
    health = hub_health(database_ok, row, NOW, interval)
    assert (health.healthy, health.body["scheduler"]) == (healthy, scheduler)
    assert health.body["status"] == ("ok" if healthy else "unavailable")
    assert health.body["database"] == ("ok" if database_ok else "unreachable")
    assert ("reason" in health.body) is not healthy
    assert LEADER not in str(health.body)              # /health is unauthenticated: no host names


def test_stale_after_is_ten_intervals_with_a_30_s_floor():
    assert [stale_after_s(i) for i in (0.5, 2.0, 3.0, 10.0)] == [30.0, 30.0, 30.0, 100.0]


def put_scheduler(maker, holder: str | None, last_tick_at: datetime | None) -> None:
    with maker.begin() as session:
        session.merge(SchedulerEpoch(name="scheduler", epoch=1, holder=holder, acquired_at=last_tick_at,
                                     last_tick_at=last_tick_at))


def test_health_503_without_a_scheduler_then_200_while_one_ticks(api, hub_maker):
    resp = api.simulate_get("/health", headers={"Authorization": ""})
    assert resp.status_code == 503
    assert resp.json["scheduler"] == "absent" and "no scheduler" in resp.json["reason"]

    put_scheduler(hub_maker, LEADER, datetime.now(timezone.utc))
    resp = api.simulate_get("/health", headers={"Authorization": ""})
    assert (resp.status_code, resp.json["status"], resp.json["scheduler"]) == (200, "ok", "ok")

    put_scheduler(hub_maker, LEADER, datetime.now(timezone.utc) - timedelta(seconds=120))
    resp = api.simulate_get("/health")
    assert (resp.status_code, resp.json["scheduler"]) == (503, "stalled")
    assert "120 s ago" in resp.json["reason"] or "119 s ago" in resp.json["reason"]

    put_scheduler(hub_maker, None, datetime.now(timezone.utc))
    assert api.simulate_get("/health").json["scheduler"] == "no_leader"


def test_health_503_when_the_database_does_not_answer():
    # nothing listens on port 1: the connection is refused at once
    url = "postgresql+psycopg2://bw:secret-pw@127.0.0.1:1/none"
    maker = make_sessionmaker(url)
    try:
        resp = api_client(hub_config(url), maker).simulate_get("/health")
        assert resp.status_code == 503
        assert resp.json["database"] == "unreachable" and resp.json["reason"]
        assert "secret-pw" not in resp.text
    finally:
        maker.kw["bind"].dispose()
