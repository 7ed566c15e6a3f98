"""/v1/tenants and /v1/tenants/{id} (admin token)."""
import falcon

from blackwidow import representations, store, validation
from blackwidow.store.identities import set_tenant_weight
from blackwidow.upstream.settings import check_weight
from shared.json_body import read_json


class TenantsResource:
    def __init__(self, *, max_body_bytes: int):
        self._max_body = max_body_bytes

    def on_post(self, req, resp) -> None:
        values = validation.parse(read_json(req, self._max_body), validation.TENANT_CREATE)
        tenant = store.create_tenant(req.context.session, **values)
        resp.status = falcon.HTTP_201
        resp.location = f"/v1/tenants/{tenant.id}"
        resp.media = representations.tenant(store.tenant_usage(req.context.session, tenant.id))

    def on_get(self, req, resp) -> None:
        query = validation.parse_query(req.params, ("limit", "cursor"))
        rows, next_cursor = store.list_tenants(
            req.context.session, limit=validation.parse_limit(query.get("limit")), cursor=query.get("cursor"))
        resp.media = representations.page([representations.tenant(r) for r in rows], next_cursor)

    def on_get_item(self, req, resp, tenant_id) -> None:
        resp.media = representations.tenant(store.tenant_usage(req.context.session, str(tenant_id)))

    def on_patch_item(self, req, resp, tenant_id) -> None:
        body = read_json(req, self._max_body)
        weight = None
        if isinstance(body, dict) and "weight" in body:       # upstream share (docs/upstream.md)
            weight = check_weight(body["weight"])
            body = {k: v for k, v in body.items() if k != "weight"}
        changes = validation.parse(body, validation.TENANT_PATCH)
        tenant = store.update_tenant(req.context.session, str(tenant_id), changes)
        if weight is not None:
            set_tenant_weight(req.context.session, tenant.id, weight)
        resp.media = representations.tenant(store.tenant_usage(req.context.session, tenant.id))

    def on_delete_item(self, req, resp, tenant_id) -> None:
        store.delete_tenant(req.context.session, str(tenant_id))
        resp.status = falcon.HTTP_204
