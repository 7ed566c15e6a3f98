"""The operator's dashboard. The page and its script are static and public (they hold no data); the page
polls GET /v1/dashboard, one JSON document behind the admin token. `/` redirects to the page."""
from pathlib import Path

import falcon

from blackwidow import representations, store, validation
from blackwidow.models import utcnow
from blackwidow.resources.identities import identity
from shared.config import HubConfig
from shared.errors import NotFound

STATIC = Path(__file__).resolve().parent.parent / "static"
ASSETS = {"dashboard.js": "text/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8"}
# The page runs only its own script and talks only to this hub; nothing may frame it.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


class DashboardResource:
    """GET /v1/dashboard (admin token); ?state= narrows the recent subscriptions."""

    def __init__(self, config: HubConfig):
        self._config = config

    def on_get(self, req, resp) -> None:
        state = validation.parse_state(validation.parse_query(req.params, ("state",)).get("state"))
        now = utcnow()
        data = store.dashboard_data(req.context.session, state=state, now=now.timestamp())
        board = representations.dashboard(data, state=state, now=now, skew_s=self._config.max_clock_skew_s,
                                          census_every_s=self._config.census_interval_s)
        resp.media = {**board, "identities": [identity(view, now.timestamp()) for view in data.identities]}
        resp.cache_control = ["no-store"]


class DashboardPageResource:
    """GET /dashboard and /dashboard/{name}: files read once, at startup."""
    auth_exempt = True

    def __init__(self, static_dir: Path = STATIC):
        self._page = (static_dir / "dashboard.html").read_bytes()
        self._assets = {name: ((static_dir / name).read_bytes(), kind) for name, kind in ASSETS.items()}

    def on_get(self, req, resp) -> None:
        resp.set_headers(PAGE_HEADERS)
        resp.content_type = falcon.MEDIA_HTML
        resp.data = self._page

    def on_get_asset(self, req, resp, name) -> None:
        if name not in self._assets:
            raise NotFound(f"no dashboard file {name!r}", field="name")
        resp.set_headers(PAGE_HEADERS)
        resp.data, resp.content_type = self._assets[name]


class RootResource:
    auth_exempt = True

    def on_get(self, req, resp) -> None:
        resp.status = falcon.HTTP_FOUND
        resp.location = "/dashboard"
