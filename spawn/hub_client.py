"""The spawn's only call to the hub: registration. Raises HubUnreachable / HubRejected, never
requests' own exceptions."""
import requests

from shared.errors import ValidationError
from shared.http import DEFAULT_TIMEOUT
from shared.wire import RegistrationAck


class HubError(Exception):
    pass


class HubUnreachable(HubError):
    pass


class HubRejected(HubError):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class HubClient:
    def __init__(self, http: requests.Session, hub_url: str, secret: str, *, timeout=DEFAULT_TIMEOUT):
        self.http = http
        self.hub_url = hub_url.rstrip("/")
        self._secret = secret
        self.timeout = timeout

    def register(self, advertise_url: str) -> RegistrationAck:
        try:
            resp = self.http.post(f"{self.hub_url}/v1/nodes", json={"url": advertise_url}, timeout=self.timeout,
                                  headers={"Authorization": f"Bearer {self._secret}"})
        except requests.RequestException as exc:
            raise HubUnreachable(f"{type(exc).__name__}: {exc}") from exc
        if resp.status_code not in (200, 201):
            raise HubRejected(f"registration answered HTTP {resp.status_code}", resp.status_code)
        try:
            return RegistrationAck.from_dict(resp.json())
        except (ValueError, ValidationError) as exc:
            raise HubRejected(f"registration answer unreadable: {exc}", resp.status_code) from exc
