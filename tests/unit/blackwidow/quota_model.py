"""A small world to test the lease arithmetic against: the hub's tick around blackwidow.quota.arithmetic (its durable
state, its memory, routing over the nodes it thinks live), spawns that follow the protocol of
spawn/subscriber.py and spawn/registry.py (generations, refusal, expiry on their own clock, counts as
prefixes of the stored history, batches whose write spans polls reported under the lease they were decided
under), a revision store, and a network that loses, delays (within the margin),
duplicates and reorders polls and loses answers. Processes crash and restart; the hub restarts too.

Everything is driven by one random.Random, so a seed replays a run exactly.
"""
import random
from dataclasses import dataclass, field, replace

from blackwidow.quota import arithmetic as quotas
from blackwidow.quota.arithmetic import Params, Reported, SubLease

TENANT = "t"
PARAMS = Params(ttl_s=5.0, margin_s=2.0, settle_s=12.0, horizon_s=3.0, start_slice=40, min_slice=5, max_slice=400)
TICK_S = 1.0
STEP_S = 0.25


@dataclass
class SubOnNode:
    count: int = 0
    gen: int = 0
    cap: int = 0
    expires_at: float = -1.0
    synced_gen: int = 0
    # a batch decided under the lease (gen, cap) in force then, written and delivered at a later step, as
    # a source's store write spans polls (Subscriber.pledge/settle): its size and that lease
    pending: int = 0
    pledged: tuple[int, int] | None = None


@dataclass
class Process:
    boot: int
    subs: dict[str, SubOnNode] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    last_poll: float = 0.0
    detaches: int = 0         # a detach changes the boot id it reports, not the process
    past: dict[str, int] = field(default_factory=dict)      # counts of removed subscribers


@dataclass
class Message:
    node: str
    boot: int
    at: float
    leases: dict[str, tuple[int, int]]      # sub id -> (gen, cap)
    assigned: tuple[str, ...]


