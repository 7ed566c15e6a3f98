"""A spawn's registry in process, for integration tests that watch what it asks the wiki."""
from contextlib import contextmanager
from typing import Iterator

import requests

from shared.config import SpawnConfig
from shared.revisions.store import RevisionStore
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis


@contextmanager
def recorded_registry(config: SpawnConfig, http: requests.Session, store: RevisionStore,
                      orphan_after_s: float = 60,
                      metrics: SpawnMetrics | None = None) -> Iterator[tuple[Registry, list[str]]]:
    """A registry over `http` and `store`, with the URL of every wiki request it sends; cleared after."""
    asked: list[str] = []
    http.hooks["response"].append(lambda resp, *a, **kw: asked.append(resp.request.url))
    wikis = Wikis(config, http=http, store=store, metrics=metrics or SpawnMetrics())
    registry = Registry(wikis.make_source, orphan_after_s=orphan_after_s)
    try:
        yield registry, asked
    finally:
        registry.clear()
        wikis.stop()
