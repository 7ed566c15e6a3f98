from datetime import datetime, timedelta, timezone

import pytest

from blackwidow.liveness import Flapping, Restarts, after_registration, quarantined

T = datetime(2026, 1, 1, tzinfo=timezone.utc)
RULE = Flapping(limit=3, window_s=300, quarantine_s=600)


def at(s: float) -> datetime:
    return T + timedelta(seconds=s)


# (name, known, before, now, expected)
CASES = [
    ("a new node starts a clean count", False, Restarts(5, at(0), None), at(10), Restarts(0, at(10), None)),
    ("first restart opens a window", True, Restarts(0, None, None), at(10), Restarts(1, at(10), None)),
    ("a restart within the window counts", True, Restarts(1, at(0), None), at(100), Restarts(2, at(0), None)),
    ("the limit within the window quarantines", True, Restarts(2, at(0), None), at(200),
     Restarts(0, None, at(800))),
    ("a restart after the window starts it again", True, Restarts(2, at(0), None), at(301),
     Restarts(1, at(301), None)),
]


@pytest.mark.parametrize("name,known,before,now,expected", CASES, ids=[c[0] for c in CASES])
def test_after_registration(name, known, before, now, expected):
    assert after_registration(known, before, now, RULE) == expected


def test_quarantined():
    assert quarantined(at(10), at(9)) and not quarantined(at(10), at(10)) and not quarantined(None, at(0))
