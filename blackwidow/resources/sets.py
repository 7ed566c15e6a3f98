"""/v1/sets and /v1/sets/{id} (admin token): set subscriptions (`kind: wiki`, created through POST
/v1/subscriptions) and their dump bootstraps' progress. Writes rows only; the scheduler hands the files out."""
import falcon

from blackwidow import representations, validation
from blackwidow.store import dumps as dumps_store
from shared.config import HubConfig
from shared.errors import NotFound
from shared.json_body import read_json


class SetsResource:
    def __init__(self, *, max_body_bytes: int, census_every_s: float = HubConfig.census_interval_s):
        self._max_body = max_body_bytes
        self._census_every_s = census_every_s

    def on_get(self, req, resp) -> None:
        query = validation.parse_query(req.params, ("tenant_id",))
        tenant = validation.check_uuid(query["tenant_id"], "tenant_id") if "tenant_id" in query else None
        resp.media = {"items": [representations.wiki_set(s, census_every_s=self._census_every_s)
                                for s in dumps_store.list_sets(req.context.session, tenant)]}

    def on_get_item(self, req, resp, set_id) -> None:
        resp.media = representations.wiki_set(_found(dumps_store.get_set(req.context.session, str(set_id)), set_id),
                                              census_every_s=self._census_every_s)

    def on_patch_item(self, req, resp, set_id) -> None:
        changes = validation.parse(read_json(req, self._max_body), validation.WIKI_SET_PATCH)
        view = dumps_store.get_set(req.context.session, str(set_id))
        if "census_interval_s" in changes and view is not None:
            view = dumps_store.set_census_interval(req.context.session, str(set_id), changes["census_interval_s"])
        if "enabled" in changes and view is not None:
            view = dumps_store.set_enabled(req.context.session, str(set_id), changes["enabled"])
        resp.media = representations.wiki_set(_found(view, set_id), census_every_s=self._census_every_s)

    def on_delete_item(self, req, resp, set_id) -> None:
        if not dumps_store.delete_set(req.context.session, str(set_id)):
            raise NotFound(f"no set subscription {set_id}", field="id")
        resp.status = falcon.HTTP_204


def _found(view: dumps_store.SetView | None, set_id) -> dumps_store.SetView:
    if view is None:
        raise NotFound(f"no set subscription {set_id}", field="id")
    return view
