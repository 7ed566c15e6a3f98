"""The hub as real processes: `blackwidow serve` (gunicorn) and `blackwidow scheduler`, started, killed,
frozen and restarted separately on one configuration database, plus an admin HTTP session."""
import json
import os
import subprocess
from pathlib import Path

import requests

from tests.support.processes import BIN, ROOT, LoggedProcess, free_port, wait_for


class HubProcesses:
    def __init__(self, env: dict, run_dir: Path, *, admin_token: str):
        """`env` holds the BW_* variables of both processes (BW_DATABASE_URL, secrets, timings)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.metrics_port = free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}"      # the API's /metrics listener
        self.env = {"BW_DATA_DIR": str(run_dir), **env, "BW_ADMIN_TOKEN": admin_token,
                    "BW_METRICS_PORT": str(self.metrics_port)}
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.run_dir = run_dir
        self.api: LoggedProcess | None = None
        self.scheduler: LoggedProcess | None = None
        self.started: list[LoggedProcess] = []        # every process ever started, for their logs
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {admin_token}"

    # -- processes ----------------------------------------------------------------------------
    def start(self, tag: str) -> None:
        """Both processes at once, as a host's service manager starts them (the scheduler waits for the schema
        `serve` migrates); returns once the API serves."""
        self.start_api(tag, wait=False)
        self.start_scheduler(tag)
        wait_for(self.serving, 90, 0.2, f"/health of the hub API ({self.api.log})")

    def start_api(self, tag: str, *, workers: int | None = None, wait: bool = True) -> None:
        extra = ["--workers", str(workers)] if workers else []
        self.api = LoggedProcess([str(BIN / "blackwidow"), "serve", "--bind", f"127.0.0.1:{self.port}", *extra],
                                 self.env, self.run_dir / f"api-{tag}.log")
        self.started.append(self.api)
        if wait:
            wait_for(self.serving, 90, 0.2, f"/health of the hub API ({self.api.log})")

    def start_scheduler(self, tag: str) -> None:
        self.scheduler = LoggedProcess([str(BIN / "blackwidow"), "scheduler"], self.env,
                                       self.run_dir / f"scheduler-{tag}.log")
        self.started.append(self.scheduler)

    def wait_leader(self, timeout: float = 60) -> None:
        wait_for(lambda: "scheduler.leader" in self.scheduler.events(), timeout, 0.2,
                 "the scheduler's leadership")

    def processes(self) -> list[LoggedProcess]:
        return [p for p in (self.scheduler, self.api) if p is not None]

    def stop(self) -> None:
        for proc in self.processes():
            proc.stop()

    def kill9(self) -> None:
        for proc in self.processes():
            proc.kill9()

    def freeze(self) -> None:
        for proc in self.processes():
            proc.freeze()

    def thaw(self) -> None:
        for proc in self.processes():
            proc.thaw()

    def healthy(self) -> bool:
        """/health says 200: the database answers and a scheduler leads and ticks."""
        return self._health_status() == 200

    def serving(self) -> bool:
        """The API answers /health with its verdict (a 503 too: without a scheduler it says so)."""
        return self._health_status() in (200, 503)

    def _health_status(self) -> int | None:
        try:
            return self.http.get(f"{self.url}/health", timeout=2).status_code
        except requests.RequestException:
            return None

    # -- admin API ----------------------------------------------------------------------------
    def admin(self, *argv: str, stdin: str | None = None) -> tuple[int, object]:
        """`blackwidow admin …` against this hub: (exit code, its JSON answer)."""
        done = subprocess.run([str(BIN / "blackwidow"), "admin", *argv], cwd=ROOT, input=stdin,
                              env={**os.environ, **self.env, "BW_HUB_URL": self.url},
                              capture_output=True, text=True, timeout=60)
        return done.returncode, json.loads(done.stdout or done.stderr or "null")

    def get(self, path: str, **params) -> dict:
        resp = self.http.get(f"{self.url}{path}", params=params, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def post(self, path: str, body: dict) -> dict:
        resp = self.http.post(f"{self.url}{path}", json=body, timeout=30)
        assert resp.status_code in (200, 201), resp.text
        return resp.json()

    def patch(self, path: str, body: dict) -> dict:
        resp = self.http.patch(f"{self.url}{path}", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def put(self, path: str, body: dict) -> dict:
        resp = self.http.put(f"{self.url}{path}", json=body, timeout=30)
        assert resp.status_code in (200, 201), resp.text
        return resp.json()

    def nodes(self) -> list[dict]:
        return self.get("/v1/nodes")["items"]

    def live_nodes(self) -> list[str]:
        return [n["id"] for n in self.nodes() if n["state"] == "live"]

    def subscriptions(self, **params) -> list[dict]:
        items, cursor = [], None
        while True:
            page = self.get("/v1/subscriptions", limit=1000, **params,
                            **({"cursor": cursor} if cursor else {}))
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items
