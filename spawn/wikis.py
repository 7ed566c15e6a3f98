"""Per-wiki collaborators, created on first use: one MediaWikiClient, one RevisitBatcher and one
RevisionFetcher per api.php URL and identity. Subscriptions naming an identity are paced by its upstream budget (and
use its credentials); legacy ones share the process-wide host limiter. Builds the registry's data
sources."""
import threading
import time

from shared.config import SpawnConfig
from shared.hashing import wiki_key
from shared.revisions.store import RevisionStore
from shared.wire import SubscriptionSpec
from spawn.feed_reader import FollowedWikis
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MediaWikiClient
from spawn.metrics import SpawnMetrics
from spawn.nudge_fetch import RevisionFetcher
from spawn.revisit import RevisitBatcher
from spawn.source import DataSource
from spawn.upstream_budget import UpstreamBudgets
from spawn.wiki_auth import WikiAuth


class Wikis:
    def __init__(self, config: SpawnConfig, *, http, store: RevisionStore,
                 metrics: SpawnMetrics, limiter: HostLimiter | None = None, now=time.time,
                 budgets: UpstreamBudgets | None = None, auth: WikiAuth | None = None):
        self.config = config
        self.http = http
        self.store = store
        self.metrics = metrics
        self.limiter = limiter or HostLimiter(config.host_delay_s)
        self._now = now
        self.budgets = budgets or UpstreamBudgets(skew_s=config.max_clock_skew_s)
        self.auth = auth or WikiAuth({}, anonymous=http, make_session=lambda: http)
        self._clients: dict[tuple[str, str | None], MediaWikiClient] = {}
        self._batchers: dict[tuple[str, str | None], RevisitBatcher] = {}
        self._fetchers: dict[tuple[str, str | None], RevisionFetcher] = {}
        self._lock = threading.Lock()
        self.followed = FollowedWikis()     # wikis whose change feed the hub follows

    def client(self, api_url: str, identity: str | None = None) -> MediaWikiClient:
        with self._lock:
            key = (api_url, identity)
            if key not in self._clients:
                self._clients[key] = MediaWikiClient(
                    self.http, api_url, limiter=self.limiter, maxlag=self.config.maxlag,
                    timeout=(min(5.0, self.config.http_timeout_s), self.config.http_timeout_s),
                    on_request=self.metrics.request_counter(wiki_key(api_url)),
                    budget=None if identity is None else self.budgets.identity(identity), auth=self.auth)
            return self._clients[key]

    def batcher(self, api_url: str, identity: str | None = None) -> RevisitBatcher:
        client = self.client(api_url, identity)
        with self._lock:
            if (api_url, identity) not in self._batchers:
                self._batchers[(api_url, identity)] = RevisitBatcher(client, min_s=self.config.revisit_min_s)
            return self._batchers[(api_url, identity)]

    def fetcher(self, api_url: str, identity: str | None = None) -> RevisionFetcher:
        client = self.client(api_url, identity)
        with self._lock:
            if (api_url, identity) not in self._fetchers:
                self._fetchers[(api_url, identity)] = RevisionFetcher(client)
            return self._fetchers[(api_url, identity)]

    def make_source(self, spec: SubscriptionSpec, on_limit) -> DataSource:
        return DataSource(spec.source_uuid, spec.title, client=self.client(spec.wiki, spec.identity),
                          store=self.store, batcher=self.batcher(spec.wiki, spec.identity),
                          revisit_min_s=self.config.revisit_min_s,
                          revisit_max_s=self.config.revisit_max_s, on_limit=on_limit, metrics=self.metrics,
                          now=self._now, followed=lambda: spec.wiki in self.followed,
                          fetcher=self.fetcher(spec.wiki, spec.identity))

    def stop(self) -> None:
        with self._lock:
            batchers, fetchers = list(self._batchers.values()), list(self._fetchers.values())
        for b in batchers:
            b.stop()
        for f in fetchers:
            f.stop()