class World:
    def __init__(self, rng: random.Random, *, nodes=3, subs=6, quota=300, faults=True):
        self.rng = rng
        self.faults = faults
        self.now = 0.0
        self.quota = quota
        self.max_quota = quota
        self.pages = {f"s{i}": rng.choice([20, 60, 150, 400, 2000]) for i in range(subs)}
        self.stored = {sid: 0 for sid in self.pages}           # the page's stored prefix
        self.nodes = [f"n{i}" for i in range(nodes)]
        self.procs: dict[str, Process | None] = {n: Process(boot=1) for n in self.nodes}
        self.boots = {n: 1 for n in self.nodes}
        self.hub_live = set(self.nodes)
        self.failures = {n: 0 for n in self.nodes}
        self.db: dict[str, SubLease] = {}
        self.used = {sid: 0 for sid in self.pages}
        self.memory: dict[str, quotas.Dynamics] = {}
        self.inflight: list[Message] = []
        self.next_tick = 0.0
        self.lowered = False
        self.checks = 0

    # -- hub -----------------------------------------------------------------------------
    def assignment(self, sid: str) -> str | None:
        live = sorted(self.hub_live)
        return live[int(sid[1:]) % len(live)] if live else None

    def hub_tick(self) -> None:
        subs = [quotas.Sub(sid, used=self.used[sid], node=self.assignment(sid)) for sid in self.pages]
        reserved_before = sum(quotas.charge_of(self.db.get(s.id), s.used) for s in subs)
        plan = quotas.plan_tenant(TENANT, self.quota, False, subs, self.db, self.memory, self.now, PARAMS)
        assert plan.reserved <= max(self.quota, reserved_before), (plan.reserved, self.quota, reserved_before)
        if self.faults and self.rng.random() < 0.03:
            return                                   # crashed before the write-ahead: nothing happened
        self.db = dict(plan.states)                 # written ahead
        if self.faults and self.rng.random() < 0.03:
            self.memory = {}                         # crashed after writing, before polling: restart
            return
        renewing = {(sid, node) for sid, (node, _, _) in plan.leases.items()}
        answers: dict[str, tuple[int, dict[str, Reported]] | None] = {}
        for node in sorted(self.hub_live):
            leases = {sid: (gen, cap) for sid, (n, gen, cap) in plan.leases.items() if n == node}
            assigned = tuple(sid for sid in self.pages if self.assignment(sid) == node)
            answers[node] = self.send(Message(node, self.boots[node], self.now, leases, assigned))
        for sid, st in list(self.db.items()):
            for node in list(st.holders):
                if node in answers:
                    answer = answers[node]
                    st = quotas.observe(st, node, answer is not None, (sid, node) in renewing,
                                        None if answer is None else answer[1].get(sid), self.now, PARAMS,
                                        boot=None if answer is None else str(answer[0]))
            self.db[sid] = st
        for node, answer in answers.items():
            if answer is None:
                self.failures[node] += 1
                if self.failures[node] >= 3:
                    self.hub_live.discard(node)
                continue
            self.failures[node] = 0
            for sid, r in answer[1].items():
                st = quotas.note_count(self.db.get(sid) or SubLease(TENANT), r)
                self.db[sid] = st
                if self.assignment(sid) == node:
                    self.used[sid] = max(self.used[sid], r.count)
                if node in st.holders:
                    self.memory[sid] = quotas.track(self.memory.get(sid), r, self.now, PARAMS)
        if self.faults and self.rng.random() < 0.02:
            self.memory = {}                         # hub restart: the memory goes, the database stays

    def send(self, msg: Message) -> tuple[int, dict[str, Reported]] | None:
        """Deliver a poll; the hub gets an answer only when it was processed at once and the answer
        came back."""
        fate = self.rng.random() if self.faults else 1.0
        if fate < 0.05:
            return None                              # lost on the way
        if fate < 0.12:
            self.inflight.append(replace(msg, at=self.now + self.rng.uniform(0, PARAMS.margin_s)))
            return None                              # delayed: processed later, the hub timed out
        report = self.process(msg)
        if fate < 0.17:
            self.inflight.append(replace(msg, at=self.now + self.rng.uniform(0, PARAMS.margin_s)))   # duplicate
        if fate < 0.22:
            return None                              # answer lost
        return report

    # -- spawns ----------------------------------------------------------------------------
    def process(self, msg: Message) -> tuple[int, dict[str, Reported]] | None:
        proc = self.procs[msg.node]
        if proc is None or proc.boot != msg.boot:
            return None                              # a dead process, or one started since: TCP is gone
        proc.last_poll = self.now
        for sid in msg.assigned:                     # the PUT of a new subscription (may come late)
            if sid not in proc.subs and (not self.faults or self.rng.random() < 0.8):
                proc.subs[sid] = SubOnNode(count=proc.past.get(sid, 0))
        for sid, (gen, cap) in msg.leases.items():
            sub = proc.subs.get(sid)
            if sub is None:
                proc.refused[sid] = max(proc.refused.get(sid, 0), gen)
            elif gen > proc.refused.get(sid, 0) and gen >= sub.gen:
                if gen > sub.gen:
                    sub.gen, sub.cap = gen, cap
                sub.expires_at = self.now + PARAMS.ttl_s
        for sid in list(proc.subs):
            if sid not in msg.assigned and (not self.faults or self.rng.random() < 0.7):    # the hub's DROP
                self.remove(proc, sid)
        return proc.boot * 1000 + proc.detaches, {sid: self.reported(sid, s) for sid, s in proc.subs.items()}

    def reported(self, sid: str, s: SubOnNode) -> Reported:
        # while a pledged batch is pending, the lease it was decided under is the one reported
        gen, cap = s.pledged if s.pledged is not None else (s.gen, s.cap)
        return Reported(count=s.count, running=True, lease_gen=gen or None, lease_cap=cap if gen else None,
                        synced=bool(gen) and s.synced_gen >= gen, caught_up=s.count >= self.pages[sid])

    def remove(self, proc: Process, sid: str) -> None:
        sub = proc.subs.pop(sid)
        if sub.pending:             # the write ends; nobody is left to deliver it to
            self.stored[sid] = max(self.stored[sid], sub.count + sub.pending)
        proc.past[sid] = sub.count
        if sub.gen:
            proc.refused[sid] = max(proc.refused.get(sid, 0), sub.gen)

    def harvest(self, proc: Process) -> None:
        for sid, sub in proc.subs.items():
            if sub.pending:                          # the pledged batch is written and delivered now
                sub.count += sub.pending
                self.stored[sid] = max(self.stored[sid], sub.count)
                sub.pending, sub.pledged = 0, None
                continue
            if self.now >= sub.expires_at:
                continue                             # no valid lease: nothing more
            if sub.synced_gen < sub.gen:             # a pass starts: the count is read from storage
                sub.count = max(sub.count, min(sub.cap, self.stored[sid]))
                sub.synced_gen = sub.gen
            k = min(sub.cap - sub.count, self.pages[sid] - sub.count, self.rng.randint(0, 6))
            if k > 0 and self.rng.random() < 0.5:   # a write that spans the next polls
                sub.pending, sub.pledged = k, (sub.gen, sub.cap)
            elif k > 0:
                sub.count += k
                self.stored[sid] = max(self.stored[sid], sub.count)

    # -- the world's clock -------------------------------------------------------------------
    def step(self) -> None:
        self.now += STEP_S
        for msg in sorted((m for m in self.inflight if m.at <= self.now), key=lambda m: m.at):
            self.process(msg)
        self.inflight = [m for m in self.inflight if m.at > self.now]
        if self.faults:
            self.chaos()
        for node, proc in self.procs.items():
            if proc is None:
                continue
            if self.now - proc.last_poll > PARAMS.ttl_s + 1:     # detach, then register again
                for sid in list(proc.subs):
                    self.remove(proc, sid)
                proc.detaches += 1
                proc.last_poll = self.now
                self.hub_live.add(node)
                self.failures[node] = 0
            self.harvest(proc)
        if self.now >= self.next_tick:
            self.next_tick = self.now + TICK_S
            self.hub_tick()
        self.check()

    def chaos(self) -> None:
        r = self.rng.random()
        node = self.rng.choice(self.nodes)
        if r < 0.004 and self.procs[node] is not None:
            for sid, sub in self.procs[node].subs.items():      # kill -9: a write in progress may have landed
                if sub.pending:
                    self.stored[sid] = max(self.stored[sid], sub.count + sub.pending)
            self.procs[node] = None
        elif r < 0.02 and self.procs[node] is None:
            self.boots[node] += 1                                # restart, register again
            self.procs[node] = Process(boot=self.boots[node], last_poll=self.now)
            self.hub_live.add(node)
            self.failures[node] = 0
        elif r < 0.024:
            self.quota = max(0, self.quota + self.rng.choice([-120, -40, 40, 120]))
            self.lowered |= self.quota < self.max_quota
            self.max_quota = max(self.max_quota, self.quota)

    def calm(self) -> None:
        self.faults = False
        for node in self.nodes:
            if self.procs[node] is None:
                self.boots[node] += 1
                self.procs[node] = Process(boot=self.boots[node], last_poll=self.now)
                self.hub_live.add(node)
                self.failures[node] = 0

    # -- invariants ----------------------------------------------------------------------------
    def check(self) -> None:
        self.checks += 1
        for sid, stored in self.stored.items():
            charge = quotas.charge_of(self.db.get(sid), self.used[sid])
            assert stored <= charge, (sid, stored, charge, self.db.get(sid))
        assert sum(self.stored.values()) <= self.max_quota, (self.stored, self.max_quota)
        if not self.lowered:
            reserved = sum(quotas.charge_of(self.db.get(sid), self.used[sid]) for sid in self.pages)
            assert reserved <= self.quota, (reserved, self.quota)
