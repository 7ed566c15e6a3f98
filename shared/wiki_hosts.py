"""Which wiki hosts and addresses count as internal. Pure: no DNS, no I/O.

The hub applies it to the host a subscription names (blackwidow.wiki_policy); the spawn applies it to
every address that host resolves to, right before it connects (spawn.wiki_session). Internal means not
globally routable: loopback, private, link-local (the cloud metadata service 169.254.169.254), shared,
reserved, unspecified, multicast, and "localhost" names. Only an allowlist entry naming the exact
host[:port] lets such a wiki through.
"""
import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def allowlist_entries(allowlist: tuple[str, ...]) -> tuple[str, ...]:
    """BW_WIKI_ALLOWLIST patterns as they are compared: trimmed, lowercase, empty ones dropped."""
    return tuple(p.strip().lower() for p in allowlist if p.strip())


def exactly_listed(host_port: str, allowlist: tuple[str, ...]) -> bool:
    """Whether an entry names this host[:port] literally (a wildcard match does not count)."""
    return host_port.lower() in allowlist_entries(allowlist)


def ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    # Resolvers also accept legacy IPv4 spellings ("2130706433", "0x7f.1", "127.1"): treat them as IPs.
    if host and all(c in "0123456789abcdefx." for c in host) and not host.endswith("."):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            pass
    return None


def internal_address(address: str | IPAddress) -> bool:
    """An address a wiki must not be fetched from without an exact allowlist entry."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        # IPv4 carried inside IPv6 reaches that IPv4 address: judge it by what it carries
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and internal_address(embedded):
            return True
    return not ip.is_global or ip.is_multicast


def internal_host(host: str) -> bool:
    """A host name or literal that is internal without any DNS lookup."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = ip_literal(host)
    return ip is not None and internal_address(ip)
