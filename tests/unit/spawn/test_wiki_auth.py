"""Authenticated and identity-paced access, fault paths with `responses`: logins, lapsed sessions,
refused credentials (no retry storm), OAuth 2 headers, 429 pauses, and secrets kept out of sight."""
import json
import logging
import time
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import responses

from shared.errors import ConfigError
from shared.wire import Budget, Window
from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import AuthRefused, MediaWikiClient, PageInfo
from spawn.upstream_budget import IdentityBudget
from spawn.wiki_auth import Credential, WikiAuth, load_credentials, parse_credentials
from spawn.wiki_session import check_user_agent

API = "http://wiki.test/w/api.php"
SECRET = "s3cr3t-bot-password-value"
TOKEN = "oauth-owner-only-token-value"
CREDENTIALS = {"bot": {"type": "botpassword", "username": "Harvester@BW", "password": SECRET},
               "owner": {"type": "oauth2", "token": TOKEN}}
INFO = {"query": {"pages": [{"pageid": 7, "ns": 0, "title": "Page", "lastrevid": 99}]}}


def paced(credential=None, *, gen=1):
    now = time.time()
    budget = IdentityBudget("wiki.test", skew_s=0.0)
    # with a credential, the hub gives this node (the only one waiting) its turn to log in
    budget.apply(Budget(gen=gen, wiki_host="wiki.test", credential=credential,
                        windows=(Window(now - 1, now + 60, 1, 1000.0),), login=credential is not None))
    http = requests.Session()
    auth = WikiAuth(parse_credentials(CREDENTIALS), anonymous=http, make_session=requests.Session)
    client = MediaWikiClient(http, API, limiter=HostLimiter(0), budget=budget, max_attempts=3, auth=auth,
                             backoff=Backoff(base_s=0.001, cap_s=0.001, rand=lambda: 0.0))
    return client, budget


class Wiki:
    """A scripted api.php: answers by action, and records every request (params and body merged)."""

    def __init__(self, *, password_ok=True, lapse_after=None, lapse_always=False):
        self.calls: list[dict] = []
        self.password_ok, self.lapse_after, self.lapse_always = password_ok, lapse_after, lapse_always
        self.logins = 0
        self.logged_in = False
        responses.add_callback(responses.GET, API, callback=self)
        responses.add_callback(responses.POST, API, callback=self)

    def __call__(self, request):
        params = {k: v[0] for k, v in parse_qs(urlparse(request.url).query).items()}
        if request.body:
            params.update({k: v[0] for k, v in parse_qs(request.body).items()})
        params["_method"], params["_auth"] = request.method, request.headers.get("Authorization")
        params["_url"] = request.url
        self.calls.append(params)
        if sum(1 for c in self.calls if c.get("prop") == "info") == self.lapse_after:
            self.logged_in = False
        if params.get("assert") == "user" and not (self.logged_in or params["_auth"]):
            return 200, {"Content-Type": "application/json"}, json.dumps(
                {"errors": [{"code": "assertuserfailed", "text": "You are no longer logged in."}]})
        if params.get("meta") == "tokens":
            return 200, {"Content-Type": "application/json"}, json.dumps({"query": {"tokens": {"logintoken": "t+\\"}}})
        if params.get("action") == "login":
            self.logins += 1
            self.logged_in = self.password_ok and not self.lapse_always
            result = {"result": "Success"} if self.password_ok else {
                "result": "Failed", "reason": {"code": "wrongpassword",
                                               "text": "Incorrect username or password entered. Please try again."}}
            return 200, {"Content-Type": "application/json"}, json.dumps({"login": result})
        return 200, {"Content-Type": "application/json"}, json.dumps(INFO)


def refused_then_silent(wiki: "Wiki", client: MediaWikiClient, match: str) -> int:
    """The first call is refused with the wiki's reason; later calls send nothing (no retry storm)."""
    with pytest.raises(AuthRefused, match=match):
        client.resolve("Page")
    sent = len(wiki.calls)
    for _ in range(3):
        with pytest.raises(AuthRefused):
            client.resolve("Page")
    assert len(wiki.calls) == sent
    return sent


@responses.activate
def test_a_bot_password_logs_in_by_post_once_and_asserts_the_user_on_every_request():
    wiki = Wiki()
    client, _ = paced("bot")
    assert client.resolve("Page") == PageInfo(7, 0, "Page", 99)
    assert client.resolve("Page") == PageInfo(7, 0, "Page", 99)
    tokens, login, *queries = wiki.calls
    assert tokens["meta"] == "tokens" and tokens["type"] == "login"
    assert login["_method"] == "POST" and login["lgname"] == "Harvester@BW" and login["lgtoken"] == "t+\\"
    assert login["lgpassword"] == SECRET and all(SECRET not in c["_url"] for c in wiki.calls)
    assert [q["assert"] for q in queries] == ["user", "user"] and wiki.logins == 1


@responses.activate
def test_a_lapsed_session_logs_in_again_once():
    wiki = Wiki(lapse_after=1)
    client, budget = paced("bot")
    assert client.resolve("Page").page_id == 7
    assert wiki.logins == 2 and budget.auth_error is None


