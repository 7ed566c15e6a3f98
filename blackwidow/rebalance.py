"""Paced moves under modulo routing, pure (docs/coordination.md, "Paced moves").

Under modulo one node joining or leaving re-routes nearly every route key (`stable_hash(key) % n` changes for
all but about 1/n of them). Moving a million subscriptions in one tick means a tick of minutes and every spawn
re-reading its sources at once. So routing changes over by bands of the hash space instead: each route key
has a band (a 32-bit hash of its key, independent of its modulo), and the routing is a stack of layers, the
newest first, each a node set and a frontier:

    a key routes over the nodes of the newest layer whose frontier is above its band

The oldest layer covers every band. A change of the live node set pushes a layer with the new set and
frontier 0 (it covers nothing yet), and each tick moves the newest frontier up by about `per_tick` route
keys' worth, until it covers every band and the older layers go. A key whose node in its layer is out (it
left since that layer was routed over) falls to the node the next newer layer gives it, and so on up to the
newest, whose nodes are the live ones: a node that leaves gives up its keys at once, and a node that joins
(or comes back) takes its keys band by band. So the change of the node set itself moves only what the nodes
that left held, and each step of the frontier only the keys of the bands it passes. All subscriptions
of one route key share a band, so one page's subscribers never split over two nodes. With few enough route
keys the first step covers everything and routing is plain modulo at once.

Routing (the layers) is what the hub persists so that a restarted scheduler goes on where it was.
"""
import math
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping

import numpy as np

from shared.hashing import fmix64, stable_hash

SPACE = 1 << 32           # bands: the top 32 bits of the mixed key hash
MAX_LAYERS = 8            # node-set changes faster than bands move: past this, the newest covers all at once


@dataclass(frozen=True)
class Layer:
    nodes: tuple[str, ...]        # sorted
    frontier: int                 # route keys whose band is below it route over `nodes`
    out: frozenset[str] = frozenset()     # nodes that left since: their keys fall to a newer layer


@dataclass(frozen=True)
class Routing:
    layers: tuple[Layer, ...]     # newest first; the oldest's frontier is SPACE

    @property
    def nodes(self) -> frozenset[str]:
        """The node set routed over last (the newest layer's)."""
        return frozenset(self.layers[0].nodes)

    @property
    def moving(self) -> bool:
        return len(self.layers) > 1

    def to_json(self) -> list[dict]:
        return [{"nodes": list(layer.nodes), "frontier": layer.frontier, "out": sorted(layer.out)}
                for layer in self.layers]

    @classmethod
    def from_json(cls, value: list[dict]) -> "Routing":
        layers = tuple(Layer(tuple(sorted(item["nodes"])), int(item["frontier"]), frozenset(item.get("out", ())))
                       for item in value)
        if not layers or layers[-1].frontier != SPACE or layers[0].out:
            raise ValueError("routing layers must end with one that covers every band and start with the live nodes")
        return cls(layers)


def settled(nodes: Iterable[str]) -> Routing:
    return Routing((Layer(tuple(sorted(nodes)), SPACE),))


def band(key_hash: int) -> int:
    """The band of a route key from its stable_hash: MurmurHash3's finalizer, so bands and `hash % n` are
    independent and each node's keys spread evenly over the bands."""
    return fmix64(key_hash) >> 32


def begin(current: Routing | None, live: Collection[str]) -> Routing:
    """The routing once the live node set became `live`: a new layer that covers nothing yet, over the layers
    routed so far (None: nothing routed before, so nothing to move from)."""
    live = frozenset(live)
    if current is None or not current.layers[0].nodes or not live:
        return settled(live)
    if live == current.nodes:
        return current
    # a node of an older layer counts there only while it stays in every newer node set: one that left and
    # came back takes its keys through the new layer's bands, not back from the old layers at once
    kept = current.nodes & live
    older = tuple(Layer(layer.nodes, layer.frontier, layer.out | (frozenset(layer.nodes) - kept))
                  for layer in current.layers)
    layers = (Layer(tuple(sorted(live)), 0), *older)
    if len(layers) > MAX_LAYERS:
        return settled(live)
    return Routing(layers)


def step(per_tick: int, keys: int) -> int:
    """How far the newest frontier moves in a tick to take about `per_tick` of `keys` route keys."""
    if per_tick <= 0 or keys <= per_tick:
        return SPACE
    return math.ceil(SPACE * per_tick / keys)


@dataclass(frozen=True)
class Cost:
    """What the scheduler's own ticks measured, for sizing the next step: how long a tick that moves nothing
    takes, and how much each put or drop adds to one (moving averages; None: not measured yet)."""
    steady_s: float | None = None
    per_action_s: float | None = None
    polls_s: float | None = None          # of a tick's polls: the least a tick costs while none is steady


_WEIGHT = 0.5             # of the newest tick in each average: a machine's speed changes by the hour


