"""The wiki session refuses internal addresses where it connects: names that resolve to loopback,
link-local or private addresses are never connected to unless the allowlist names host:port exactly."""
import http.server
import socket
import threading
import time

import pytest
import requests
from urllib3.util import connection

from shared.wire import SubscriptionSpec
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import AddressRefused, MediaWikiClient
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from spawn.wiki_session import InternalAddress, wiki_session
from tests.fixtures.http_replies import reply_json
from tests.unit.spawn.fakes import FakeBatcher, MemoryStore

UA = "BlackWidow-tests/0 (test@example.org)"
REAL_GETADDRINFO = socket.getaddrinfo


class Server:
    """A local HTTP server counting the connections it accepts; answers JSON, or a redirect."""

    def __init__(self):
        self.connections = 0
        self.redirect_to: str | None = None
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def setup(self):
                outer.connections += 1
                super().setup()

            def do_GET(self):
                if outer.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", outer.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                reply_json(self, b'{"batchcomplete": true}')

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


class Resolver(dict):
    """Names of our own mapped to chosen addresses; every other lookup goes to the real resolver."""

    def __init__(self):
        super().__init__()
        self.asked: list[str] = []

    def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        if host in self:
            self.asked.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in self[host]]
        return REAL_GETADDRINFO(host, port, family, type, proto, flags)


@pytest.fixture
def dns(monkeypatch):
    resolver = Resolver()
    monkeypatch.setattr(socket, "getaddrinfo", resolver.getaddrinfo)
    return resolver


@pytest.fixture
def connects(monkeypatch):
    """Every address a connection is opened to (the real connect still happens)."""
    seen: list[tuple] = []
    real = connection.create_connection

    def create_connection(address, *args, **kw):
        seen.append(address)
        return real(address, *args, **kw)
    monkeypatch.setattr(connection, "create_connection", create_connection)
    return seen


def test_a_name_resolving_to_loopback_is_refused_before_any_connection(server, connects):
    http = wiki_session(UA, ("*.wikipedia.org", "127.0.0.1:1"))
    with pytest.raises(InternalAddress) as info:
        http.get(f"http://localhost:{server.port}/api.php", timeout=5)
    assert f"localhost:{server.port} resolves to" in str(info.value) and "127.0.0.1" in info.value.addresses
    assert server.connections == 0 and connects == []


@pytest.mark.parametrize("addresses", [["169.254.169.254"], ["10.1.2.3"], ["93.184.216.34", "127.0.0.1"],
                                       ["100.64.0.1"], ["0.0.0.0"]])
def test_a_wildcard_matched_name_resolving_to_an_internal_address_is_refused(dns, connects, addresses):
    dns["wiki.wikipedia.org"] = addresses
    http = wiki_session(UA, ("*.wikipedia.org",))
    with pytest.raises(InternalAddress):
        http.get("https://wiki.wikipedia.org/w/api.php", timeout=5)
    assert connects == [] and dns.asked == ["wiki.wikipedia.org"]


def test_the_connection_goes_to_the_address_that_was_checked(dns, monkeypatch):
    dns["en.wikipedia.org"] = ["93.184.216.34"]
    seen = []

    def create_connection(address, *args, **kw):
        seen.append(address)
        raise ConnectionRefusedError("no network in unit tests")
    monkeypatch.setattr(connection, "create_connection", create_connection)
    with pytest.raises(requests.ConnectionError):
        wiki_session(UA, ("*.wikipedia.org",)).get("http://en.wikipedia.org/w/api.php", timeout=5)
    assert seen == [("93.184.216.34", 80)] and dns.asked == ["en.wikipedia.org"]    # one lookup, that address


def test_an_exact_entry_lets_an_internal_wiki_through(server, dns):
    dns["wiki.internal.test"] = ["127.0.0.1"]
    http = wiki_session(UA, (f"wiki.internal.test:{server.port}", f"127.0.0.1:{server.port}"))
    assert http.get(f"http://wiki.internal.test:{server.port}/api.php", timeout=5).status_code == 200
    assert http.get(f"http://127.0.0.1:{server.port}/api.php", timeout=5).status_code == 200
    assert server.connections == 2


def test_a_wildcard_entry_does_not_let_an_internal_wiki_through(server, dns):
    dns["wiki.internal.test"] = ["127.0.0.1"]
    http = wiki_session(UA, ("*.internal.test:*", "127.0.0.*"))
    for host in ("wiki.internal.test", "127.0.0.1"):
        with pytest.raises(InternalAddress):
            http.get(f"http://{host}:{server.port}/api.php", timeout=5)
    assert server.connections == 0


def test_a_redirect_to_an_internal_address_is_refused(server, connects):
    server.redirect_to = "http://169.254.169.254/latest/meta-data/"
    http = wiki_session(UA, (f"127.0.0.1:{server.port}",))
    with pytest.raises(InternalAddress, match="169.254.169.254"):
        http.get(f"http://127.0.0.1:{server.port}/api.php", timeout=5)
    assert connects == [("127.0.0.1", server.port)] and server.connections == 1    # the listed wiki only


def test_environment_proxies_are_not_used(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
    with pytest.raises(InternalAddress):
        wiki_session(UA, ()).get("http://localhost:1/api.php", timeout=5)
    assert server.connections == 0


def test_the_client_fails_at_once_and_the_subscription_names_the_refusal(server):
    outcomes = []
    client = MediaWikiClient(wiki_session(UA, ()), f"http://localhost:{server.port}/api.php",
                             limiter=HostLimiter(0.0), max_attempts=4, on_request=outcomes.append)
    with pytest.raises(AddressRefused, match="not globally routable"):
        client.resolve("Page")
    assert outcomes == ["refused"]
    spec = SubscriptionSpec(id="s", source_uuid="u", tenant_id="t", wiki=client.api_url, title="Page")
    src = DataSource("u", "Page", client=client, store=MemoryStore(), batcher=FakeBatcher(), revisit_min_s=60,
                     revisit_max_s=600, on_limit=lambda s: None)
    sub = Subscriber(spec, seen_at=0)
    src.attach(sub)
    src.start()
    deadline = time.monotonic() + 5
    while sub.status().state != "failed":
        assert time.monotonic() < deadline, sub.status()
        time.sleep(0.01)
    error = sub.status().last_error
    assert error.startswith(f"refused to connect: localhost:{server.port} resolves to")
    assert "BW_WIKI_ALLOWLIST" in error
    src.stop()
    src.join(2.0)
    assert server.connections == 0 and outcomes == ["refused"] * 2
