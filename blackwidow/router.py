"""Pure routing: which live node runs each subscription. No I/O, no SQL.

Routing keys on the subscription's source uuid, or on the page key a spawn reported for it (the
article its title resolved to), so every subscription on the same article lands on the same node and
shares one fetcher there. Hashes come from shared.hashing.stable_hash, never hash().
"""
import threading
from typing import Iterable, Mapping

import numpy as np

from blackwidow import rebalance
from shared.hashing import FMIX_M1 as _M1, FMIX_M2 as _M2, fmix64, stable_hash

MODULO = "modulo"
RENDEZVOUS = "rendezvous"
STRATEGIES = (MODULO, RENDEZVOUS)


# Rendezvous weighs each (node, source) pair as fmix64(stable_hash(node) ^ stable_hash(source)): MurmurHash3's 64-bit
# finalizer, a bijection with full avalanche, so one source's weights over distinct nodes never tie and
# order the nodes at random. Two blake2b digests per pair (the earlier weight) cost a microsecond each in
# Python, a quarter of an hour for the 10^9 pairs of 1,000,000 sources on 1,000 nodes; this weight is a few
# integer operations, computed for whole blocks of pairs at once with numpy.
_BLOCK = 1 << 22          # pairs weighed per numpy block: 32 MB of uint64 at a time


def weight(node: str, source: str) -> int:
    """The rendezvous weight of one pair: the highest over the live nodes wins the source."""
    return fmix64(stable_hash(node) ^ stable_hash(source))


def node_for(source_uuid: str, nodes: list[str], strategy: str = MODULO) -> str:
    """The node for one source; `nodes` must be sorted and non-empty."""
    if strategy == MODULO:
        return nodes[stable_hash(source_uuid) % len(nodes)]
    if strategy == RENDEZVOUS:
        # highest random weight: adding or removing a node moves only the sources it wins or held
        return max(nodes, key=lambda node: (weight(node, source_uuid), node))
    raise ValueError(f"unknown routing strategy {strategy!r}")


def winners(sources: list[str], nodes: Iterable[str]) -> list[tuple[int, str]]:
    """(weight, node) of the highest weight over `nodes` for each source, as node_for() picks it (a tie, which
    needs two nodes with one 64-bit hash, goes to the greater node id), computed in numpy blocks."""
    weights, picked, ordered = _best(_hashes(sources), nodes)
    return [(w, ordered[i]) for w, i in zip(weights.tolist(), picked.tolist())]


def winning_nodes(sources: list[str], nodes: Iterable[str]) -> "np.ndarray":
    """The winning node of each source alone, as an array of the node id strings (no tuple, no int per source:
    a million of those cost a hundred MB)."""
    _, picked, ordered = _best(_hashes(sources), nodes)
    return np.array(ordered, dtype=object)[picked] if len(picked) else np.empty(0, dtype=object)


