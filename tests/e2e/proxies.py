"""Small HTTP servers on 127.0.0.1 that stand between two real components: they forward every request and
record the exchange, and FaultyWiki replaces chosen answers of the real MediaWiki with broken ones (the real
wiki cannot misbehave on demand)."""
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import requests

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


@dataclass
class Exchange:
    at: float                       # time.monotonic() when the request arrived
    method: str
    path: str
    request_headers: dict
    request_body: bytes
    status: int = 0
    response_headers: dict | None = None
    response_body: bytes = b""
    outcome: str = "forwarded"      # or the name of the fault answered instead


class Proxy:
    def __init__(self, target: str):
        self.target = target.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._http = requests.Session()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ex = Exchange(time.monotonic(), self.command, self.path, dict(self.headers), body)
                with proxy._lock:
                    proxy.exchanges.append(ex)
                proxy.answer(ex)
                try:
                    self.send_response(ex.status)
                    for name, value in (ex.response_headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(ex.response_body)))
                    self.end_headers()
                    self.wfile.write(ex.response_body)
                except OSError:
                    pass            # the client gave up (a stalled answer): nothing to deliver

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, ex: Exchange) -> None:
        self.forward(ex)

    def forward(self, ex: Exchange) -> None:
        headers = {k: v for k, v in ex.request_headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            resp = self._http.request(ex.method, self.target + ex.path, headers=headers,
                                      data=ex.request_body or None, timeout=(5, 60), allow_redirects=False)
        except requests.RequestException as exc:
            ex.status, ex.response_headers = 502, {"Content-Type": "text/plain"}
            ex.response_body = str(exc).encode()
            return
        ex.status = resp.status_code
        ex.response_headers = {k: v for k, v in resp.headers.items() if k.lower() not in HOP_BY_HOP}
        ex.response_body = resp.content

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


HTML_503 = (b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head><body>"
            b"<h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p>"
            b"</body></html>")
STALL_S = 30.0
RETRY_AFTER_429_S = 2
RETRY_AFTER_MAXLAG_S = 1


class FaultyWiki(Proxy):
    """MediaWiki's api.php behind a proxy that answers the next `times` history requests (prop=revisions)
    with a chosen fault, then forwards again."""

    FAULTS = ("truncated_json", "html_503", "rate_limited", "maxlag", "no_revisions", "stall")

    def __init__(self, api_url: str):
        split = urlsplit(api_url)
        super().__init__(f"{split.scheme}://{split.netloc}")
        self.api_url = f"{self.url}{split.path}"
        self._fault: str | None = None
        self._left = 0
        self._closing = threading.Event()

    def arm(self, fault: str, times: int) -> None:
        assert fault in self.FAULTS
        with self._lock:
            self._fault, self._left = fault, times

    def history_requests(self) -> list[Exchange]:
        with self._lock:
            return [ex for ex in self.exchanges if _is_history(ex)]

    def answer(self, ex: Exchange) -> None:
        with self._lock:
            fault = self._fault if self._left and _is_history(ex) else None
            if fault:
                self._left -= 1
        if fault is None:
            return self.forward(ex)
        ex.outcome = fault
        if fault == "stall":
            self._closing.wait(STALL_S)          # far beyond the spawn's read timeout
            return self.forward(ex)
        if fault == "html_503":
            ex.status, ex.response_headers, ex.response_body = 503, {"Content-Type": "text/html"}, HTML_503
            return
        if fault == "rate_limited":
            ex.status = 429
            ex.response_headers = {"Content-Type": "text/html", "Retry-After": str(RETRY_AFTER_429_S)}
            ex.response_body = b"<html><body><h1>Too many requests</h1></body></html>"
            return
        if fault == "maxlag":
            ex.status = 200
            ex.response_headers = {"Content-Type": "application/json; charset=utf-8", "X-Database-Lag": "7",
                                   "Retry-After": str(RETRY_AFTER_MAXLAG_S), "MediaWiki-API-Error": "maxlag"}
            error = {"code": "maxlag", "text": "Waiting for db1: 7 seconds lagged.",
                     "data": {"host": "db1", "lag": 7, "type": "db"}, "module": "main"}
            ex.response_body = json.dumps({"errors": [error], "servedby": "proxy"}).encode()
            return
        self.forward(ex)                      # the real answer, then broken
        if fault == "truncated_json":
            ex.response_body = ex.response_body[: len(ex.response_body) // 2]
        elif fault == "no_revisions":
            body = json.loads(ex.response_body)
            body.pop("continue", None)
            for page in body["query"]["pages"]:
                page.pop("revisions", None)
            ex.response_body = json.dumps(body).encode()

    def close(self) -> None:
        self._closing.set()
        super().close()


def _is_history(ex: Exchange) -> bool:
    prop = parse_qs(urlsplit(ex.path).query).get("prop", [""])[0]
    return "revisions" in prop.split("|")          # the first one also asks for prop=info
