"""/v1/feeds (admin token): the wikis' change feeds as the scheduler follows them."""
from datetime import datetime, timezone

from blackwidow import representations, validation
from blackwidow.store import feeds as feeds_store


class FeedsResource:
    def on_get(self, req, resp) -> None:
        validation.parse_query(req.params, ())
        now = datetime.now(timezone.utc)
        resp.media = {"items": [representations.feed(f, now=now) for f in feeds_store.list_feeds(req.context.session)]}
