"""Bearer tokens on the hub: the admin token everywhere, except resources marked `auth_exempt`
(health, metrics, the API document) and the methods a resource lists in `node_auth_methods`
(spawn registration), which take the node secret instead."""
from shared.http_auth import check_bearer


class HubAuth:
    def __init__(self, *, admin_token: str, node_secret: str):
        if not admin_token or not node_secret:
            raise ValueError("an empty secret would let anyone in")
        self._admin_token = admin_token
        self._node_secret = node_secret

    def process_resource(self, req, resp, resource, params) -> None:
        if resource is None or getattr(resource, "auth_exempt", False):
            return
        node = req.method in getattr(resource, "node_auth_methods", ())
        check_bearer(req.get_header("Authorization"), self._node_secret if node else self._admin_token)
