"""Stable hashing and identifiers: the same value in every process and on every host.

Python's built-in hash is salted per process (PYTHONHASHSEED), so it must never route work.
"""
import hashlib
import uuid
from urllib.parse import urlsplit, urlunsplit

# Namespace for source uuids; fixed forever so that every hub computes the same ids.
SOURCE_NAMESPACE = uuid.UUID("6f1c3a52-9d1e-5b7a-8c1f-2b0e8d4a7c11")
NODE_NAMESPACE = uuid.UUID("0b7f4c9e-3a2d-5e61-9f08-7d5c2a1b4e93")


def stable_hash(value: str) -> int:
    """64-bit unsigned hash of a string, identical across processes, hosts and Python versions."""
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest(), "big")


_MASK64 = (1 << 64) - 1
FMIX_M1, FMIX_M2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53


def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finalizer: a bijection with full avalanche, so values derived from one hash (a
    rendezvous weight, a band) are independent of the hash's other uses (its modulo)."""
    x ^= x >> 33
    x = (x * FMIX_M1) & _MASK64
    x ^= x >> 33
    x = (x * FMIX_M2) & _MASK64
    return x ^ (x >> 33)


def canonical_wiki_url(url: str) -> str:
    """Lowercase scheme and host, drop default ports, query and fragment; keep the path."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    if port and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path or "/", "", ""))


def wiki_key(url: str) -> str:
    """Short storage key for a wiki: its host[:port], e.g. 'en.wikipedia.org'."""
    return urlsplit(canonical_wiki_url(url)).netloc


def normalize_title(title: str) -> str:
    """The title as typed, spelled the way every wiki agrees on: '_' -> ' ', whitespace trimmed and
    collapsed. The case is left alone: on a wiki with $wgCapitalLinks = false (Wiktionary) 'apple' and
    'Apple' are two pages, so only the wiki's own resolution (the spawn's page key) may merge them."""
    return " ".join(title.replace("_", " ").split())


def source_uuid(wiki_url: str, title: str) -> uuid.UUID:
    """Every subscription on the same title as typed, from any tenant, shares this id. Two spellings of
    one article (a lower-case first letter, a redirect) share a fetcher through the page key instead:
    source_uuid of the wiki's own title, which the spawn reports once it has resolved the title."""
    return uuid.uuid5(SOURCE_NAMESPACE, canonical_wiki_url(wiki_url) + "\n" + normalize_title(title))


def node_id_for(url: str) -> str:
    """A spawn's id derives from its advertised url, so re-registering is idempotent."""
    return str(uuid.uuid5(NODE_NAMESPACE, url.rstrip("/")))
