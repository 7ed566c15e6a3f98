"""/v1/identities and /v1/identities/{id} (admin token): an identity's limits, its credential *name*, the
windows nodes hold, pauses and credential refusals. Writes rows only; the next tick sends new budgets."""
import time
from datetime import datetime, timezone

import falcon

from blackwidow.representations import timestamp
from blackwidow.store import identities as store
from blackwidow.upstream.limits import binding_rate
from blackwidow.upstream.settings import check_identity_id, parse_limits
from blackwidow.validation import parse_query
from shared.json_body import read_json


def _at(epoch: float | None) -> str | None:
    return None if epoch is None else timestamp(datetime.fromtimestamp(epoch, timezone.utc))


def identity(view: store.IdentityView, now: float) -> dict:
    limits = view.limits
    paused = view.paused_until is not None and view.paused_until > now
    return {
        "id": view.id, "credential": limits.credential, "in_flight": limits.in_flight, "per_s": limits.per_s,
        "per_min": limits.per_min, "slow_after_s": limits.slow_after_s, "slow_wait_s": limits.slow_wait_s,
        "maxlag": limits.maxlag, "rate_per_s": round(binding_rate(limits), 6), "configured": view.configured,
        "gen": view.gen, "subscriptions": view.subscriptions,
        "in_use": sum(1 for h in view.holds if h.start <= now < h.end),
        "windows": [{"node": h.node, "slot": h.slot, "start": _at(h.start), "end": _at(h.end),
                     "rate_per_s": round(h.rate_per_s, 6)} for h in view.holds],
        "paused_until": _at(view.paused_until) if paused else None,
        "pause_reason": view.pause_reason if paused else None,
        "auth_error": view.auth_error, "auth_error_node": view.auth_error_node,
        "created_at": timestamp(view.created_at), "updated_at": timestamp(view.updated_at),
    }


class IdentitiesResource:
    def __init__(self, *, max_body_bytes: int, wiki_allowlist: tuple[str, ...], clock=time.time):
        self._max_body = max_body_bytes
        self._allowlist = wiki_allowlist
        self._clock = clock

    def on_get(self, req, resp) -> None:
        parse_query(req.params, ())
        now = self._clock()
        resp.media = {"items": [identity(v, now) for v in store.list_identities(req.context.session, now=now)]}

    def on_get_item(self, req, resp, identity_id) -> None:
        now = self._clock()
        resp.media = identity(store.get_identity(req.context.session, identity_id.lower(), now=now), now)

    def on_put_item(self, req, resp, identity_id) -> None:
        host = check_identity_id(identity_id, self._allowlist)
        values = parse_limits(read_json(req, self._max_body), patch=False)
        if store.put_identity(req.context.session, host, values):
            resp.status = falcon.HTTP_201
        now = self._clock()
        resp.media = identity(store.get_identity(req.context.session, host, now=now), now)

    def on_patch_item(self, req, resp, identity_id) -> None:
        host = check_identity_id(identity_id, self._allowlist)
        store.patch_identity(req.context.session, host, parse_limits(read_json(req, self._max_body), patch=True))
        now = self._clock()
        resp.media = identity(store.get_identity(req.context.session, host, now=now), now)
