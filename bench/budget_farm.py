"""Simulated spawns that pace a wiki exactly as real ones do, many in one process (bench.upstream_budget).

Each node is a real HTTP endpoint speaking the node API (register at the hub, POST /v1/subscriptions, POST
/v1/status, POST /v1/keepalive, POST /v1/budgets) and takes every request slot from the real spawn.upstream_budget
(IdentityBudget over spawn.budget_rules): only inside its hub windows, with the window's deadline as the
request's timeout, pausing on a 429 and reporting its IdentityUse (demand, pauses) in every status answer.
What it does not do is store revisions: a source is a backfill that never ends, one real API request to
the edge after another, so demand lasts as long as the measurement. It detaches (drops everything, new boot
id, registers again) after `detach_after_s` without a call from the hub, as a real spawn's watchdog does.
"""
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import requests

from shared.budget_wire import BudgetRound, BudgetRoundAck
from shared.hashing import node_id_for
from shared.wire import Poll, StatusReport, SubscriptionStatus
from spawn.host_limiter import Cancelled
from spawn.upstream_budget import BACKFILL, Demand, UpstreamBudgets


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
    out = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(out)))
    handler.end_headers()
    handler.wfile.write(out)


@dataclass
class SimSource:
    spec: dict
    stop: threading.Event = field(default_factory=threading.Event)
    answered: int = 0
    throttled: int = 0


