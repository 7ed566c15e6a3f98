"""The local edge (scripts/services/nginx.sh) behaves like Wikimedia's towards a harvester: it refuses generic
User-Agents, meters each identity (the User-Agent, or the session of a bot-password login) with its own limits
and answers excess with 429 + Retry-After, logs every request; and the writable wiki behind it takes an
administrator's changes while the seeded wiki stays as it was.

Every test meters a User-Agent of its own, so the shared edge's buckets from earlier tests or runs never count.
"""
import math
import re
import threading
import time
import uuid
from collections.abc import Callable

import pytest
import requests

from tests.fixtures.edge import Edge, fingerprint, private_edge
from tests.fixtures.writable_wiki import WikiApiError, api_call, login_with_bot_password

pytestmark = pytest.mark.integration

SITEINFO = {"action": "query", "meta": "siteinfo", "format": "json", "formatversion": "2"}
TIMEOUT = (3, 30)
MAX_BURST = 40                  # requests sent back to back before a test gives up waiting for a 429


def _user_agent(purpose: str) -> str:
    return f"BlackWidowEdgeTest-{purpose}/{uuid.uuid4().hex[:8]} (https://example.org/blackwidow; ops@example.org)"


def _until_throttled(http: requests.Session, url: str, params: dict | None = None) -> list[int]:
    """Back-to-back requests until the edge answers 429 three times in a row; returns the statuses."""
    statuses: list[int] = []
    while len(statuses) < MAX_BURST and statuses[-3:] != [429] * 3:
        statuses.append(http.get(url, params=params or SITEINFO, timeout=TIMEOUT).status_code)
    return statuses


def _paced(send: Callable[[], requests.Response], n: int, per_s: float) -> list[requests.Response]:
    """n requests started on a fixed schedule of per_s a second (a slow answer does not slow the schedule)."""
    t0 = time.monotonic()
    out = []
    for i in range(n):
        time.sleep(max(0.0, t0 + i / per_s - time.monotonic()))
        out.append(send())
    return out


def test_a_polite_client_passes(edge: Edge, mediawiki):
    resp = edge.session(_user_agent("polite")).get(edge.seeded_api_url, params=SITEINFO, timeout=TIMEOUT)
    assert resp.status_code == 200
    direct = mediawiki.session().get(mediawiki.api_url, params=SITEINFO, timeout=TIMEOUT).json()
    assert resp.json()["query"]["general"]["sitename"] == direct["query"]["general"]["sitename"]


@pytest.mark.parametrize("user_agent", [None, "", "python-requests/2.32.3", "curl/8.5.0", "Mozilla/5.0",
                                        "Wget/1.21.3", "Go-http-client/1.1", "MyHarvester/1.0 (no contact)"])
def test_generic_user_agents_are_refused(edge: Edge, user_agent):
    http = requests.Session()
    if user_agent is None:
        del http.headers["User-Agent"]
    else:
        http.headers["User-Agent"] = user_agent
    for url in (edge.seeded_api_url, edge.writable_api_url, edge.files_url + "any.xml"):
        assert http.get(url, params=SITEINFO, timeout=TIMEOUT).status_code == 403, url


def test_an_anonymous_burst_gets_429_with_retry_after(edge: Edge):
    http = edge.session(_user_agent("burst"))
    t0 = time.monotonic()
    statuses = _until_throttled(http, edge.seeded_api_url)
    elapsed = time.monotonic() - t0
    assert statuses[0] == 200 and statuses[-1] == 429 and set(statuses) == {200, 429}
    # a token bucket admits its depth plus its rate over the time the burst took, never more
    limits = edge.anonymous
    assert statuses.count(200) <= 1 + limits.burst_s + math.ceil(elapsed * limits.per_s)
    resp = http.get(edge.seeded_api_url, params=SITEINFO, timeout=TIMEOUT)
    assert resp.status_code == 429
    assert resp.headers["Retry-After"] == str(edge.retry_after_s) and edge.retry_after_s >= 1
    time.sleep(edge.retry_after_s)
    assert http.get(edge.seeded_api_url, params=SITEINFO, timeout=TIMEOUT).status_code == 200


