"""Pure routing: which live node runs each subscription. No I/O, no SQL.

Routing keys on the subscription's source uuid, so every subscription on the same article lands on
the same node and shares one fetcher there. Hashes come from shared.hashing.stable_hash, never hash().
"""
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


def assign(subscriptions: Mapping[str, str], nodes: Iterable[str],
           strategy: str = MODULO) -> dict[str, str]:
    """{subscription_id: source_uuid} and live node ids -> {subscription_id: node_id}.

    With no live nodes nothing is assigned (an empty dict)."""
    ordered = sorted(set(nodes))
    if not ordered:
        return {}
    by_source: dict[str, str] = {}
    out = {}
    for sub_id, source in subscriptions.items():
        node = by_source.get(source)
        if node is None:
            node = by_source[source] = node_for(source, ordered, strategy)
        out[sub_id] = node
    return out
