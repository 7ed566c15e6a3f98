"""Endpoints for spawn integration tests: a minimal hub registration endpoint (until tests run against the
real hub). The `spawn serve` process itself is tests.support.processes.SpawnProcess."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shared.hashing import node_id_for
from tests.support.processes import SpawnProcess, free_port  # noqa: F401 - re-exported for the tests


class StubHub:
    """Answers POST /v1/nodes like the hub (or with `status` while it plays dead) and records calls."""

    def __init__(self, secret: str, *, detach_after_s=15.0, orphan_after_s=20.0):
        self.secret = secret
        self.detach_after_s = detach_after_s
        self.orphan_after_s = orphan_after_s
        self.status = 200
        self.registrations: list[tuple[float, int, str]] = []     # (time, status answered, url)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                ok_auth = self.headers.get("Authorization") == f"Bearer {hub.secret}"
                status = hub.status if ok_auth else 401
                hub.registrations.append((time.monotonic(), status, body.get("url")))
                payload = {"id": node_id_for(body.get("url", "")), "poll_interval_s": 1.0,
                           "detach_after_s": hub.detach_after_s, "orphan_after_s": hub.orphan_after_s}
                data = json.dumps(payload if status == 200 else {"error": {"code": "x", "message": "down",
                                                                           "field": None}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ok_registrations(self) -> int:
        return sum(1 for _, status, _ in self.registrations if status == 200)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
