"""A real HTTP server speaking a spawn's node API (the contract in shared/wire.py), for hub tests.

It keeps state as a spawn does: POST /v1/subscriptions applies a batch's drops, then its puts, and
answers per item; a put is idempotent (an equal spec answers changed=false), a drop of an unknown id
succeeds, and a spec that does not parse, or whose id is in `refuse`, fails alone. POST/GET /v1/status
reports every subscription with the spec it runs. Subscribers go from assigned to running at the next
poll, with 3 revisions harvested. Every authenticated request is recorded, and every put or drop it
applied, so tests can assert what the hub sent. It fetches nothing.
"""
import threading
import uuid
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import falcon

from shared.errors import BlackWidowError, ValidationError
from shared.hashing import node_id_for
from shared.wire import (DropAck, ItemError, Poll, PutAck, SendBatch, SendBatchAck, StatusReport,
                         SubscriptionSpec, SubscriptionStatus)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


class SpawnDouble:
    def __init__(self, secret: str):
        self.secret = secret
        self.boot_id = uuid.uuid4().hex
        self.subs: dict[str, SubscriptionSpec] = {}
        self.states: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []      # (method, path) of authenticated calls
        self.sends: list[tuple[str, str]] = []         # ("put" | "drop", id) applied in order
        # {method or "method path": status} to answer instead, e.g. {"POST /v1/subscriptions": 503}
        self.fail_with: dict[str, int] = {}
        self.refuse: set[str] = set()                  # put ids a batch answers with a per-item error
        self.answer_as: str | None = None              # report this node id instead of its own
        self.page_keys: dict[str, str] = {}            # {sub id: page key} to report (its title resolved)
        self.polls: list[Poll] = []                    # every poll it accepted, in order
        # a spawn from before bounded polls: a paged list is no list to it (422), and it reports everything
        self.unpaged = False
        self._lock = threading.Lock()
        self._server = None
        self._thread = None
        self.url = None

    # -- server ---------------------------------------------------------------------------
    def start(self, port: int = 0) -> "SpawnDouble":
        app = falcon.App()
        app.add_route("/v1/status", _Status(self))
        app.add_route("/v1/subscriptions", _Subscriptions(self))
        app.add_middleware(_Auth(self))
        self._server = make_server("127.0.0.1", port, app, server_class=_Server, handler_class=_QuietHandler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = None

    @property
    def node_id(self) -> str:
        return node_id_for(self.url)

    # -- what tests look at ---------------------------------------------------------------
    def count(self, method: str) -> int:
        with self._lock:
            return sum(1 for m, _ in self.requests if m == method)

    def sent(self, kind: str | None = None) -> int:
        """Puts and drops applied ("put", "drop" or both), however they arrived."""
        with self._lock:
            return sum(1 for k, _ in self.sends if kind in (None, k))

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.sends.clear()

    def set_state(self, sub_id: str, state: str) -> None:
        with self._lock:
            self.states[sub_id] = state

    # -- node behaviour -------------------------------------------------------------------
    def record(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def put(self, spec: SubscriptionSpec) -> tuple[str, bool]:
        with self._lock:
            self.sends.append(("put", spec.id))
            if self.subs.get(spec.id) == spec:
                return self.states[spec.id], False
            self.subs[spec.id] = spec
            self.states.setdefault(spec.id, "assigned")
            return self.states[spec.id], True

    def delete(self, sub_id: str) -> bool:
        with self._lock:
            self.sends.append(("drop", sub_id))
            self.states.pop(sub_id, None)
            return self.subs.pop(sub_id, None) is not None

    def report(self) -> StatusReport:
        with self._lock:
            for sub_id, state in self.states.items():
                if state == "assigned":
                    self.states[sub_id] = "running"
            statuses = tuple(SubscriptionStatus(id=i, state=self.states[i], revisions=3, last_rev_id=None,
                                                spec=s.to_dict(), page_key=self.page_keys.get(i))
                             for i, s in sorted(self.subs.items()))
            return StatusReport(node_id=self.answer_as or self.node_id, boot_id=self.boot_id, attached=True,
                                subscriptions=statuses, sources=len({s.source_uuid for s in self.subs.values()}))


class _Auth:
    def __init__(self, node: SpawnDouble):
        self.node = node

    def process_request(self, req, resp) -> None:
        if req.get_header("Authorization") != f"Bearer {self.node.secret}":
            raise falcon.HTTPUnauthorized(title="bad node secret")
        self.node.record(req.method, req.path)          # failed on purpose or not, the call was made
        fail = self.node.fail_with
        status = fail.get(f"{req.method} {req.path}", fail.get(req.method))
        if status is not None:
            raise falcon.HTTPError(status, title="failing on purpose")


def _invalid(exc: ValidationError):
    return falcon.HTTPUnprocessableEntity(title=exc.message, description=exc.field)


class _Status:
    def __init__(self, node: SpawnDouble):
        self.node = node

    def on_get(self, req, resp) -> None:
        resp.media = self.node.report().to_dict()

    def on_post(self, req, resp) -> None:
        body = req.get_media()
        try:
            if self.node.unpaged and not isinstance(body.get("assigned", []), list):
                raise ValidationError("'assigned' must be list", field="assigned")
            poll = Poll.from_dict(body)
        except ValidationError as exc:
            raise _invalid(exc) from None
        with self.node._lock:
            self.node.polls.append(poll)
        resp.media = self.node.report().to_dict()


class _Subscriptions:
    def __init__(self, node: SpawnDouble):
        self.node = node

    def on_post(self, req, resp) -> None:
        try:
            batch = SendBatch.from_dict(req.get_media())
        except ValidationError as exc:
            raise _invalid(exc) from None
        except BlackWidowError as exc:          # too many items
            raise falcon.HTTPError(exc.status, title=exc.message, description=exc.field) from None
        drops = tuple(DropAck(sub_id, self.node.delete(sub_id)) for sub_id in batch.drops)
        resp.media = SendBatchAck(drops=drops, puts=tuple(map(self._put, batch.puts))).to_dict()

    def _put(self, body) -> PutAck | ItemError:
        item_id = body.get("id") if isinstance(body, dict) and isinstance(body.get("id"), str) else None
        try:
            spec = SubscriptionSpec.from_dict(body)
        except ValidationError as exc:
            return ItemError.of(item_id, exc)
        if spec.id in self.node.refuse:
            return ItemError(id=spec.id, code="invalid", message="refused on purpose", field="title")
        state, changed = self.node.put(spec)
        return PutAck(spec.id, state, changed)
