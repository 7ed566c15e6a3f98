"""Which wikis a subscription may point at. Pure: no DNS, no I/O.

A wiki URL must be http(s), end in api.php, and its host[:port] must match a BW_WIKI_ALLOWLIST pattern
(fnmatch, e.g. "*.wikipedia.org"; a pattern without a port matches only the scheme's default port).
Addresses that are not globally routable (loopback, private, link-local such as the cloud metadata
service 169.254.169.254, reserved, multicast) and "localhost" names are refused even when a wildcard
matches: they are let through only when the allowlist names that exact host[:port], e.g.
"127.0.0.1:8780" for a local test wiki (shared.wiki_hosts). A DNS name that resolves to such an address
is refused by the spawn when it connects (spawn.wiki_session).
"""
import fnmatch
import re
from typing import NoReturn
from urllib.parse import urlsplit

from shared.errors import ValidationError
from shared.hashing import canonical_wiki_url, wiki_key
from shared.wiki_hosts import allowlist_entries, exactly_listed, internal_host

FIELD = "wiki"
# Plain DNS names and IPv4 only: anything else (backslashes, '%', IPv6 literals, raw unicode) is read
# differently by different URL parsers, which is how allowlists get bypassed. IDNs go in punycode.
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")


def _refuse(message: str, field: str = FIELD) -> NoReturn:
    raise ValidationError(message, field=field)


def check_wiki(url: str, allowlist: tuple[str, ...]) -> str:
    """The canonical form of an allowed wiki URL; ValidationError(field='wiki') otherwise."""
    parts = _checked(url, allowlist, FIELD, what="'wiki'")
    if not parts.path.endswith("/api.php"):
        _refuse("'wiki' must be the wiki's api.php URL")
    return canonical_wiki_url(url)


def check_dump_url(url: str, allowlist: tuple[str, ...], field: str) -> str:
    """A dump file's URL, by the same rules as a wiki's host (a spawn fetches it through the same checked
    session); ValidationError naming `field` otherwise."""
    _checked(url, allowlist, field, what=f"'{field}'")
    return url.strip()


def _checked(url: str, allowlist: tuple[str, ...], field: str, *, what: str):
    def refuse(message: str) -> NoReturn:
        _refuse(message, field)
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        refuse(f"{what} is not a valid URL")
    if parts.scheme.lower() not in ("http", "https"):
        refuse(f"{what} must be an http or https URL")
    if not parts.hostname:
        refuse(f"{what} has no host")
    if not _HOST.fullmatch(parts.hostname):
        refuse(f"{what} host must be a DNS name (IDNs in punycode) or an IPv4 address")
    if parts.username is not None or parts.password is not None:
        refuse(f"{what} must not carry credentials")
    if parts.query or parts.fragment:
        refuse(f"{what} must not have a query or fragment")
    host_port = wiki_key(canonical_wiki_url(url))
    if internal_host(parts.hostname):
        if exactly_listed(host_port, allowlist):
            return parts
        refuse(f"{what} points at an internal address ({host_port}); only an exact allowlist entry permits it")
    if any(fnmatch.fnmatchcase(host_port, p) for p in allowlist_entries(allowlist)):
        return parts
    refuse(f"{what} host {host_port} is not in the allowlist")
