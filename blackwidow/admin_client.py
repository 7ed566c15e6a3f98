"""HTTP client for the hub's admin API, used by `blackwidow admin`. Raises AdminError, never requests'."""
import requests

from shared.http import DEFAULT_TIMEOUT


class AdminError(Exception):
    """The hub refused the call (status and its JSON error body) or could not be reached (status None)."""

    def __init__(self, status: int | None, body):
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body


class AdminClient:
    def __init__(self, http: requests.Session, hub_url: str, token: str, *, timeout=DEFAULT_TIMEOUT):
        self._http = http
        self._base = hub_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = timeout

    def call(self, method: str, path: str, *, body=None, params=None):
        """The decoded JSON answer (None for 204)."""
        try:
            resp = self._http.request(method, self._base + path, json=body, params=params,
                                      headers=self._headers, timeout=self._timeout)
        except requests.RequestException as exc:
            raise AdminError(None, {"error": {"code": "unreachable", "message": str(exc),
                                              "field": None}}) from None
        if resp.status_code == 204:
            return None
        try:
            payload = resp.json()
        except ValueError:
            payload = {"error": {"code": "bad_response", "message": resp.text[:500], "field": None}}
        if resp.status_code >= 400:
            raise AdminError(resp.status_code, payload)
        return payload

    def pages(self, path: str, params: dict):
        """Every item of a paginated listing, following next_cursor."""
        params = dict(params)
        while True:
            page = self.call("GET", path, params=params)
            yield from page["items"]
            if not page.get("next_cursor"):
                return
            params["cursor"] = page["next_cursor"]
