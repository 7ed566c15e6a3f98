"""The spawn's HTTP session for wikis: it connects only to addresses it has checked.

Each new connection resolves the wiki's host once, refuses if any address is internal
(shared.wiki_hosts) unless BW_WIKI_ALLOWLIST names the exact host[:port], and connects to those same
addresses: no second lookup can answer otherwise (DNS rebinding). Redirects and reconnects go through
the same check. Proxies from the environment are ignored: a proxy would resolve the host itself.
Its User-Agent (BW_USER_AGENT, the same on every spawn) must describe the client and give a contact:
wikis refuse generic ones (the Wikimedia User-Agent policy); check_user_agent is the one rule.
"""
import re
import socket

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection

from shared.errors import ConfigError
from shared.http import make_session
from shared.wiki_hosts import exactly_listed, internal_address
from spawn import request_watch


# product names of HTTP libraries and tools: a User-Agent led by one says nothing about who runs it
_GENERIC = {"python-requests", "python-urllib", "python", "curl", "wget", "aiohttp", "httpx", "go-http-client",
            "java", "okhttp", "libwww-perl", "axios", "node-fetch", "urllib3", "mozilla"}
_CONTACT = re.compile(r"https?://\S+|[\w.+-]+@[\w-]+(\.[\w-]+)+")


def check_user_agent(user_agent: str) -> str:
    """The User-Agent wiki requests carry, or ConfigError naming BW_USER_AGENT: it must name the
    client (not lead with a library's or browser's product name) and give a contact URL or e-mail."""
    ua = (user_agent or "").strip()
    product = ua.split("/", 1)[0].split(" ", 1)[0].lower()
    if not ua or product in _GENERIC:
        raise ConfigError(f"BW_USER_AGENT must describe this client (e.g. 'BlackWidow/1.0 (https://example.net/"
                          f"bot; ops@example.net)'), not a generic one: {ua!r}")
    if not _CONTACT.search(ua):
        raise ConfigError(f"BW_USER_AGENT must give a contact (a URL or an e-mail address): {ua!r}")
    return ua


class InternalAddress(Exception):
    """A wiki host resolved to an internal address: nothing was connected. Deliberately not an OSError,
    so that urllib3 and requests neither retry nor wrap it."""

    def __init__(self, host_port: str, addresses: list[str]):
        super().__init__(f"{host_port} resolves to {', '.join(addresses)}, which is not globally routable; "
                         "only an exact BW_WIKI_ALLOWLIST entry (host[:port]) permits it")
        self.host_port = host_port
        self.addresses = addresses


class _Checked(HTTPConnection):
    """Mixed into urllib3's connection classes (put first, its _new_conn overrides theirs); `allowlist`
    is set on the subclasses _adapter makes."""
    allowlist: tuple[str, ...] = ()

    def request(self, *args, **kw) -> None:
        # the socket of a request under a budget window, for spawn.request_watch to shut at its end
        request_watch.attach(self.sock)
        super().request(*args, **kw)
        request_watch.attach(self.sock)

    def _new_conn(self) -> socket.socket:
        host = self.host.lower()
        host_port = host if self.port == self.default_port else f"{host}:{self.port}"
        if exactly_listed(host_port, self.allowlist):
            return super()._new_conn()
        try:
            found = socket.getaddrinfo(host, self.port, connection.allowed_gai_family(), socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))      # IPv4 and IPv6: a str
        refused = [a for a in addresses if internal_address(a)]
        if refused:
            raise InternalAddress(host_port, refused)
        error: Exception = NewConnectionError(self, f"{host_port} resolves to no address")
        for address in addresses:       # literal addresses: create_connection looks nothing up again
            try:
                return connection.create_connection((address, self.port), self.timeout,
                                                    source_address=self.source_address,
                                                    socket_options=self.socket_options)
            except TimeoutError as exc:
                error = ConnectTimeoutError(self, f"Connection to {host_port} ({address}) timed out. "
                                                  f"(connect timeout={self.timeout})")
                error.__cause__ = exc
            except OSError as exc:
                error = NewConnectionError(self, f"Failed to establish a new connection to {address}: {exc}")
                error.__cause__ = exc
        raise error


class _CheckedAdapter(HTTPAdapter):
    def __init__(self, allowlist: tuple[str, ...], **kw):
        self._pools = {}
        for scheme, pool, conn in (("http", HTTPConnectionPool, HTTPConnection),
                                   ("https", HTTPSConnectionPool, HTTPSConnection)):
            checked = type(f"Checked{conn.__name__}", (_Checked, conn), {"allowlist": allowlist})
            self._pools[scheme] = type(f"Checked{pool.__name__}", (pool,), {"ConnectionCls": checked})
        super().__init__(**kw)

    def init_poolmanager(self, *args, **kw):
        super().init_poolmanager(*args, **kw)
        self.poolmanager.pool_classes_by_scheme = self._pools


def wiki_session(user_agent: str, allowlist: tuple[str, ...], *, pool_size: int = 10) -> requests.Session:
    """shared.http's session whose connections refuse internal addresses (see the module docstring).
    Raises ConfigError for a User-Agent check_user_agent refuses."""
    session = make_session(check_user_agent(user_agent), pool_size=pool_size)
    session.trust_env = False
    adapter = _CheckedAdapter(allowlist, pool_connections=pool_size, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
