"""Many simulated spawns in one process: each node is a real HTTP endpoint on a port of its own,
speaking the node API of shared/wire.py as tests/integration/spawn_double.py does (POST
/v1/subscriptions applies a batch's drops, then its puts, and answers per item: an equal spec changes
nothing, a drop of an unknown id succeeds; status reports every subscription with the spec it runs, or the page
of them a bounded poll asks for, or only what changed since the report the poll names, as a real spawn does:
spawn.report_delta; it takes a paged list as a real spawn does: spawn.poll_rounds). It fetches
nothing. One asyncio loop serves every port with a minimal HTTP/1.1 keep-alive server, so a
thousand nodes cost one process.

    BW_NODE_SECRET=S python -m bench.spawn_farm --nodes 1000
Prints one JSON line {"urls": [...], "control": url} once listening, then serves until stdin closes.
Each node keeps a real spawn's timers (--detach-after, --orphan-after: the spawn's defaults): it detaches
(drops everything, new boot id) after that long without a hub call (poll, send or keepalive), and drops a
subscription no poll has named for --orphan-after (keepalives refresh the last complete list polls named).
GET {control}/stats answers {"PUT": n, "DELETE": n, "POST": n, "BATCH": n, "KEEPALIVE": n, "detaches": n,
"orphaned": n, "subscriptions": n, "max_stall_s": s} (puts and drops applied, status polls, batch requests,
keepalives, detaches, subscriptions dropped as orphans, the longest the farm's loop ran late since the last
/stats); POST resets counts;
POST {control}/load {url: [spec, ...]} installs specs directly (profiling a hub that has run a while).
"""
import argparse
import asyncio
import bisect
import json
import os
import resource
import sys
import time
import uuid
from collections import Counter

from shared.errors import ValidationError
from shared.hashing import node_id_for
from shared.wire import MAX_BATCH_ITEMS, Poll, ReportPage
from spawn import poll_rounds
from spawn.node import MAX_REPORT_ITEMS

SUB_PATH = "/v1/subscriptions"