def measure(cost: Cost, seconds: float, actions: int, whole: bool, polls_s: float) -> Cost:
    """`cost` after a tick of `seconds` that sent `actions` puts and drops, `polls_s` of it polling. A tick
    that looked at every subscription (`whole`: a scheduler's first, say) costs what a whole pass costs, not
    what a paced step does. Until a tick without actions was measured (a scheduler that started just before a
    move sees none until it ends), an action's cost is what the tick spent beyond its polls."""
    def mixed(old: float | None, new: float) -> float:
        return new if old is None else (1 - _WEIGHT) * old + _WEIGHT * new
    if whole:
        return cost
    polled = mixed(cost.polls_s, polls_s)
    if actions == 0:
        return Cost(mixed(cost.steady_s, seconds), cost.per_action_s, polled)
    extra = max(0.0, seconds - (cost.steady_s if cost.steady_s is not None else polls_s))
    return Cost(cost.steady_s, mixed(cost.per_action_s, extra / actions), polled)


def per_tick(cost: Cost, target_s: float, most: int) -> int:
    """How many route keys a tick moves: as many as fit in `target_s` beside what a tick costs anyway, each
    a put now and a drop of its old copy a tick later, at most `most`, at least a twentieth of it (0: no
    pacing). Before any tick was measured, a quarter of `most`."""
    if most <= 0:
        return 0
    least = max(1, most // 20)
    if cost.per_action_s is None:
        return max(least, most // 4)
    budget = target_s - (cost.steady_s if cost.steady_s is not None else cost.polls_s or 0.0)
    if cost.per_action_s <= 0:
        return most
    return max(least, min(most, int(budget / (2 * cost.per_action_s))))


def advance(routing: Routing, by: int) -> Routing:
    """The newest frontier `by` bands higher; covering every band, it is the only layer left."""
    newest = routing.layers[0]
    if not routing.moving:
        return routing
    frontier = min(SPACE, newest.frontier + by)
    if frontier >= SPACE:
        return settled(newest.nodes)
    return Routing((Layer(newest.nodes, frontier), *routing.layers[1:]))


@dataclass(frozen=True)
class Step:
    """One tick's part of a node-set change."""
    routing: Routing          # what the tick routes over
    paced: bool               # a layer is moving band by band: the tick moves [low, high), not everything
    low: int = 0
    high: int = 0


def tick(current: Routing | None, live: Collection[str], per_tick: int, keys: int) -> Step:
    """The routing of a tick over `live`, from the one the last tick routed over, moving about `per_tick` of
    `keys` route keys into the newest layer."""
    begun = begin(current, live)
    if not begun.moving:
        return Step(begun, False)
    low = begun.layers[0].frontier
    after = advance(begun, step(per_tick, keys))
    high = after.layers[0].frontier if after.moving else SPACE
    return Step(after, not (low == 0 and high == SPACE), low, high)


def node_for(key: str, routing: Routing) -> str:
    """The node of one route key."""
    h = stable_hash(key)
    layers = routing.layers
    if len(layers) > 1:
        b = band(h)
        at = next(i for i, layer in enumerate(layers) if b < layer.frontier)
        for layer in reversed(layers[1:at + 1]):
            node = layer.nodes[h % len(layer.nodes)]
            if node not in layer.out:
                return node
    newest = layers[0].nodes
    return newest[h % len(newest)]


class BandIndex:
    """Route keys' subscription ids in band order: which ids a frontier's move covers, without weighing every
    key each tick. Built once when the node set changes; ids given a key afterwards (new subscriptions,
    resolved page keys) are added as they come. An id may sit under an old band too: looking at it again is
    harmless."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._bands, self._ids = _sorted_by_band(*_banded(keys))
        # ids keyed since the last fold, sorted apart: adding a few to a million must not sort the million
        self._side_bands: np.ndarray = np.empty(0, dtype=np.uint64)
        self._side_ids: list[str] = []

    def add(self, keys: Mapping[str, str]) -> None:
        if not keys:
            return
        bands, ids = _banded(keys)
        self._side_bands, self._side_ids = _sorted_by_band(np.concatenate([self._side_bands, bands]),
                                                           self._side_ids + ids)
        if len(self._side_ids) > max(FOLD_AT, len(self._ids) // 16):
            self._bands, self._ids = _sorted_by_band(np.concatenate([self._bands, self._side_bands]),
                                                     self._ids + self._side_ids)
            self._side_bands, self._side_ids = np.empty(0, dtype=np.uint64), []

    def between(self, low: int, high: int) -> list[str]:
        """The ids whose band is in [low, high)."""
        start, end = np.searchsorted(self._bands, [low, high], side="left").tolist()
        side_start, side_end = np.searchsorted(self._side_bands, [low, high], side="left").tolist()
        return self._ids[start:end] + self._side_ids[side_start:side_end]

    def __len__(self) -> int:
        return len(self._ids) + len(self._side_ids)


FOLD_AT = 4096          # ids kept apart before they are merged into the sorted whole (also past 1/16 of it)


def _banded(keys: Mapping[str, str]) -> tuple[np.ndarray, list[str]]:
    ids = list(keys)
    return np.fromiter((band(stable_hash(keys[sid])) for sid in ids), dtype=np.uint64, count=len(ids)), ids


def _sorted_by_band(bands: np.ndarray, ids: list[str]) -> tuple[np.ndarray, list[str]]:
    order = np.argsort(bands, kind="stable")
    return bands[order], [ids[i] for i in order.tolist()]