def test_two_user_agents_are_metered_separately(edge: Edge):
    first, second = _user_agent("first"), _user_agent("second")
    offset = edge.log_offset()
    assert _until_throttled(edge.session(first), edge.seeded_api_url)[-1] == 429
    # the first identity is over its limit; the second is a different one
    assert edge.session(second).get(edge.seeded_api_url, params=SITEINFO, timeout=TIMEOUT).status_code == 200
    logged = {r.user_agent: r.identity for r in edge.read_log(offset, at_least=1, user_agent=second)}
    logged.update({r.user_agent: r.identity for r in edge.read_log(offset, user_agent=first)})
    assert logged == {first: fingerprint(first), second: fingerprint(second)}


def test_the_access_log_records_each_request(edge: Edge):
    user_agent = _user_agent("log")
    probe = uuid.uuid4().hex
    offset = edge.log_offset()
    statuses = _until_throttled(edge.session(user_agent), edge.seeded_api_url, {**SITEINFO, "probe": probe})
    lines = edge.read_log(offset, user_agent=user_agent, at_least=len(statuses))
    assert [line.status for line in lines] == statuses
    assert [line.msec for line in lines] == sorted(line.msec for line in lines)
    for line in lines:
        assert (line.wiki, line.identity_class, line.identity, line.method) == (
            "seeded", "anon", fingerprint(user_agent), "GET")
        assert line.uri.startswith("/api.php?") and f"probe={probe}" in line.uri
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}([+-]\d\d:\d\d|Z)", line.time), line.time
        assert line.request_time >= 0
        if line.status == 200:
            assert line.upstream_time is not None and line.limit_req == "PASSED"
        else:
            assert line.upstream_time is None and line.limit_req == "REJECTED"


def test_a_bot_password_login_through_the_edge_is_metered_as_its_own_identity(edge: Edge, writable_wiki):
    anonymous, authenticated = edge.anonymous, edge.authenticated
    assert authenticated.per_s > anonymous.per_s + 1, "the edge runs with settings this test cannot tell apart"
    user_agent = _user_agent("bot")
    credentials = writable_wiki.bot_credentials()
    offset = edge.log_offset()
    http = edge.session(user_agent)
    with pytest.raises(WikiApiError) as refused:
        api_call(http, edge.writable_api_url, action="query", meta="userinfo", **{"assert": "user"})
    assert refused.value.code == "assertuserfailed"
    time.sleep(1.0 / anonymous.per_s)

    assert login_with_bot_password(http, edge.writable_api_url, credentials) == credentials.username.split("@")[0]
    (session,) = [c.value for c in http.cookies if c.name.endswith("_BPsession") and c.value]

    # The User-Agent's anonymous meter is now full; the logged-in session still passes, at a pace above the
    # anonymous rate and below the authenticated one, which an anonymous client at that pace does not.
    assert _until_throttled(edge.session(user_agent), edge.writable_api_url)[-1] == 429
    pace = (anonymous.per_s + authenticated.per_s) / 2
    as_bot = _paced(lambda: http.get(edge.writable_api_url, timeout=TIMEOUT, params={
        **SITEINFO, "meta": "userinfo", "assert": "user"}), 10, pace)
    assert [r.status_code for r in as_bot] == [200] * 10
    assert {r.json()["query"]["userinfo"]["name"] for r in as_bot} == {"Admin"}
    other = edge.session(_user_agent("anonymous-at-bot-pace"))
    assert 429 in [r.status_code for r in _paced(
        lambda: other.get(edge.writable_api_url, params=SITEINFO, timeout=TIMEOUT), 10, pace)]

    lines = edge.read_log(offset, user_agent=user_agent, at_least=13)
    bot_lines = [line for line in lines if line.identity_class == "auth"]
    assert [line.status for line in bot_lines] == [200] * 10
    assert {(line.identity, line.wiki) for line in bot_lines} == {(fingerprint(session), "writable")}
    assert fingerprint(session) != fingerprint(user_agent)
    assert {line.identity for line in lines if line.identity_class == "anon"} == {fingerprint(user_agent)}
    logged = edge.log_path.read_bytes()[offset:].decode()
    assert credentials.password not in logged and session not in logged


