"""The hub dashboard in a real browser: a `blackwidow serve` (gunicorn, SQLite) filled through the admin API
and the store, then Debian's headless Chromium loads /dashboard#token=… and we read what it rendered."""
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import requests

from blackwidow.db import make_sessionmaker
from blackwidow.models import utcnow
from tests.fixtures import dashboard
from tests.fixtures.hub import ADMIN, ADMIN_TOKEN
from tests.integration.test_hub_serve import serve_only

pytestmark = pytest.mark.integration
CHROMIUM = os.environ.get("BW_CHROMIUM", "/usr/bin/chromium")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class RenderedPage(HTMLParser):
    """What a person sees in the dumped DOM: text per element id, table rows as cell texts, and whether
    an element is hidden. Text fragments are joined with single spaces."""

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []          # every start tag, in order
        self.attrs: dict[str, dict] = {}
        self.texts: dict[str, list[str]] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self._open: list[tuple[str, str | None]] = []
        self._table: list[str | None] = []
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        if "id" in attrs:
            self.attrs[attrs["id"]] = attrs
            self.texts.setdefault(attrs["id"], [])
        if tag == "table":
            self._table.append(attrs.get("id"))
        elif tag == "tr" and self._table and self._table[-1]:
            self.rows.setdefault(self._table[-1], []).append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self._open.append((tag, attrs.get("id")))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table and self._table[-1]:
            self.rows[self._table[-1]][-1].append(" ".join(self._cell))
            self._cell = None
        if tag == "table" and self._table:
            self._table.pop()
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data):
        text = " ".join(data.split())
        if not text:
            return
        for _, element_id in self._open:
            if element_id:
                self.texts[element_id].append(text)
        if self._cell is not None:
            self._cell.append(text)

    def text(self, element_id: str) -> str:
        return " ".join(self.texts.get(element_id, []))

    def hidden(self, element_id: str) -> bool:
        return "hidden" in self.attrs[element_id]

    def body_rows(self, table_id: str) -> list[list[str]]:
        return self.rows.get(table_id, [])[1:]              # the first row is the header


