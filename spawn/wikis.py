"""Per-wiki collaborators, created on first use: one MediaWikiClient and one RevisitBatcher per
api.php URL, all sharing the process-wide host limiter. Builds the registry's data sources."""
import threading
import time

from shared.config import SpawnConfig
from shared.hashing import wiki_key
from shared.revisions.store import RevisionStore
from shared.wire import SubscriptionSpec
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MediaWikiClient
from spawn.metrics import SpawnMetrics
from spawn.revisit import RevisitBatcher
from spawn.source import DataSource


class Wikis:
    def __init__(self, config: SpawnConfig, *, http, store: RevisionStore,
                 metrics: SpawnMetrics, limiter: HostLimiter | None = None, now=time.time):
        self.config = config
        self.http = http
        self.store = store
        self.metrics = metrics
        self.limiter = limiter or HostLimiter(config.host_delay_s)
        self._now = now
        self._clients: dict[str, MediaWikiClient] = {}
        self._batchers: dict[str, RevisitBatcher] = {}
        self._lock = threading.Lock()

    def client(self, api_url: str) -> MediaWikiClient:
        with self._lock:
            if api_url not in self._clients:
                self._clients[api_url] = MediaWikiClient(
                    self.http, api_url, limiter=self.limiter, maxlag=self.config.maxlag,
                    timeout=(min(5.0, self.config.http_timeout_s), self.config.http_timeout_s),
                    on_request=self.metrics.request_counter(wiki_key(api_url)))
            return self._clients[api_url]

    def batcher(self, api_url: str) -> RevisitBatcher:
        client = self.client(api_url)
        with self._lock:
            if api_url not in self._batchers:
                self._batchers[api_url] = RevisitBatcher(client, min_s=self.config.revisit_min_s)
            return self._batchers[api_url]

    def make_source(self, spec: SubscriptionSpec, on_limit) -> DataSource:
        return DataSource(spec.source_uuid, spec.title, client=self.client(spec.wiki), store=self.store,
                          batcher=self.batcher(spec.wiki), revisit_min_s=self.config.revisit_min_s,
                          revisit_max_s=self.config.revisit_max_s, on_limit=on_limit, metrics=self.metrics,
                          now=self._now)

    def stop(self) -> None:
        with self._lock:
            batchers = list(self._batchers.values())
        for b in batchers:
            b.stop()
