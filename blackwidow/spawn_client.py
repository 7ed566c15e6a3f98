"""HTTP client for a spawn's node API (hub -> spawn). The only hub module that calls spawns.

Exceptions (callers catch these, never requests.exceptions.*):
    SpawnError
     ├─ SpawnUnreachable   connection refused/reset, timeout, or a 5xx: the node may be down
     ├─ SpawnRejected      a 4xx (401: wrong node secret; 422: the spawn refused our body)
     └─ SpawnBadResponse   2xx whose body is not the agreed JSON shape
The node secret travels only in the Authorization header and is never logged or put in messages.
"""
import logging
from typing import Sequence

import requests

from shared.budget_wire import BudgetRound, BudgetRoundAck
from shared.errors import ValidationError
from shared.feed_wire import Nudge
from shared.wire import Poll, SendBatch, SendBatchAck, StatusReport, SubscriptionSpec

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = (2.0, 5.0)     # (connect, read) seconds; a poll tick waits for its slowest node


class SpawnError(Exception):
    def __init__(self, message: str, *, node_url: str, status: int | None = None):
        super().__init__(f"{message} ({node_url})")
        self.node_url = node_url
        self.status = status


class SpawnUnreachable(SpawnError):
    pass


class SpawnRejected(SpawnError):
    pass


class SpawnBadResponse(SpawnError):
    pass


class SpawnClient:
    def __init__(self, http: requests.Session, node_secret: str, timeout=DEFAULT_TIMEOUT):
        self._http = http
        self._auth = {"Authorization": f"Bearer {node_secret}"}
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"SpawnClient(timeout={self._timeout!r})"

    def poll(self, node_url: str, poll: Poll) -> StatusReport:
        """POST /v1/status: the heartbeat. Returns what the node runs."""
        body = self._call("POST", node_url, "/v1/status", poll.to_dict())
        try:
            return StatusReport.from_dict(body)
        except ValidationError as exc:
            raise SpawnBadResponse(f"status report: {exc.message}", node_url=node_url) from None

    def keepalive(self, node_url: str) -> None:
        """POST /v1/keepalive: the scheduler is alive between polls (docs/coordination.md, "Liveness")."""
        self._call("POST", node_url, "/v1/keepalive", {})

    def send_changes(self, node_url: str, changes: Sequence[Nudge]) -> int:
        """POST /v1/changes: the change feed's nudges for this node; returns how many sources it nudged."""
        body = self._call("POST", node_url, "/v1/changes", {"changes": [n.to_dict() for n in changes]})
        nudged = body.get("nudged") if isinstance(body, dict) else None
        if not isinstance(nudged, int) or isinstance(nudged, bool):
            raise SpawnBadResponse("changes: 'nudged' missing", node_url=node_url)
        return nudged

    def budget_round(self, node_url: str, round_: BudgetRound) -> BudgetRoundAck:
        """POST /v1/budgets: Budgets changed between polls; returns the node's upstream use now."""
        body = self._call("POST", node_url, "/v1/budgets", round_.to_dict())
        try:
            ack = BudgetRoundAck.from_dict(body)
        except ValidationError as exc:
            raise SpawnBadResponse(f"budget round: {exc.message}", node_url=node_url) from None
        if ack.node_id != round_.node_id:
            raise SpawnBadResponse(f"budget round answered as node {ack.node_id}", node_url=node_url)
        return ack

    def send_batch(self, node_url: str, drops: Sequence[str],
                   puts: Sequence[SubscriptionSpec]) -> SendBatchAck:
        """POST /v1/subscriptions: the drops, then the puts, in one request. Returns one answer per item
        in the order sent: a DropAck or PutAck, or an ItemError for an item the node refused alone.
        Raises SpawnError when the request fails as a whole (the node may still have applied some
        items; every item is idempotent, so sending them again is safe)."""
        body = self._call("POST", node_url, "/v1/subscriptions", SendBatch.of(drops, puts).to_dict())
        try:
            ack = SendBatchAck.from_dict(body)
        except ValidationError as exc:
            raise SpawnBadResponse(f"batch: {exc.message}", node_url=node_url) from None
        if [a.id for a in ack.drops] != list(drops) or [a.id for a in ack.puts] != [s.id for s in puts]:
            raise SpawnBadResponse("batch: expected one answer per sent id, in order", node_url=node_url)
        return ack

    def _call(self, method: str, node_url: str, path: str, payload):
        url = node_url.rstrip("/") + path
        try:
            resp = self._http.request(method, url, json=payload, headers=self._auth, timeout=self._timeout)
        except requests.Timeout:
            raise SpawnUnreachable(f"{method} {path}: timed out", node_url=node_url) from None
        except requests.RequestException as exc:
            # the message names the failure class only: request details may echo headers
            raise SpawnUnreachable(f"{method} {path}: {type(exc).__name__}", node_url=node_url) from None
        if resp.status_code >= 500:
            raise SpawnUnreachable(f"{method} {path}: HTTP {resp.status_code}", node_url=node_url,
                                   status=resp.status_code)
        if resp.status_code >= 400:
            raise SpawnRejected(f"{method} {path}: HTTP {resp.status_code} {_error_message(resp)}",
                                node_url=node_url, status=resp.status_code)
        if resp.status_code == 204 or not resp.content:
            raise SpawnBadResponse(f"{method} {path}: empty body", node_url=node_url, status=resp.status_code)
        try:
            return resp.json()
        except ValueError:
            raise SpawnBadResponse(f"{method} {path}: body is not JSON", node_url=node_url,
                                   status=resp.status_code) from None


def _error_message(resp: requests.Response) -> str:
    try:
        error = resp.json().get("error") or {}
        return str(error.get("message", ""))[:200]
    except (ValueError, AttributeError):
        return ""