def chromium(url: str, profile: Path, *args: str, budget_ms: int = 3000) -> str:
    """Runs headless Chromium on `url` with a fresh profile; returns its stdout (the DOM with --dump-dom)."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
         *args, url],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def seeded_hub(tmp_path_factory):
    assert os.access(CHROMIUM, os.X_OK), f"no {CHROMIUM}: run scripts/services/browser.sh up (make test does)"
    run = tmp_path_factory.mktemp("dashboard")
    database_url = f"sqlite:///{run / 'hub.db'}"
    hub = serve_only({"BW_DATABASE_URL": database_url, "BW_DATA_DIR": str(run / "data")}, run)
    maker = None
    try:
        maker = make_sessionmaker(database_url)

        def post(path, body, headers):
            resp = requests.post(hub.url + path, json=body, headers=headers or ADMIN, timeout=10)
            assert resp.status_code in (200, 201), resp.text
            return resp.json()

        dashboard.seed(post, maker, utcnow())
        yield hub, run
    finally:
        if maker is not None:
            maker.kw["bind"].dispose()
        hub.stop()


def test_operator_sees_nodes_states_quotas_and_reloads(seeded_hub, tmp_path):
    hub, _ = seeded_hub
    page = RenderedPage(chromium(f"{hub.url}/#token={ADMIN_TOKEN}", tmp_path / "profile", "--dump-dom"))

    assert not page.hidden("data") and page.hidden("auth")
    assert page.text("status").startswith("Updated ")
    assert [page.text(f"total-{name}") for name in ("nodes", "subscriptions", "revisions", "tenants")] == \
        ["2 (1 down)", "8", f"{dashboard.REVISIONS:,}", "3"]
    assert page.text("state-counts") == " ".join(f"{n} {state.replace('_', ' ')}"
                                                 for state, n in dashboard.STATE_COUNTS.items())

    nodes = {row[1]: row for row in page.body_rows("nodes")}
    assert list(nodes) == list(dashboard.NODE_URLS)                     # live ones first
    assert [(row[2], row[4], row[5]) for row in nodes.values()] == [("live", "0", "3"), ("live", "0", "2"),
                                                                    ("dead", "3", "0")]
    assert nodes["http://127.0.0.1:8701"][3].endswith(" s ago")
    assert nodes["http://127.0.0.1:8702"][3] in ("1 min ago", "2 min ago")
    assert nodes["http://127.0.0.1:8703"][3].endswith(" min ago")
    assert [row[6] for row in nodes.values()] == [
        "+4 ms \u00b1 1 ms", "+2500 ms \u00b1 2 ms (over 100 ms: no upstream slot)", "not measured"]

    subs = page.body_rows("subscriptions")
    assert [row[:5] for row in subs[:3]] == [
        ["Ada Lovelace", "127.0.0.1:8780", "acme", "failed", "0"],
        ["Alan Turing", "127.0.0.1:8780", "acme", "running", "120"],
        ["Alan Turing", "127.0.0.1:8780", "globex", "running", "40"]]
    assert subs[0][6] == dashboard.MARKUP_ERROR and len(subs) == 8
    # the settled ones are fresh to the feed's watermark, seeded 42 s before the page was asked for
    (feed,) = page.body_rows("feeds")
    assert feed[0] == "127.0.0.1:8780" and feed[2] == subs[1][8] == subs[2][8] and subs[0][8] == "—"
    assert feed[2].endswith(" s ago") and 42 <= int(feed[2].split()[0]) < 60
    assert feed[4:7] == ["1,234", "1", "8"] and feed[7] == "—"

    wiki_set, censused = page.body_rows("sets")
    revisions = sum(f[2] for f in dashboard.DUMP_FILES)
    assert wiki_set[1:] == ["127.0.0.1:8780", "failed", "1 / 2", f"{revisions:,}", "0", "—", "—",
                            dashboard.MARKUP_ERROR]
    # the second set's last census proved 3 of its 4 shards
    assert censused[1:] == ["127.0.0.1:8780", "following", "2 / 2", "9,500", "0", "—", "3 / 4 proven", "—"]

    assert [row[:3] + row[4:] for row in page.body_rows("tenants")] == [
        ["acme", "1,000", "1,000", "4"], [dashboard.MARKUP_TENANT, "50", "200", "1"], ["globex", "45", "—", "3"]]
    assert [row[3] for row in page.body_rows("tenants")] == ["100 %", "25 %", "unlimited"]

    assert [row[1:] for row in page.body_rows("reloads")] == [
        [kind, reason, str(sends), str(drops)] for kind, reason, sends, drops, _ in reversed(dashboard.RELOADS)]

    # Names and errors carrying markup are shown as text, never turned into elements.
    assert not [attrs for _, attrs in page.elements if attrs.get("id") == "pwned"]
    assert [tag for tag, _ in page.elements].count("img") == 0
    assert [attrs.get("src") for tag, attrs in page.elements if tag == "script"] == ["/dashboard/dashboard.js"]


@pytest.mark.parametrize("fragment, message", [
    (f"#token={ADMIN_TOKEN}x", "The hub refused this admin token."),
    ("", "Enter the hub's admin token to see the dashboard."),
])
def test_without_a_valid_token_the_page_asks_for_one_and_shows_no_data(seeded_hub, tmp_path, fragment, message):
    hub, _ = seeded_hub
    page = RenderedPage(chromium(f"{hub.url}/dashboard{fragment}", tmp_path / "profile", "--dump-dom"))
    assert not page.hidden("auth") and page.hidden("data")
    assert page.text("auth-message").startswith(message)
    assert page.text("status") == "Not signed in"
    for table in ("nodes", "subscriptions", "tenants", "reloads"):
        assert page.body_rows(table) == []
    shown = " ".join(" ".join(texts) for texts in page.texts.values())
    assert "acme" not in shown and "127.0.0.1:8701" not in shown and "Alan Turing" not in shown


def test_screenshot_is_rendered(seeded_hub, tmp_path):
    hub, run = seeded_hub
    shot = run / "dashboard.png"
    chromium(f"{hub.url}/dashboard#token={ADMIN_TOKEN}", tmp_path / "profile", f"--screenshot={shot}",
             "--window-size=1400,1300", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_a_state_in_the_fragment_lists_only_that_state(seeded_hub, tmp_path):
    hub, _ = seeded_hub
    page = RenderedPage(chromium(f"{hub.url}/dashboard#token={ADMIN_TOKEN}&state=running", tmp_path / "profile",
                                 "--dump-dom"))
    assert page.text("recent-filter") == "in state running"
    assert [(row[0], row[2], row[3]) for row in page.body_rows("subscriptions")] == [
        ("Alan Turing", "acme", "running"), ("Alan Turing", "globex", "running")]
    pressed = [attrs["data-state"] for tag, attrs in page.elements
               if tag == "button" and attrs.get("aria-pressed") == "true"]
    assert pressed == ["running"]
    assert page.text("total-subscriptions") == "8"               # counts stay global


def _dashboard_requests(hub) -> float:
    metrics = requests.get(hub.metrics_url + "/metrics", timeout=10).text
    prefix = 'bw_hub_http_requests_total{method="GET",route="/v1/dashboard",status="200"}'
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(prefix))


def test_the_page_refreshes_itself(seeded_hub, tmp_path):
    hub, _ = seeded_hub
    before = _dashboard_requests(hub)
    # 11 s of page time: the first load, then one refresh every 5 s
    chromium(f"{hub.url}/dashboard#token={ADMIN_TOKEN}", tmp_path / "profile", "--dump-dom", budget_ms=11_000)
    assert _dashboard_requests(hub) - before == 3
