"""Outbound HTTP defaults: every request has a timeout and a descriptive User-Agent."""
import requests
from requests.adapters import HTTPAdapter

DEFAULT_TIMEOUT = (5.0, 30.0)     # (connect, read) seconds


def make_session(user_agent: str, *, pool_size: int = 10) -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = user_agent
    session.headers["Accept-Encoding"] = "gzip, deflate"
    adapter = HTTPAdapter(pool_connections=pool_size, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