def test_an_authorization_header_or_an_account_login_is_an_authenticated_identity(edge: Edge, writable_wiki):
    user_agent = _user_agent("credentials")
    offset = edge.log_offset()
    bearer = edge.session(user_agent)
    token = f"Bearer {uuid.uuid4().hex}"
    bearer.headers["Authorization"] = token
    assert bearer.get(edge.writable_api_url, params=SITEINFO, timeout=TIMEOUT).status_code == 200
    time.sleep(1.0 / edge.anonymous.per_s)

    admin = writable_wiki.admin(edge.writable_api_url, user_agent)
    assert admin.call(action="query", meta="userinfo")["query"]["userinfo"]["name"] == "Admin"
    (session,) = [c.value for c in admin.http.cookies if c.name.endswith("_session") and c.value]

    first, *login, last = edge.read_log(offset, user_agent=user_agent, at_least=4)
    assert (first.identity_class, first.identity) == ("auth", fingerprint(token))
    # the login itself is anonymous: the session it starts only counts once it belongs to an account
    assert {(line.identity_class, line.identity) for line in login} == {("anon", fingerprint(user_agent))}
    assert (last.identity_class, last.identity) == ("auth", fingerprint(session))


def test_a_stricter_edge_meters_per_minute_and_in_flight(edge: Edge):
    settings = {"BW_EDGE_ANON_PER_S": "100", "BW_EDGE_ANON_BURST_S": "100", "BW_EDGE_ANON_PER_MIN": "12",
                "BW_EDGE_ANON_BURST_MIN": "4", "BW_EDGE_ANON_IN_FLIGHT": "1"}
    with private_edge(settings) as strict:
        assert (strict.anonymous.per_min, strict.anonymous.burst_min, strict.anonymous.in_flight) == (12, 4, 1)
        assert strict.authenticated == edge.authenticated
        # per minute: a bucket one deep plus a burst of 4, refilled every 5 s
        per_minute = _user_agent("per-minute")
        http = strict.session(per_minute)
        statuses = [http.get(strict.seeded_api_url, params=SITEINFO, timeout=TIMEOUT).status_code for _ in range(8)]
        assert statuses == [200] * 5 + [429] * 3
        assert [line.limit_req for line in strict.read_log(user_agent=per_minute, at_least=8)][5:] == ["REJECTED"] * 3

        # in flight: four at once from one identity, one admitted at a time (a heavy request keeps it busy)
        in_flight = _user_agent("in-flight")
        heavy = {**SITEINFO, "meta": "", "prop": "revisions", "titles": "Synthetic article 1",
                 "rvprop": "ids|content", "rvslots": "main", "rvlimit": "50"}
        start = threading.Barrier(4)
        statuses = []

        def one() -> None:
            session = strict.session(in_flight)
            start.wait()
            statuses.append(session.get(strict.seeded_api_url, params=heavy, timeout=TIMEOUT).status_code)

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert 200 in statuses and 429 in statuses
        assert "REJECTED" in [line.limit_conn for line in strict.read_log(user_agent=in_flight, at_least=4)]


def test_files_are_served_without_limits_and_with_ranges(edge: Edge):
    name = f"test-{uuid.uuid4().hex}.xml"
    data = bytes(range(256)) * 40
    (edge.files_dir / name).write_bytes(data)
    try:
        http = edge.session(_user_agent("files"))
        url = edge.files_url + name
        n = 1 + edge.anonymous.burst_s + 3 * edge.anonymous.per_s
        assert [http.get(url, timeout=TIMEOUT).status_code for _ in range(n)] == [200] * n
        part = http.get(url, headers={"Range": "bytes=100-199"}, timeout=TIMEOUT)
        assert part.status_code == 206 and part.content == data[100:200]
    finally:
        (edge.files_dir / name).unlink()


