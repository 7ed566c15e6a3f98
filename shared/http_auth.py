"""Bearer-token check for Falcon apps. Resources with `auth_exempt = True` (health, metrics) skip it."""
import hmac

from shared.errors import Unauthorized


def check_bearer(header: str | None, expected: str) -> None:
    """Raise Unauthorized unless `header` is exactly 'Bearer <expected>' (constant-time compare)."""
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise Unauthorized("missing or wrong bearer token", field="Authorization")


class BearerAuth:
    """Middleware: every routed request must carry the shared secret."""

    def __init__(self, secret: str):
        if not secret:
            raise ValueError("an empty secret would let anyone in")
        self._secret = secret

    def process_resource(self, req, resp, resource, params) -> None:
        if resource is not None and not getattr(resource, "auth_exempt", False):
            check_bearer(req.get_header("Authorization"), self._secret)
