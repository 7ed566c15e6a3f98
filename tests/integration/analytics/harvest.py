"""A real harvest of the local test wiki into a revision store, run by the spawn's own registry, data
sources and MediaWiki client in this process; and the change tag the tag recipe needs, applied on the
wiki first (an import carries no tags). Tagging is idempotent: only revisions still without the tag
are tagged, so the shared wiki converges to one state however often the tests run."""
import time

from shared.config import SpawnConfig
from shared.hashing import source_uuid
from shared.wire import SubscriptionSpec
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis

TAG = "vandalism-revert"
REVERT_PREFIX = "Reverted edits by "       # the generator's revert comments
TAG_BATCH = 50                             # revids per action=tag request
HARVEST_TIMEOUT_S = 300


def is_revert(comment: str | None) -> bool:
    return bool(comment) and comment.startswith(REVERT_PREFIX)


def _api(http, api_url: str, method: str = "GET", **params) -> dict:
    params = {"format": "json", "formatversion": "2", **params}
    if method == "GET":
        resp = http.get(api_url, params=params, timeout=(5, 60))
    else:
        resp = http.post(api_url, data=params, timeout=(5, 60))
    resp.raise_for_status()
    body = resp.json()
    if "error" in body:
        raise AssertionError(f"{params.get('action')}: {body['error']}")
    return body


def tag_reverts(mediawiki) -> int:
    """Give every revert revision of the wiki the TAG; returns how many were newly tagged."""
    http, api = mediawiki.session(), mediawiki.api_url
    token = _api(http, api, action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
    login = _api(http, api, "POST", action="clientlogin", username=mediawiki.admin_user,
                 password=mediawiki.admin_password, logintoken=token, loginreturnurl="http://127.0.0.1/")
    assert login["clientlogin"]["status"] == "PASS", login
    csrf = _api(http, api, action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
    tags = _api(http, api, action="query", list="tags", tglimit="max")["query"]["tags"]
    if TAG not in {t["name"] for t in tags}:
        _api(http, api, "POST", action="managetags", operation="create", tag=TAG,
             reason="reverts of vandalism in the generated history", token=csrf)
    todo, cont = [], {}
    while True:
        body = _api(http, api, action="query", list="allrevisions", arvprop="ids|comment|tags",
                    arvlimit="max", **cont)
        for page in body["query"]["allrevisions"]:
            todo += [r["revid"] for r in page["revisions"] if is_revert(r.get("comment"))
                     and TAG not in r.get("tags", ())]
        if "continue" not in body:
            break
        cont = body["continue"]
    for i in range(0, len(todo), TAG_BATCH):
        _api(http, api, "POST", action="tag", revid="|".join(map(str, todo[i:i + TAG_BATCH])), add=TAG,
             reason="reverts of vandalism in the generated history", token=csrf)
    return len(todo)


def wiki_pages(mediawiki, titles: list[str]) -> dict[str, tuple[int, int]]:
    """title -> (page id, latest revision id) as the wiki itself reports them (not the harvester)."""
    http, found = mediawiki.session(), {}
    for i in range(0, len(titles), 50):
        body = _api(http, mediawiki.api_url, action="query", prop="info", titles="|".join(titles[i:i + 50]))
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