def _seeded_state(mediawiki, title: str) -> tuple:
    body = api_call(mediawiki.session(), mediawiki.api_url, action="query", list="recentchanges", rclimit=1,
                    rcprop="ids|timestamp", prop="info", titles=title)
    return body["query"]["recentchanges"], body["query"]["pages"][0].get("missing", False)


def test_the_writable_wiki_takes_an_admin_edit_and_the_seeded_wiki_is_unchanged(
        edge: Edge, writable_wiki, mediawiki):
    title = writable_wiki.unique_title("Edge test")
    text = f"A page written by the edge test {uuid.uuid4().hex}."
    before = _seeded_state(mediawiki, title)
    assert before[1] is True

    revid = writable_wiki.admin().edit(title, text, "edge test")
    reader = edge.session(_user_agent("reader"))
    body = api_call(reader, edge.writable_api_url, action="query", prop="revisions", titles=title,
                    rvprop="ids|user|content", rvslots="main")
    (rev,) = body["query"]["pages"][0]["revisions"]
    assert (rev["revid"], rev["user"], rev["slots"]["main"]["content"]) == (revid, "Admin", text)
    assert _seeded_state(mediawiki, title) == before


def test_the_admin_helper_moves_hides_deletes_and_restores(writable_wiki):
    admin = writable_wiki.admin()
    title, moved = writable_wiki.unique_title("History test"), writable_wiki.unique_title("Moved test")
    first = admin.edit(title, "first text", "first")
    second = admin.edit(title, "second text", "second")
    admin.move(title, moved, leave_redirect=False)
    # a move adds a null revision that records it
    history = admin.history(moved)
    assert [r["revid"] for r in history[:2]] == [first, second] and len(history) == 3

    admin.revisiondelete([first], hide=("content", "comment"))
    # the current revision's content cannot be hidden: MediaWiki refuses that item, and so does the helper
    with pytest.raises(WikiApiError, match="revdelete-hide-current"):
        admin.revisiondelete([history[-1]["revid"]], hide=("content",))
    anonymous = writable_wiki.session()
    body = api_call(anonymous, writable_wiki.api_url, action="query", prop="revisions", titles=moved,
                    rvprop="ids|comment|content", rvslots="main", rvdir="newer", rvlimit=10)
    hidden, shown, _ = body["query"]["pages"][0]["revisions"]
    assert hidden["commenthidden"] and hidden["slots"]["main"]["texthidden"]
    assert shown["comment"] == "second" and shown["slots"]["main"]["content"] == "second text"

    admin.delete(moved)
    body = api_call(anonymous, writable_wiki.api_url, action="query", prop="info", titles=moved)
    assert body["query"]["pages"][0].get("missing") is True
    assert admin.undelete(moved) == 3
    assert [r["revid"] for r in admin.history(moved)] == [r["revid"] for r in history]


def test_the_admin_helper_imports_an_xml_export(writable_wiki):
    title = writable_wiki.unique_title("Imported test")
    revisions = "".join(
        f"<revision><timestamp>{ts}</timestamp><contributor><username>Importer</username></contributor>"
        f"<comment>{comment}</comment><model>wikitext</model><format>text/x-wiki</format>"
        f'<text xml:space="preserve">{comment} text</text></revision>'
        for ts, comment in (("2004-05-06T07:08:09Z", "old"), ("2005-06-07T08:09:10Z", "newer")))
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">'
           f"<page><title>{title}</title><ns>0</ns>{revisions}</page></mediawiki>").encode()
    admin = writable_wiki.admin()
    assert admin.import_xml(xml) == [{"ns": 0, "title": title, "revisions": 2}]
    # the two revisions as exported, then the null revision that records the import
    history = [(r["timestamp"], r["comment"], r["user"]) for r in admin.history(title)]
    assert history[:2] == [("2004-05-06T07:08:09Z", "old", "test>Importer"),
                           ("2005-06-07T08:09:10Z", "newer", "test>Importer")]
    assert history[2][1:] == ("2 revisions imported", "Admin")