class SimNode:
    def __init__(self, url: str):
        self.url = url
        self.node_id = node_id_for(url)
        self.boot_id = uuid.uuid4().hex
        self.subs: dict[str, dict] = {}        # id -> spec as sent
        self._report: bytes | None = None      # cached status body, dropped on every change
        self.contact: float | None = None      # the hub's last call (None: never called yet)
        self.named: dict[str, float] = {}      # id -> when a poll last named it (or it was put)
        self.last_assigned: tuple[str, ...] = ()     # the last complete list
        self.put_since: set[str] = set()              # put after it: keepalives keep them named, as spawn.node does
        self.round = poll_rounds.Round()
        # tokened reports (spawn.report_delta): the latest (token, ids, removed, delta), the ids held when it
        # was issued, and the ids put or dropped since
        self.answer: tuple[str, list[str], list[str], bool] | None = None
        self.reports = 0
        self.held: set[str] = set()
        self.changed: set[str] = set()

    def heard(self) -> None:
        self.contact = time.monotonic()

    def polled(self, body: bytes) -> ReportPage | None:
        """A poll names the ids assigned here (or a page of them): their orphan timers start again, and a
        complete list is what keepalives refresh from then on. Returns the report page it asks for."""
        now = time.monotonic()
        try:
            poll = Poll.from_dict(json.loads(body))
        except (ValueError, ValidationError):
            return None
        self.touch(poll.assigned, now)
        self.round, complete = poll_rounds.receive(self.round, poll.page, poll.assigned)
        if complete is not None:
            self.last_assigned = complete
            self.put_since = set()
        return poll.report

    def touch(self, ids, now: float) -> None:
        for sub_id in ids:
            if sub_id in self.subs:
                self.named[sub_id] = now

    def refresh(self, now: float) -> None:
        self.touch((*self.last_assigned, *self.put_since), now)

    def expire(self, now: float, detach_after_s: float, orphan_after_s: float) -> tuple[int, int]:
        """(detached, orphaned) as a real spawn's watchdog and registry would now."""
        if self.contact is not None and now - self.contact > detach_after_s:
            self.subs.clear()
            self.named.clear()
            self.put_since = set()
            self.boot_id = uuid.uuid4().hex
            self.round = poll_rounds.Round()
            self._report = None
            self.answer, self.held, self.changed = None, set(), set()
            self.contact = now        # a real spawn registers again at once; its watchdog starts over
            return 1, 0
        orphans = [i for i in self.subs if now - self.named.get(i, now) > orphan_after_s]
        for sub_id in orphans:
            self.delete(sub_id)
        return 0, len(orphans)

    def put(self, sub_id: str, spec: dict) -> tuple[int, dict]:
        changed = self.subs.get(sub_id) != spec
        self.named.setdefault(sub_id, time.monotonic())
        self.put_since.add(sub_id)
        if changed:
            self.subs[sub_id] = spec
            self._report = None
            self.changed.add(sub_id)
        return 200, {"id": sub_id, "state": "running", "changed": changed}

    def delete(self, sub_id: str) -> tuple[int, dict]:
        removed = self.subs.pop(sub_id, None) is not None
        self.named.pop(sub_id, None)
        self.put_since.discard(sub_id)
        if removed:
            self._report = None
            self.changed.add(sub_id)
        return 200, {"id": sub_id, "removed": removed}

    def apply_batch(self, body) -> tuple[int, dict]:
        """POST /v1/subscriptions: every drop, then every put; a put that is not a spec fails alone."""
        drops = body.get("drops", []) if isinstance(body, dict) else None
        puts = body.get("puts", []) if isinstance(body, dict) else None
        for name, items in (("drops", drops), ("puts", puts)):
            if not isinstance(items, list) or name == "drops" and not all(isinstance(d, str) for d in items):
                return 422, {"error": {"code": "invalid", "message": f"'{name}' must be a list",
                                       "field": name}}
        if len(drops) + len(puts) > MAX_BATCH_ITEMS:
            return 413, {"error": {"code": "too_large", "message": f"at most {MAX_BATCH_ITEMS} items",
                                   "field": "drops" if len(drops) > MAX_BATCH_ITEMS else "puts"}}
        acks = {"drops": [self.delete(sub_id)[1] for sub_id in drops], "puts": []}
        for spec in puts:
            sub_id = spec.get("id") if isinstance(spec, dict) and isinstance(spec.get("id"), str) else None
            status, answer = self.put(sub_id, spec) if sub_id is not None else (422, {"error": {
                "code": "invalid", "message": "'id' is required", "field": "id"}})
            acks["puts"].append(answer if status == 200 else {"id": sub_id, **answer})
        return 200, acks

    def report(self, page: ReportPage | None = None) -> bytes:
        """Every status; or, for a bounded poll, a page of a tokened report as spawn.report_delta issues it:
        everything, or what changed since the report the poll names (a simulated status changes only when
        its spec does, so the changes are the ids put or dropped since)."""
        if page is None:
            if self._report is None:
                self._report = self._body(self.subs)
            return self._report
        limit = min(page.limit, MAX_REPORT_ITEMS)
        if page.after is None or self.answer is None:
            self.reports += 1
            token = f"{self.boot_id}.{self.reports}"
            latest = self.answer if page.after is None else None
            if latest is not None and page.since == latest[0]:
                ids = sorted(i for i in self.changed if i in self.subs)
                removed = sorted(i for i in self.changed if i not in self.subs and i in self.held)
                self.answer = (token, ids, removed, True)
            else:
                self.answer = (token, sorted(self.subs), [], False)
            self.held = set(self.subs)
            self.changed = set()
        token, ids, removed, delta = self.answer
        start = 0 if page.after is None else bisect.bisect_right(ids, page.after)
        chunk = ids[start:start + limit]
        more = chunk[-1] if start + limit < len(ids) and chunk else None
        extra = {"token": token, **({"delta": True, "removed": removed if page.after is None else []}
                                    if delta else {})}
        return self._body({i: self.subs[i] for i in chunk if i in self.subs}, more, extra)

    def _body(self, subs: dict[str, dict], more: str | None = None, extra: dict | None = None) -> bytes:
        body = {"node_id": self.node_id, "boot_id": self.boot_id, "attached": True,
                "subscriptions": [{"id": i, "state": "running", "revisions": 3, "last_rev_id": None,
                                   "last_error": None, "spec": s} for i, s in subs.items()],
                "sources": len(self.subs), **(extra or {})}
        return json.dumps(body if more is None else {**body, "next": more}).encode()


