"""Budget rounds: slot handovers between two ticks (docs/upstream.md, "Handovers between ticks"). The I/O shell
around blackwidow.upstream.rounds.

With one request in flight per identity, a slot changes node whenever several nodes have freshness work: the
holder is asked to give it back, says so, and the next node gets it a handover gap later. Each of those steps
waited for a tick (every BW_POLL_INTERVAL_S), so a handover cost about two ticks of idle slot. Between ticks the
scheduler now runs rounds every BW_BUDGET_ROUND_S: it plans the budgets again from what the nodes said last,
writes the plan ahead as a tick does, and POSTs /v1/budgets to the few nodes concerned. Rounds stop before
the next tick is due, or as soon as no node has anything to learn or say.
"""
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from blackwidow import fencing
from blackwidow.poller import PollerState
from blackwidow.spawn_client import SpawnClient, SpawnError
from blackwidow.store import identities
from blackwidow.upstream import clock_check, rounds
from blackwidow.upstream import tick as upstream_tick
from shared.budget_wire import BudgetRound
from shared.config import HubConfig

logger = logging.getLogger(__name__)

MAX_WORKERS = 8


def run(sessionmaker, client: SpawnClient, config: HubConfig, state: PollerState, *, deadline: float,
        nudged: frozenset[str] = frozenset(), clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time, sleep: Callable[[float], object] = time.sleep) -> int:
    """Rounds until `deadline` (on `clock`) while one has a node to talk to; returns how many ran. `nudged`:
    nodes the tick sent change-feed nudges to, whose demand the tick's polls could not know yet."""
    if config.budget_round_s <= 0 or state.fence is None or state.cache is None or not state.routed_nodes:
        return 0
    ask = set(nudged)
    silent: set[str] = set()        # a node that did not answer is left to the next tick's poll
    count = 0
    while clock() + config.budget_round_s <= deadline:
        sleep(config.budget_round_s)
        if not _round(sessionmaker, client, config, state, ask, silent, wall()):
            break
        ask = set()
        count += 1
    return count


def _round(sessionmaker, client: SpawnClient, config: HubConfig, state: PollerState, ask: set[str],
           silent: set[str], now: float) -> bool:
    """One round; False when it had no node to talk to (nothing can change before the next tick). Adds the
    nodes that did not answer to `silent`."""
    assert state.fence is not None and state.cache is not None and state.routed_nodes is not None
    live = state.routed_nodes
    nodes = state.cache.snapshot.nodes
    with sessionmaker() as session:
        snapshot = identities.load(session, reported={i for uses in state.uses.values() for i in uses})
    trusted = clock_check.trusted(live, state.clocks, config.max_clock_skew_s)
    plans = upstream_tick.plan_budgets(snapshot, state.uses, trusted, now, upstream_tick.params(config))
    deliver = rounds.deliveries(plans, state.sent)
    talk = sorted((set(deliver) | rounds.awaited(state.sent, state.uses) | ask) & live & set(nodes) - silent)
    if not talk:
        return False
    if deliver:
        with sessionmaker.begin() as session:        # written before any node hears of it, as at a tick
            fencing.check(session, state.fence)
            identities.save(session, snapshot, plans)

    def exchange(node: str):
        try:
            return node, client.budget_round(nodes[node].url, BudgetRound(node, deliver.get(node, {})))
        except SpawnError as exc:          # the tick's polls decide what a silent node means
            logger.info("budget_round.failed", extra={"node": node, "error": str(exc)})
            return node, None

    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(talk)), thread_name_prefix="bw-budget") as pool:
        answers = list(pool.map(exchange, talk))
    paused = {}
    for node, ack in answers:
        if ack is None:
            silent.add(node)
            continue
        state.sent[node] = rounds.delivered(state.sent.get(node, {}), deliver.get(node, {}))
        state.uses[node] = ack.identities
        if identities.worth_recording(ack.identities, now=now, skew_s=config.max_clock_skew_s):
            paused[node] = ack.identities
    if paused:      # a 429 or maxlag one node saw: every node's next Budget carries the pause
        with sessionmaker.begin() as session:
            fencing.check(session, state.fence)
            for node, uses in sorted(paused.items()):
                identities.record_use(session, node, uses, now=now, skew_s=config.max_clock_skew_s)
    return True
