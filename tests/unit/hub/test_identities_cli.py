"""`blackwidow admin identities …` and `tenants patch --weight` map to the right REST calls."""
import pytest

from tests.unit.hub.test_cli import run

HOST = "en.wikipedia.org"


@pytest.mark.parametrize("argv, call", [
    (["identities", "list"], ("GET", "/v1/identities", None, None)),
    (["identities", "show", HOST], ("GET", f"/v1/identities/{HOST}", None, None)),
    (["identities", "set", HOST, "--in-flight", "3", "--per-s", "9.5", "--credential", "harvest-bot"],
     ("PATCH", f"/v1/identities/{HOST}", {"credential": "harvest-bot", "in_flight": 3, "per_s": 9.5}, None)),
    (["identities", "set", "127.0.0.1:8790", "--per-min", "none", "--credential", "none", "--maxlag", "3"],
     ("PATCH", "/v1/identities/127.0.0.1:8790", {"credential": None, "per_min": None, "maxlag": 3}, None)),
    (["identities", "set", HOST, "--resume"], ("PATCH", f"/v1/identities/{HOST}", {"paused_until": None}, None)),
    (["identities", "set", HOST, "--replace", "--slow-after-s", "2", "--slow-wait-s", "10"],
     ("PUT", f"/v1/identities/{HOST}", {"slow_after_s": 2.0, "slow_wait_s": 10.0}, None)),
    (["tenants", "patch", "T", "--weight", "2.5"], ("PATCH", "/v1/tenants/T", {"weight": 2.5}, None)),
])
def test_identity_commands_map_to_rest_calls(argv, call):
    calls, _ = run(argv)
    assert calls == [call]
