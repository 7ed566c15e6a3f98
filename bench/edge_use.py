"""What an edge access log says about one identity's use of its limits (bench.upstream_budget). Pure:
the log lines come in, numbers go out. A request's start is its end (`msec`) less its `request_time`."""
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence
from urllib.parse import parse_qs, urlsplit

from tests.fixtures.edge import LoggedRequest


@dataclass(frozen=True)
class Use:
    """One identity's requests over the span where demand existed."""
    requests: int
    throttled: int            # answered 429 by the edge
    span_s: float
    rate_per_s: float
    busy: float               # share of the span the identity's in-flight slots were busy
    rate_use: float           # achieved rate / the edge's binding rate
    use: float                # the binding one of busy and rate_use
    peak_in_flight: int


def start(r: LoggedRequest) -> float:
    return r.msec - r.request_time


def peak_in_flight(requests: Sequence[LoggedRequest]) -> int:
    events = sorted([(start(r), 1) for r in requests] + [(r.msec, -1) for r in requests])
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def use(requests: Sequence[LoggedRequest], *, in_flight: int, per_s: float, per_min: float,
        span: tuple[float, float] | None = None) -> Use:
    """Use over `span` (default: first start to last end). Only requests the wiki answered (not 429) count
    towards the rate: a refused request is no progress. The binding rate is min(per_s, per_min / 60)."""
    if not requests:
        return Use(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    lo, hi = span or (min(start(r) for r in requests), max(r.msec for r in requests))
    inside = [r for r in requests if lo <= start(r) < hi]
    served = [r for r in inside if r.status != 429]
    span_s = max(hi - lo, 1e-9)
    rate = len(served) / span_s
    busy = sum(min(r.msec, hi) - start(r) for r in inside) / span_s / in_flight
    rate_use = rate / min(per_s, per_min / 60.0)
    return Use(len(inside), sum(1 for r in inside if r.status == 429), span_s, rate, busy, rate_use,
               max(busy, rate_use), peak_in_flight(inside))


def refusals(requests: Sequence[LoggedRequest]) -> dict[str, int]:
    """429s by the edge limit that refused them: limit_conn (in flight) or limit_req (rate)."""
    out: dict[str, int] = {}
    for r in requests:
        if r.status == 429:
            which = "limit_conn" if r.limit_conn == "REJECTED" else "limit_req" if r.limit_req == "REJECTED" else "?"
            out[which] = out.get(which, 0) + 1
    return out


def page_of(uri: str) -> str | None:
    """The page a request is about: its `pageids` or `titles` parameter (None: several, or none)."""
    query = parse_qs(urlsplit(uri).query)
    for key in ("pageids", "titles"):
        values = query.get(key, [])
        if len(values) == 1 and "|" not in values[0]:
            return values[0]
    return None


def tenant_counts(requests: Sequence[LoggedRequest], tenant_of: Callable[[str], str | None]) -> dict[str, int]:
    """Answered requests per tenant, a request's tenant found from its page."""
    counts: dict[str, int] = {}
    for r in requests:
        page = page_of(r.uri)
        tenant = tenant_of(page) if page is not None else None
        if tenant is not None and r.status != 429:
            counts[tenant] = counts.get(tenant, 0) + 1
    return counts


def shares(counts: Mapping[str, int], weights: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """{tenant: (share of the requests it got, its weighted share)}."""
    total = sum(counts.get(t, 0) for t in weights) or 1
    weight_sum = sum(weights.values())
    return {t: (counts.get(t, 0) / total, w / weight_sum) for t, w in weights.items()}
