"""Pure routing: which live node runs each subscription. No I/O, no SQL.

Routing keys on the subscription's source uuid, or on the page key a spawn reported for it (the
article its title resolved to), so every subscription on the same article lands on the same node and
shares one fetcher there. Hashes come from shared.hashing.stable_hash, never hash().
"""
import threading
from typing import Iterable, Mapping

from shared.hashing import stable_hash

MODULO = "modulo"
RENDEZVOUS = "rendezvous"
STRATEGIES = (MODULO, RENDEZVOUS)


def node_for(source_uuid: str, nodes: list[str], strategy: str = MODULO) -> str:
    """The node for one source; `nodes` must be sorted and non-empty."""
    if strategy == MODULO:
        return nodes[stable_hash(source_uuid) % len(nodes)]
    if strategy == RENDEZVOUS:
        # highest random weight: adding or removing a node moves only the sources it wins or held
        return max(nodes, key=lambda node: (stable_hash(node + source_uuid), node))
    raise ValueError(f"unknown routing strategy {strategy!r}")


class _RendezvousMemo:
    """Each source's winning (weight, node) over the node set routed last, kept between calls.
    Rendezvous costs a hash per source and node (100,000 sources on 1,000 nodes: 10^8 hashes, a
    minute); with the memo a call on the same nodes costs a lookup per source, a joining node one
    hash per source, a leaving node a full recomputation only of the sources it held. The results
    are node_for()'s exactly: the best over a set is the best over its old part or its new part."""

    def __init__(self) -> None:
        self._nodes: frozenset[str] = frozenset()
        self._best: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def route(self, sources: Iterable[str], ordered: list[str], forget: bool = True) -> dict[str, str]:
        with self._lock:
            nodes = frozenset(ordered)
            best = self._best
            if nodes != self._nodes:
                removed, added = self._nodes - nodes, sorted(nodes - self._nodes)
                best = {s: w for s, w in best.items() if w[1] not in removed}
                for source, weight in best.items():
                    challenger = max((stable_hash(n + source), n) for n in added) if added else weight
                    if challenger > weight:
                        best[source] = challenger
            kept: dict[str, tuple[int, str]] = {}
            for source in sources:
                known = best.get(source)
                kept[source] = known if known is not None else max((stable_hash(n + source), n) for n in ordered)
            if forget:
                self._nodes, self._best = nodes, kept      # forget sources no longer routed
            else:
                best.update(kept)
                self._nodes, self._best = nodes, best
            return {source: weight[1] for source, weight in kept.items()}


_rendezvous = _RendezvousMemo()


def assign(subscriptions: Mapping[str, str], nodes: Iterable[str],
           strategy: str = MODULO, partial: bool = False) -> dict[str, str]:
    """{subscription_id: source_uuid} and live node ids -> {subscription_id: node_id}.

    With no live nodes nothing is assigned (an empty dict). `partial`: these are only some of the routed
    subscriptions (a steady tick's few), so rendezvous keeps what it knows of the others."""
    ordered = sorted(set(nodes))
    if not ordered:
        return {}
    if strategy == RENDEZVOUS:
        routed = _rendezvous.route(set(subscriptions.values()), ordered, forget=not partial)
        return {sub_id: routed[source] for sub_id, source in subscriptions.items()}
    by_source: dict[str, str] = {}
    out = {}
    for sub_id, source in subscriptions.items():
        node = by_source.get(source)
        if node is None:
            node = by_source[source] = node_for(source, ordered, strategy)
        out[sub_id] = node
    return out
