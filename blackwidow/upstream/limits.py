"""What a wiki identity may be sent, and the defaults per host. Pure: no I/O.

Sources of the numbers (docs/upstream.md): Wikimedia's Robot policy for the Action API (unauthenticated:
one request in flight and under 5 req/s; authenticated: at most 3 in flight and 10 req/s; after a response
slower than 1 s, wait 5 s) and its global API limits per minute (a compliant anonymous bot 200/min, an
established account 2,000/min). A wiki outside Wikimedia starts at the anonymous numbers, per-minute
limit included (nothing says what it meters, so the polite assumption); an admin can raise them.
"""
import fnmatch
from dataclasses import dataclass

# Hosts Wikimedia runs (the default BW_WIKI_ALLOWLIST names the same families).
WIKIMEDIA_HOSTS = ("*.wikipedia.org", "*.wikimedia.org", "*.wiktionary.org", "*.wikidata.org", "wikidata.org",
                   "*.wikibooks.org", "*.wikinews.org", "*.wikiquote.org", "*.wikisource.org",
                   "*.wikiversity.org", "*.wikivoyage.org", "*.mediawiki.org", "mediawiki.org")
# "under 5 req/s": a per-second limit keeps this margin, since timers on the nodes jitter and a second
# is a short span to average over
SAFETY = 0.95
# a per-minute limit is a count over a minute, where jitter averages out: the margin only keeps a request
# that lands on a minute's boundary from being the one over (2 % of 200/min is 4 requests)
PER_MIN_SAFETY = 0.98


@dataclass(frozen=True)
class Limits:
    in_flight: int
    per_s: float
    per_min: int | None
    slow_after_s: float = 1.0
    slow_wait_s: float = 5.0
    maxlag: int = 5
    credential: str | None = None     # a credential *name* in the spawns' credentials file


ANONYMOUS = Limits(in_flight=1, per_s=5.0, per_min=200)
AUTHENTICATED = Limits(in_flight=3, per_s=10.0, per_min=2000)
OTHER_WIKI = ANONYMOUS


def is_wikimedia(host: str) -> bool:
    """`host` is an identity id (host[:port]); Wikimedia serves on the default port only."""
    return any(fnmatch.fnmatchcase(host.lower(), pattern) for pattern in WIKIMEDIA_HOSTS)


def default_limits(host: str, credential: str | None = None) -> Limits:
    if not is_wikimedia(host):
        base = OTHER_WIKI
    else:
        base = AUTHENTICATED if credential else ANONYMOUS
    return Limits(base.in_flight, base.per_s, base.per_min, base.slow_after_s, base.slow_wait_s, base.maxlag,
                  credential)


def binding_rate(limits: Limits) -> float:
    """R: requests per second the whole deployment may start for this identity."""
    per_s = limits.per_s * SAFETY
    return per_s if limits.per_min is None else min(per_s, limits.per_min / 60.0 * PER_MIN_SAFETY)
