"""Outbound HTTP defaults: every request has a timeout and a descriptive User-Agent."""
import requests
from requests.adapters import HTTPAdapter

DEFAULT_TIMEOUT = (5.0, 30.0)     # (connect, read) seconds
# hosts a client that calls every spawn keeps connections to: more than a cluster's spawns
CLUSTER_HOSTS = 4096


def make_session(user_agent: str, *, pool_size: int = 10, hosts: int | None = None) -> requests.Session:
    """`pool_size`: connections kept per host; `hosts`: hosts whose connections are kept (default
    `pool_size`). A client that calls a thousand hosts in turn keeps none unless `hosts` is that many: each
    call then opens a connection, and the closed ones fill the machine's ephemeral ports."""
    session = requests.Session()
    session.headers["User-Agent"] = user_agent
    session.headers["Accept-Encoding"] = "gzip, deflate"
    adapter = HTTPAdapter(pool_connections=hosts or pool_size, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
