"""Real processes for tests: each child in its own process group (so kill -9, SIGSTOP and SIGTERM reach
gunicorn's master and workers alike), its output (JSON log lines) appended to a file; free ports; and
polling for a condition instead of sleeping."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, step: float = 0.05, what: str = "the condition"):
    """The predicate's first truthy value; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"{what} not true within {timeout} s")


class LoggedProcess:
    """A child process in its own process group, its output appended to `log`."""

    def __init__(self, cmd: list[str], env: dict, log: Path, *, cwd: Path = ROOT):
        self.log = log
        self._out = open(log, "ab")
        self.proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **env}, stdout=self._out,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def records(self) -> list[dict]:
        """The JSON log lines written so far (other output is skipped)."""
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def events(self) -> list[str]:
        return [r["event"] for r in self.records() if "event" in r]

    def send(self, sig) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def freeze(self) -> None:
        self.send(signal.SIGSTOP)

    def thaw(self) -> None:
        self.send(signal.SIGCONT)

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)

    def stop(self, sig=signal.SIGTERM, timeout: float = 15) -> int | None:
        """Signal the whole group (gunicorn master and workers) and wait."""
        if self.proc.poll() is None:
            self.send(signal.SIGCONT)      # a frozen group cannot act on SIGTERM
            self.send(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.send(signal.SIGKILL)
            code = self.proc.wait(timeout)
        self._out.close()
        return code


class SpawnProcess(LoggedProcess):
    """`spawn serve` on a port of its own (kept across restarts: same URL, same node id)."""

    def __init__(self, hub_url: str, env: dict, log_path: Path, *, port: int | None = None,
                 advertise_url: str | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.metrics_url = f"http://127.0.0.1:{free_port()}"        # /metrics is served only there
        self.secret = env["BW_NODE_SECRET"]
        cmd = [sys.executable, "-m", "spawn.cli", "serve", "--hub", hub_url,
               "--bind", f"127.0.0.1:{self.port}"]
        if advertise_url:
            cmd += ["--advertise-url", advertise_url]
        super().__init__(cmd, {**env, "BW_LOG_JSON": "1", "PYTHONPATH": str(ROOT),
                               "BW_METRICS_PORT": self.metrics_url.rsplit(":", 1)[1]}, log_path)
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {self.secret}"

    def wait_ready(self, timeout_s=60.0):
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"spawn exited with {self.proc.returncode}; see {self.log}")
            try:
                # up and serving: 200 once registered and polled, 503 before that or while the hub is away
                return requests.get(f"{self.url}/health", timeout=1).status_code in (200, 503)
            except requests.RequestException:
                return False
        wait_for(ready, timeout_s, 0.1, f"/health of the spawn at {self.url} to answer")
        return self

    def health(self) -> dict:
        return requests.get(f"{self.url}/health", timeout=5).json()

    def status(self) -> dict:
        """GET /v1/status with the node secret (the hub's heartbeat, so it counts as hub contact)."""
        return self.http.get(f"{self.url}/v1/status", timeout=5).json()

    def put(self, spec) -> dict:
        """Sends one spec as the hub does (POST /v1/subscriptions, a batch of one); the spawn's answer."""
        resp = self.http.post(f"{self.url}/v1/subscriptions", json={"drops": [], "puts": [spec.to_dict()]},
                              timeout=5)
        resp.raise_for_status()
        answer = resp.json()["puts"][0]
        assert "error" not in answer, answer
        return answer

    def metric(self, name: str) -> float:
        text = requests.get(f"{self.metrics_url}/metrics", timeout=5).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name) and not line.startswith("#"))
