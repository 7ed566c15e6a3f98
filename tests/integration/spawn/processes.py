"""Real processes and endpoints for spawn integration tests: a `spawn serve` under gunicorn, and a
minimal hub registration endpoint (until tests run against the real hub)."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from shared.hashing import node_id_for

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


class SpawnProcess:
    """`spawn serve` in its own process group, so kill -9 takes the gunicorn master and worker alike."""

    def __init__(self, hub_url: str, env: dict, log_path: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.secret = env["BW_NODE_SECRET"]
        self.log = open(log_path, "ab")
        full_env = {**os.environ, **env, "BW_LOG_JSON": "1", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "spawn.cli", "serve", "--hub", hub_url, "--bind", f"127.0.0.1:{self.port}"],
            cwd=ROOT, env=full_env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {self.secret}"

    def wait_ready(self, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"spawn exited with {self.proc.returncode}")
            try:
                if requests.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError("spawn did not answer /health in time")

    def health(self) -> dict:
        return requests.get(f"{self.url}/health", timeout=5).json()

    def status(self) -> dict:
        return self.http.get(f"{self.url}/v1/status", timeout=5).json()

    def put(self, spec) -> dict:
        resp = self.http.put(f"{self.url}/v1/subscriptions/{spec.id}", json=spec.to_dict(), timeout=5)
        resp.raise_for_status()
        return resp.json()

    def metric(self, name: str) -> float:
        text = requests.get(f"{self.url}/metrics", timeout=5).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name) and not line.startswith("#"))

    def kill9(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()
