"""shared.http.make_session keeps a connection to each of many hosts when told how many: a scheduler polling a
thousand spawns in turn otherwise opens a new TCP connection for every request."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.http import make_session


class _Counting(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"           # keep-alive

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1       # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def servers():
    started = [_Counting() for _ in range(24)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in started]
    for t in threads:
        t.start()
    yield started
    for s in started:
        s.shutdown()
        s.server_close()


@pytest.mark.parametrize("hosts, connections_per_server", [(None, 3), (64, 1)])
def test_connections_are_kept_for_as_many_hosts_as_asked(servers, hosts, connections_per_server):
    session = make_session("HttpTests/1.0 (tests@example.org)", pool_size=4, hosts=hosts)
    for _ in range(3):                      # three rounds over 24 hosts, as ticks poll every spawn in turn
        for server in servers:
            assert session.get(f"http://127.0.0.1:{server.server_address[1]}/", timeout=5).status_code == 200
    session.close()
    assert [s.connections for s in servers] == [connections_per_server] * len(servers)
