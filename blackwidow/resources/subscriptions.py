"""/v1/subscriptions (one article, `kind: pages`, or a whole wiki: `kind: wiki`, shown under /v1/sets),
/v1/subscriptions/bulk and /v1/subscriptions/{id} (admin token).

Writes rows only; the scheduler routes and sends them to spawns on its next tick."""
import falcon

from blackwidow import representations, store, title_lists, validation, wiki_sets
from blackwidow.store import dumps as dumps_store, feeds as feeds_store
from shared.config import HubConfig
from shared.json_body import read_json

QUERY = ("tenant_id", "state", "node", "limit", "cursor")


class SubscriptionsResource:
    def __init__(self, *, max_body_bytes: int, wiki_allowlist: tuple[str, ...],
                 census_every_s: float = HubConfig.census_interval_s):
        self._max_body = max_body_bytes
        self._allowlist = wiki_allowlist
        self._census_every_s = census_every_s

    def on_post(self, req, resp) -> None:
        body = read_json(req, self._max_body)
        kind = validation.subscription_kind(body)
        if kind in validation.SET_KINDS:
            wanted = wiki_sets.parse_wiki_set(body, self._allowlist)
            created = dumps_store.create_set(req.context.session, kind=kind, **vars(wanted))
            resp.status = falcon.HTTP_201
            resp.location = f"/v1/sets/{created.id}"
            resp.media = representations.wiki_set(created, census_every_s=self._census_every_s)
            return
        if kind == "pages":
            result = store.create_pages(req.context.session, title_lists.parse_pages(body, self._allowlist))
            # 207: some titles were refused (the body says which and why), perhaps all of them
            resp.status = falcon.HTTP_207 if result["refused"] else falcon.HTTP_201
            resp.media = result
            return
        new = validation.parse_subscription(body, self._allowlist)
        sub = store.create_subscription(req.context.session, new)
        resp.status = falcon.HTTP_201
        resp.location = f"/v1/subscriptions/{sub.id}"
        resp.media = _shown(req, [sub])[0]

    def on_post_bulk(self, req, resp) -> None:
        news = validation.parse_bulk(read_json(req, self._max_body), self._allowlist)
        subs = store.create_subscriptions(req.context.session, news)
        resp.status = falcon.HTTP_201
        resp.media = {"items": _shown(req, subs), "count": len(subs)}

    def on_get(self, req, resp) -> None:
        query = validation.parse_query(req.params, QUERY)
        ids = {name: validation.check_uuid(query[name], name)
               for name in ("tenant_id", "node") if name in query}
        subs, next_cursor = store.list_subscriptions(
            req.context.session, limit=validation.parse_limit(query.get("limit")), cursor=query.get("cursor"),
            tenant_id=ids.get("tenant_id"), state=validation.parse_state(query.get("state")),
            node_id=ids.get("node"))
        resp.media = representations.page(_shown(req, subs), next_cursor)

    def on_get_item(self, req, resp, sub_id) -> None:
        resp.media = _shown(req, [store.get_subscription(req.context.session, str(sub_id))])[0]

    def on_patch_item(self, req, resp, sub_id) -> None:
        changes = validation.parse(read_json(req, self._max_body), validation.SUBSCRIPTION_PATCH)
        sub = store.update_subscription(req.context.session, str(sub_id), changes)
        resp.media = _shown(req, [sub])[0]

    def on_delete_item(self, req, resp, sub_id) -> None:
        store.delete_subscription(req.context.session, str(sub_id))
        resp.status = falcon.HTTP_204


def _shown(req, subs: list) -> list[dict]:
    """The subscriptions as the API shows them, a settled one with its wiki feed's watermark."""
    settled = {s.wiki for s in subs if s.settled}
    marks = feeds_store.watermarks(req.context.session, settled) if settled else {}
    return [representations.subscription(s, marks) for s in subs]
