"""Prometheus metrics of one spawn, on a registry of its own (tests build as many apps as they like)."""
from prometheus_client import CollectorRegistry, Counter, Gauge


class SpawnMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.api_requests = Counter("bw_spawn_api_requests", "MediaWiki API requests by host and outcome",
                                    ["host", "outcome"], registry=r)
        self.revisions_written = Counter("bw_spawn_revisions_written", "Revisions written to the store",
                                         ["wiki"], registry=r)
        self.revisions_delivered = Counter("bw_spawn_revisions_delivered",
                                           "Revisions delivered to subscribers (one per subscriber)", registry=r)
        # a source that waits long for batches and writes briefly is paced by the wiki; the other
        # way round, by the store
        self.batch_wait = Counter("bw_spawn_batch_wait_seconds",
                                  "Seconds data sources waited for the wiki's next batch", registry=r)
        self.store_write = Counter("bw_spawn_store_write_seconds",
                                   "Seconds data sources spent writing to the store", registry=r)
        self.source_errors = Counter("bw_spawn_source_errors", "Harvest errors by kind", ["kind"], registry=r)
        # the stored history compared with the wiki's (spawn.completeness): equal, repaired, or differs
        # (stored revisions the wiki no longer shows)
        self.history_checks = Counter("bw_spawn_history_checks", "Stored histories compared with the wiki's",
                                      ["wiki", "outcome"], registry=r)
        self.revisions_repaired = Counter("bw_spawn_revisions_repaired",
                                          "Revisions missing from the store found by a history check and written",
                                          ["wiki"], registry=r)
        self.visibility_changes = Counter("bw_spawn_revision_visibility_changes",
                                          "Stored revisions whose fields revision deletion hid (hidden) or "
                                          "showed again (shown), found by a history check", ["wiki", "change"],
                                          registry=r)
        self.feed_changes = Counter("bw_spawn_feed_changes", "Changed pages this node's change feed readers read, "
                                    "by what their sources must do", ["wiki", "kind"], registry=r)
        self.nudges = Counter("bw_spawn_nudges", "Sources nudged by changes the hub routed from a change feed",
                              ["kind"], registry=r)
        self.dump_files = Counter("bw_spawn_dump_files", "Dump files whose reading ended on this node, by outcome "
                                  "(done, failed, stopped)", ["outcome"], registry=r)
        self.detaches = Counter("bw_spawn_detaches", "Times this node detached after hub silence", registry=r)
        self.dump_files_running = Gauge("bw_spawn_dump_files_running", "Dump files being read on this node",
                                        registry=r)
        self.sources = Gauge("bw_spawn_sources", "Running data sources", registry=r)
        self.subscribers = Gauge("bw_spawn_subscribers", "Subscribers held", registry=r)
        self.attached = Gauge("bw_spawn_attached", "1 while attached to the hub", registry=r)
        # the autoscaling figure: published to CloudWatch as BlackWidow/bw_spawn_load (ops/aws)
        self.load = Gauge("bw_spawn_load", "Subscribers plus data sources held", registry=r)

    def request_counter(self, host: str):
        return lambda outcome: self.api_requests.labels(host=host, outcome=outcome).inc()
