"""A real harvest of the local test wiki into a revision store, run by the spawn's own registry, data
sources and MediaWiki client in this process. Read-only on the wiki: its change tags were applied when
it was seeded (scripts/services/mediawiki.sh)."""
import time

from shared.config import SpawnConfig
from shared.hashing import source_uuid
from shared.wire import SubscriptionSpec
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis

HARVEST_TIMEOUT_S = 300


def _query(http, api_url: str, **params) -> dict:
    resp = http.get(api_url, params={"format": "json", "formatversion": "2", "action": "query", **params},
                    timeout=(5, 60))
    resp.raise_for_status()
    body = resp.json()
    if "error" in body:
        raise AssertionError(f"query: {body['error']}")
    return body


def wiki_pages(mediawiki, titles: list[str]) -> dict[str, tuple[int, int]]:
    """title -> (page id, latest revision id) as the wiki itself reports them (not the harvester)."""
    http, found = mediawiki.session(), {}
    for i in range(0, len(titles), 50):
        body = _query(http, mediawiki.api_url, prop="info", titles="|".join(titles[i:i + 50]))
        found.update({p["title"]: (p["pageid"], p["lastrevid"]) for p in body["query"]["pages"]})
    return found


def harvest(mediawiki, store, titles: list[str]) -> dict[str, int]:
    """Harvest every revision of these articles into `store`; returns title -> page id as harvested."""
    config = SpawnConfig.from_env({"BW_NODE_SECRET": "analytics-tests", "BW_HOST_DELAY_S": "0",
                                   "BW_USER_AGENT": mediawiki.user_agent})
    wikis = Wikis(config, http=mediawiki.session(), store=store, metrics=SpawnMetrics())
    registry = Registry(wikis.make_source, orphan_after_s=3600)
    api = mediawiki.api_url
    try:
        for i, title in enumerate(titles):
            registry.upsert(SubscriptionSpec(id=f"analytics-{i}", source_uuid=str(source_uuid(api, title)),
                                             tenant_id="analysts", wiki=api, title=title))
        sources = {title: registry.source(str(source_uuid(api, title))) for title in titles}
        deadline = time.monotonic() + HARVEST_TIMEOUT_S
        while not all(src.complete for src in sources.values()):
            failed = [s for s in registry.snapshot() if s.state == "failed"]
            assert not failed, f"harvest failed: {failed}"
            assert time.monotonic() < deadline, "the harvest did not complete in time"
            time.sleep(0.1)
        return {title: src.page.page_id for title, src in sources.items()}
    finally:
        registry.clear()
        wikis.stop()