@responses.activate
def test_a_session_that_keeps_lapsing_fails_and_stops_asking():
    wiki = Wiki(lapse_always=True)
    client, budget = paced("bot")
    refused_then_silent(wiki, client, "no longer logged in")
    assert wiki.logins == 2 and "no longer logged in" in budget.use().auth_error


@responses.activate
def test_refused_credentials_are_reported_with_the_wikis_reason_until_a_new_budget_gen():
    wiki = Wiki(password_ok=False)
    client, budget = paced("bot")
    assert refused_then_silent(wiki, client, "Incorrect username or password") == 2
    assert budget.use().auth_error.startswith("Incorrect username or password")
    budget.apply(Budget(gen=1, wiki_host="wiki.test", credential="bot", windows=budget.budget.windows, login=True))
    assert budget.auth_error is not None            # the same gen changes nothing
    wiki.password_ok = True
    budget.apply(Budget(gen=2, wiki_host="wiki.test", credential="bot", windows=budget.budget.windows, login=True))
    assert client.resolve("Page").page_id == 7 and budget.use().auth_error is None


@responses.activate
def test_an_oauth2_token_goes_in_the_authorization_header():
    wiki = Wiki()
    client, _ = paced("owner")
    client.resolve("Page")
    assert [(c["_auth"], c["assert"]) for c in wiki.calls] == [(f"Bearer {TOKEN}", "user")]


@responses.activate
def test_a_credential_the_spawn_does_not_hold_is_refused_without_a_request():
    wiki = Wiki()
    client, budget = paced("nobody")
    with pytest.raises(AuthRefused, match="'nobody' is not in this spawn's BW_CREDENTIALS_FILE"):
        client.resolve("Page")
    assert wiki.calls == [] and budget.use().auth_error


@responses.activate
def test_anonymous_identities_send_no_assertion_nor_header():
    wiki = Wiki()
    client, budget = paced(None)
    client.resolve("Page")
    assert "assert" not in wiki.calls[0] and wiki.calls[0]["_auth"] is None
    assert budget.use().requests == 1


@responses.activate
def test_a_429_pauses_the_identity_here_and_is_reported():
    responses.get(API, status=429, headers={"Retry-After": "0.2"}, body="slow down")
    responses.get(API, json=INFO)
    client, budget = paced(None)
    started = time.time()
    assert client.resolve("Page").page_id == 7
    assert time.time() - started >= 0.2
    use = budget.use()
    assert use.throttled == 1 and use.requests == 2
    budget.pause(30, "RateLimited: HTTP 429 Too Many Requests", throttled=True)
    use = budget.use()
    assert use.paused_until > time.time() + 25 and "429" in use.pause_reason and use.throttled == 2


def test_secrets_stay_out_of_reprs_messages_and_logs(tmp_path, caplog):
    creds = parse_credentials(CREDENTIALS)
    assert SECRET not in repr(creds) and TOKEN not in repr(creds) and SECRET not in str(creds["bot"])
    bad = {"bot": {"type": "botpassword", "username": "U@B", "password": 42}}
    with pytest.raises(ConfigError) as err:
        parse_credentials({**bad, "x": {"type": "oauth2", "token": ""}})
    assert "'password'" in str(err.value)
    path = tmp_path / "creds.json"
    path.write_text(json.dumps(CREDENTIALS)[:-5])
    with pytest.raises(ConfigError) as err:
        load_credentials(str(path))
    assert SECRET not in str(err.value) and TOKEN not in str(err.value)
    path.write_text(json.dumps(CREDENTIALS))
    assert load_credentials(str(path))["owner"] == Credential("owner", "oauth2", token=TOKEN)
    assert load_credentials(None) == {}
    with caplog.at_level(logging.DEBUG), responses.RequestsMock() as rsps:
        rsps.add(responses.GET, API, json={"query": {"tokens": {"logintoken": "t"}}})
        rsps.add(responses.POST, API, json={"login": {"result": "Failed", "reason": "wrong " + "password"}})
        client, budget = paced("bot")
        with pytest.raises(AuthRefused) as refused:
            client.resolve("Page")
    assert SECRET not in str(refused.value) and SECRET not in repr(refused.value)
    assert SECRET not in caplog.text and SECRET not in json.dumps(budget.use().to_dict())


@pytest.mark.parametrize("ua, ok", [
    ("BlackWidow/1.0 (https://bw.example.net/about; ops@bw.example.net)", True),
    ("BlackWidow/1.0 (ops@bw.example.net) python-requests/2.32", True),
    ("Mozilla/5.0 (compatible; BlackWidow/1.0; +https://bw.example.net)", False),
    ("python-requests/2.32.3", False), ("curl/8.5.0", False), ("Mozilla/5.0", False), ("", False), ("   ", False),
    ("BlackWidow/1.0", False), ("BlackWidow/1.0 (harvester of the history team)", False),
])
def test_the_user_agent_rule(ua, ok):
    if ok:
        assert check_user_agent(ua) == ua
    else:
        with pytest.raises(ConfigError, match="BW_USER_AGENT"):
            check_user_agent(ua)