class SimSpawn:
    def __init__(self, hub_url: str, secret: str, user_agent: str, query: Callable[[int], dict], *,
                 skew_s: float, detach_after_s: float):
        self.hub_url = hub_url
        self.auth = f"Bearer {secret}"
        self.query = query                 # request number -> API parameters
        self.skew_s = skew_s
        self.detach_after_s = detach_after_s
        self.http = requests.Session()
        self.http.headers["User-Agent"] = user_agent
        self.lock = threading.Lock()
        self.sources: dict[str, SimSource] = {}
        self.retired: list[SimSource] = []         # dropped sources, for the counts
        self.budgets = UpstreamBudgets(skew_s=skew_s)
        self.boot_id = uuid.uuid4().hex
        self.contact = time.monotonic()
        self.detaches = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.node_id = node_id_for(self.url)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    # -- the hub's side -----------------------------------------------------------------------------
    def register(self) -> None:
        resp = requests.post(f"{self.hub_url}/v1/nodes", json={"url": self.url}, timeout=10,
                             headers={"Authorization": self.auth})
        resp.raise_for_status()
        self.contact = time.monotonic()

    def watchdog(self) -> None:
        """Detach on hub silence, as spawn/watchdog.py does: stop every source, forget the budgets."""
        if time.monotonic() - self.contact <= self.detach_after_s:
            return
        with self.lock:
            dropped, self.sources = list(self.sources.values()), {}
            self.budgets = UpstreamBudgets(skew_s=self.skew_s)
            self.boot_id = uuid.uuid4().hex
        for source in dropped:
            source.stop.set()
        self.retired.extend(dropped)
        self.detaches += 1
        try:
            self.register()
        except requests.RequestException:
            pass

    def apply_batch(self, body: dict) -> dict:
        acks: dict[str, list] = {"drops": [], "puts": []}
        for sub_id in body.get("drops", []):
            with self.lock:
                source = self.sources.pop(sub_id, None)
            if source is not None:
                source.stop.set()
                self.retired.append(source)
            acks["drops"].append({"id": sub_id, "removed": source is not None})
        for spec in body.get("puts", []):
            with self.lock:
                known = self.sources.get(spec["id"])
                changed = known is None or known.spec != spec
                if known is not None and changed:
                    known.spec = spec
                if known is None:
                    source = SimSource(spec)
                    self.sources[spec["id"]] = source
                    threading.Thread(target=self.run_source, args=(source,), daemon=True).start()
            acks["puts"].append({"id": spec["id"], "state": "running", "changed": changed})
        return acks

    def report(self, poll: Poll | None) -> dict:
        if poll is not None:
            self.budgets.apply(poll.budgets)
        with self.lock:
            subs = tuple(SubscriptionStatus(id=i, state="running", revisions=s.answered, spec=s.spec)
                         for i, s in self.sources.items())
            boot_id = self.boot_id
        return StatusReport(node_id=self.node_id, boot_id=boot_id, attached=True, subscriptions=subs,
                            sources=len(subs), identities=self.budgets.report(), clock=time.time()).to_dict()

    def budget_round(self, round_: BudgetRound) -> tuple[int, dict]:
        """POST /v1/budgets, as spawn.node.Node answers it: the Budgets applied, the identities' use now."""
        if round_.node_id != self.node_id:
            return 409, {"error": {"code": "conflict", "message": "another node's budgets", "field": "node_id"}}
        self.budgets.apply(round_.budgets)
        return 200, BudgetRoundAck(self.node_id, self.budgets.report()).to_dict()

    # -- the wiki's side -----------------------------------------------------------------------------
    def run_source(self, source: SimSource) -> None:
        """One never-ending backfill: a request whenever the identity's budget gives a slot."""
        n = 0
        while not source.stop.is_set():
            identity = source.spec.get("identity")
            if identity is None:
                return              # the hub always names the identity; nothing here paces without one
            budget = self.budgets.identity(identity)
            try:
                with budget.slot(Demand(BACKFILL, (source.spec["tenant_id"],)), cancel=source.stop) as permit:
                    timeout = max(0.05, permit.deadline - time.time())
                    resp = self.http.get(source.spec["wiki"], params={**self.query(n), "maxlag": permit.maxlag},
                                         timeout=timeout)
            except Cancelled:
                return
            except requests.RequestException:
                continue            # cut at the window's end: sent again under the next one
            n += 1
            if resp.status_code == 429:
                source.throttled += 1
                budget.pause(float(resp.headers.get("Retry-After") or 1), "429 Too Many Requests", throttled=True)
            else:
                source.answered += 1

    def all_sources(self) -> list[SimSource]:
        with self.lock:
            return [*self.sources.values(), *self.retired]

    def close(self) -> None:
        for source in self.all_sources():
            source.stop.set()
        self.server.shutdown()
        self.server.server_close()

    # -- HTTP ----------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:             # noqa: N802 (http.server's name)
                self._answer(None)

            def do_POST(self) -> None:            # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer(json.loads(body) if body else {})

            def _answer(self, body: dict | None) -> None:
                if self.headers.get("Authorization") != node.auth:
                    return self._send(401, {"error": {"code": "unauthorized", "message": "bad node secret"}})
                node.contact = time.monotonic()
                if self.path == "/v1/status":
                    return self._send(200, node.report(Poll.from_dict(body) if body is not None else None))
                if self.path == "/v1/keepalive" and body is not None:
                    return self._send(200, {"node_id": node.node_id, "boot_id": node.boot_id, "attached": True})
                if self.path == "/v1/subscriptions" and body is not None:
                    return self._send(200, node.apply_batch(body))
                if self.path == "/v1/budgets" and body is not None:
                    return self._send(*node.budget_round(BudgetRound.from_dict(body)))
                return self._send(404, {"error": {"code": "not_found", "message": "no such route"}})

            def _send(self, status: int, payload: dict) -> None:
                send_json(self, status, payload)

            def log_message(self, *args) -> None:
                pass

        return Handler


class Farm:
    """`count` simulated spawns registered at the hub, with one watchdog thread for all."""

    def __init__(self, count: int, hub_url: str, secret: str, user_agent: str, query: Callable[[int], dict], *,
                 skew_s: float, detach_after_s: float):
        self.spawns = [SimSpawn(hub_url, secret, user_agent, query, skew_s=skew_s, detach_after_s=detach_after_s)
                       for _ in range(count)]
        for spawn in self.spawns:
            spawn.register()
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            for spawn in self.spawns:
                spawn.watchdog()

    def sources(self) -> list[SimSource]:
        return [s for spawn in self.spawns for s in spawn.all_sources()]

    def close(self) -> None:
        self._stop.set()
        for spawn in self.spawns:
            spawn.close()