def _best(source_hashes: "np.ndarray", nodes: Iterable[str]) -> tuple["np.ndarray", "np.ndarray", list[str]]:
    """The best weight of each source, the index of its node in the returned node order, and that order."""
    ordered = sorted(set(nodes), reverse=True)        # argmax keeps the first of equal weights
    best_weights = np.empty(len(source_hashes), dtype=np.uint64)
    best_nodes = np.empty(len(source_hashes), dtype=np.intp)
    if not len(source_hashes):
        return best_weights, best_nodes, ordered
    node_hashes = _hashes(ordered)
    rows = max(1, _BLOCK // len(ordered))
    for start in range(0, len(source_hashes), rows):
        block = source_hashes[start:start + rows, None] ^ node_hashes[None, :]
        _mix_in_place(block)
        column = block.argmax(axis=1)
        best_nodes[start:start + rows] = column
        best_weights[start:start + rows] = block[np.arange(len(column)), column]
    return best_weights, best_nodes, ordered


def takeovers(sources: list[str], holders: list[str], nodes: Iterable[str]) -> list[str | None]:
    """For each source and the node holding it, the one of `nodes` (those that joined) that outweighs the
    holder and so wins the source once it joins, or None when the holder keeps it."""
    nodes = list(nodes)
    if not sources or not nodes:
        return [None] * len(sources)
    of_node = {node: stable_hash(node) for node in set(holders)}      # a thousand nodes hold a million
    source_hashes = _hashes(sources)
    held = source_hashes ^ np.fromiter((of_node[h] for h in holders), dtype=np.uint64, count=len(holders))
    _mix_in_place(held)
    weights, picked, ordered = _best(source_hashes, nodes)
    return [ordered[i] if (w, ordered[i]) > (weight, holder) else None
            for w, i, weight, holder in zip(weights.tolist(), picked.tolist(), held.tolist(), holders)]


def _hashes(values: list[str]) -> "np.ndarray":
    """stable_hash of each value, as a uint64 array (one blake2b each: a second per million)."""
    return np.fromiter((stable_hash(v) for v in values), dtype=np.uint64, count=len(values))


def _mix_in_place(x: "np.ndarray") -> None:
    """fmix64() over a uint64 array; its multiplications wrap modulo 2^64 as the masks do."""
    x ^= x >> np.uint64(33)
    x *= np.uint64(_M1)
    x ^= x >> np.uint64(33)
    x *= np.uint64(_M2)
    x ^= x >> np.uint64(33)


class RendezvousMemo:
    """Each source's winning node over the node set routed last, kept between calls: a call on the same nodes
    costs a lookup per source, a joining node a weight per source and holder, a leaving node a full
    recomputation only of the sources it held. The results are node_for()'s exactly: the best over a set is
    the best over its old part or its new part. Weights are not kept (a million would cost 100 MB): the
    holder's is computed again when a node joins, for every source on a whole call and for the sources asked
    about on a partial one."""

    def __init__(self) -> None:
        self._nodes: frozenset[str] = frozenset()
        self._best: dict[str, str] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._nodes, self._best = frozenset(), {}

    def assign(self, subscriptions: Mapping[str, str], ordered: list[str], forget: bool = True) -> dict[str, str]:
        """{subscription id: the winner of its source ({id: source})} over `ordered`. `forget`: these are every
        routed subscription, so sources not among them are forgotten; else only some (a partial call). Builds
        no set or list per source when the node set is unchanged and every source known (a steady whole tick)."""
        with self._lock:
            nodes = frozenset(ordered)
            best = self._best
            if nodes != self._nodes:
                removed, added = self._nodes - nodes, nodes - self._nodes
                # a partial call (a scoped hard reload) weighs only the sources it asks about against the nodes
                # that joined: the others are forgotten, and weighed again over every node when next asked
                asked = None if forget else set(subscriptions.values())
                best = {s: n for s, n in best.items() if n not in removed and (asked is None or s in asked)}
                if added and best:
                    held = list(best)
                    for source, taker in zip(held, takeovers(held, [best[s] for s in held], added)):
                        if taker is not None:
                            best[source] = taker
            missing = list({s for s in subscriptions.values() if s not in best})
            best.update(zip(missing, winning_nodes(missing, ordered)))
            out = {sub_id: best[source] for sub_id, source in subscriptions.items()}
            if forget and len(best) > len(out):
                # more sources remembered than routed: forget those no longer routed (a few left over, fewer
                # than the subscriptions, cost less than a set of a million sources each tick)
                routed = set(subscriptions.values())
                best = {s: n for s, n in best.items() if s in routed}
            self._nodes, self._best = nodes, best
            return out

    def route(self, sources: Iterable[str], ordered: list[str], forget: bool = True) -> dict[str, str]:
        """{source: its winner} over `ordered`, as assign() routes it."""
        return self.assign({s: s for s in sources}, ordered, forget)


def assign(subscriptions: Mapping[str, str], nodes: Iterable[str],
           strategy: str = MODULO, partial: bool = False,
           paced: "rebalance.Routing | None" = None, memo: RendezvousMemo | None = None) -> dict[str, str]:
    """{subscription_id: source_uuid} and live node ids -> {subscription_id: node_id}.

    With no live nodes nothing is assigned (an empty dict). `partial`: these are only some of the routed
    subscriptions (a steady tick's few), so rendezvous keeps what it knows of the others. `paced`: under
    modulo, the layers a node-set change moves through band by band (blackwidow.rebalance); its newest
    layer's nodes must be `nodes`. `memo`: what rendezvous remembers between the calls of one scheduler
    (its PollerState's); None: nothing kept, every winner weighed."""
    ordered = sorted(set(nodes))
    if not ordered:
        return {}
    if strategy == RENDEZVOUS:
        return (memo or RendezvousMemo()).assign(subscriptions, ordered, forget=not partial)
    if paced is not None and paced.moving and paced.layers[0].nodes != tuple(ordered):
        raise ValueError("paced routing must end on the live nodes")

    def route(source: str) -> str:
        if paced is not None and paced.moving:
            return rebalance.node_for(source, paced)
        return node_for(source, ordered, strategy)

    by_source: dict[str, str] = {}
    out = {}
    for sub_id, source in subscriptions.items():
        node = by_source.get(source)
        if node is None:
            node = by_source[source] = route(source)
        out[sub_id] = node
    return out