class Farm:
    def __init__(self, secret: str):
        self.auth = f"Bearer {secret}"
        self.nodes: list[SimNode] = []
        self.counts: Counter = Counter()
        # the longest the farm's one loop was busy past a watchdog check, since the last /stats: a node
        # that "detached" then may only have had a keepalive waiting unread (a real spawn answers on its own)
        self.max_stall_s = 0.0

    def handle(self, node: SimNode | None, method: str, path: str, headers: dict,
               body: bytes) -> tuple[int, bytes]:
        if node is None:        # the control endpoint
            if method == "POST" and path == "/load":
                by_url = {n.url: n for n in self.nodes}
                for url, specs in json.loads(body).items():
                    for spec in specs:
                        by_url[url].put(spec["id"], spec)
            elif method == "POST":
                self.counts.clear()
            stats = {**self.counts, "subscriptions": sum(len(n.subs) for n in self.nodes),
                     "max_stall_s": self.max_stall_s}
            self.max_stall_s = 0.0
            return 200, json.dumps(stats).encode()
        if headers.get("authorization") != self.auth:
            return 401, b'{"error": {"code": "unauthorized", "message": "bad node secret"}}'
        node.heard()
        if path == "/v1/status" and method in ("GET", "POST"):
            self.counts[method] += 1
            return 200, node.report(node.polled(body) if method == "POST" else None)
        if path == "/v1/keepalive" and method == "POST":
            self.counts["KEEPALIVE"] += 1
            node.refresh(time.monotonic())
            return 200, json.dumps({"node_id": node.node_id, "boot_id": node.boot_id, "attached": True}).encode()
        if path == SUB_PATH and method == "POST":
            self.counts["BATCH"] += 1
            try:
                status, answer = node.apply_batch(json.loads(body))
            except ValueError:
                status, answer = 400, {"error": {"code": "bad_json", "message": "body is not JSON"}}
            if status == 200:
                self.counts["DELETE"] += len(answer["drops"])
                self.counts["PUT"] += len(answer["puts"])
            return status, json.dumps(answer).encode()
        return 404, b'{"error": {"code": "not_found", "message": "no such route"}}'

    async def serve_connection(self, node: SimNode | None, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, payload = self.handle(node, method, target.split("?", 1)[0], headers, body)
                writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % (status, len(payload)) + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                asyncio.CancelledError):
            pass        # the client went away, or the farm is shutting down
        finally:
            writer.close()


async def watch(farm: Farm, detach_after_s: float, orphan_after_s: float) -> None:
    """The spawns' watchdogs and orphan timers, checked every half second."""
    while True:
        due = time.monotonic() + 0.5
        await asyncio.sleep(0.5)
        now = time.monotonic()
        farm.max_stall_s = max(farm.max_stall_s, now - due)
        for node in farm.nodes:
            detached, orphaned = node.expire(now, detach_after_s, orphan_after_s)
            farm.counts["detaches"] += detached
            farm.counts["orphaned"] += orphaned


async def run(count: int, secret: str, detach_after_s: float = 15.0, orphan_after_s: float = 20.0) -> None:
    farm = Farm(secret)
    servers = []
    for _ in range(count):
        holder: list[SimNode] = []
        server = await asyncio.start_server(lambda r, w, h=holder: farm.serve_connection(h[0], r, w),
                                            "127.0.0.1", 0, backlog=64)
        node = SimNode(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        holder.append(node)
        farm.nodes.append(node)
        servers.append(server)
    control = await asyncio.start_server(lambda r, w: farm.serve_connection(None, r, w), "127.0.0.1", 0)
    control_url = f"http://127.0.0.1:{control.sockets[0].getsockname()[1]}"
    print(json.dumps({"urls": [n.url for n in farm.nodes], "control": control_url}), flush=True)
    watcher = asyncio.create_task(watch(farm, detach_after_s, orphan_after_s))
    # serve until the parent closes our stdin
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    watcher.cancel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--detach-after", type=float, default=15.0)    # the spawn's BW_DETACH_AFTER_S
    parser.add_argument("--orphan-after", type=float, default=20.0)    # the spawn's BW_ORPHAN_AFTER_S
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8 * args.nodes + 256)), hard))
    asyncio.run(run(args.nodes, os.environ["BW_NODE_SECRET"], args.detach_after, args.orphan_after))


if __name__ == "__main__":
    main()
