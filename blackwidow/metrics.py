"""Prometheus metrics of the scheduler process, on a registry of its own (tests build as many as they like).

scheduler.py serves them on BW_SCHEDULER_METRICS_PORT; the admin API's metrics are in api_metrics.py.
"""
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Poll latencies on a local network are milliseconds; a timed-out node takes seconds.
POLL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.polls = Counter("bw_hub_polls", "Node polls by result (ok, failed)", ["result"], registry=r)
        self.poll_seconds = Histogram("bw_hub_poll_seconds", "Latency of one node poll", buckets=POLL_BUCKETS,
                                      registry=r)
        self.tick_seconds = Histogram("bw_hub_tick_seconds", "Duration of a whole poll tick (poll, plan, send)",
                                      buckets=POLL_BUCKETS, registry=r)
        self.reloads = Counter("bw_hub_reloads", "Reloads by kind (hard, soft)", ["kind"], registry=r)
        self.sends = Counter("bw_hub_sends", "Sends to nodes by action (put, drop) and result (ok, failed)",
                             ["action", "result"], registry=r)
        self.send_requests = Counter("bw_hub_send_requests", "Requests carrying sends to nodes (up to "
                                     "blackwidow.sends.BATCH_SIZE each) by result (ok, failed)", ["result"],
                                     registry=r)
        self.send_request_seconds = Histogram("bw_hub_send_request_seconds",
                                              "Latency of one request carrying sends", buckets=POLL_BUCKETS,
                                              registry=r)
        self.adoptions = Counter("bw_hub_adoptions", "Subscriptions found already running where routing wants "
                                 "them, recorded without a send", registry=r)
        self.nodes_removed = Counter("bw_hub_nodes_removed", "Nodes marked dead after consecutive failed polls",
                                     registry=r)
        self.ticks = Counter("bw_hub_ticks", "Ticks by what they looked at: scoped (only what changed since the "
                             "last one) or whole (every subscription)", ["scope"], registry=r)
        self.tick_looked_at = Gauge("bw_hub_tick_looked_at", "Subscriptions the last tick looked at", registry=r)
        self.tick_errors = Counter("bw_hub_tick_errors", "Ticks that failed to record their outcome", registry=r)
        self.live_nodes = Gauge("bw_hub_live_nodes", "Live nodes after the last tick", registry=r)
        self.move_done = Gauge("bw_hub_move_done_ratio", "Share of route keys' bands a node-set change under "
                               "modulo has moved (1: no move under way)", registry=r)
        self.move_step = Gauge("bw_hub_move_step_keys", "Route keys the next tick of a move may move",
                               registry=r)
        self.takeover_pending = Gauge("bw_hub_takeover_pending_nodes", "Live nodes a scheduler that took over has "
                                      "not yet polled and looked at (0: no takeover under way)", registry=r)
        self.leader = Gauge("bw_hub_scheduler_leader", "1 while this scheduler process holds the lock", registry=r)
        self.feed_lag = Gauge("bw_hub_feed_lag_seconds", "Seconds between now and a wiki's feed watermark (every "
                              "change before it was read and delivered)", ["wiki"], registry=r)
        self.feed_changes = Counter("bw_hub_feed_changes", "Changed pages read from a wiki's feed and routed",
                                    ["wiki"], registry=r)
        self.feed_requests = Counter("bw_hub_feed_requests", "Requests the reader of a wiki's feed spent reading "
                                     "it", ["wiki"], registry=r)
        self.feed_gaps = Counter("bw_hub_feed_gaps", "Spans a wiki's feed no longer covered (its pages were "
                                 "checked one by one)", ["wiki"], registry=r)
        self.budget_rounds = Counter("bw_hub_budget_rounds", "Budget rounds run between ticks (slot handovers "
                                     "without waiting for a poll)", registry=r)
        self.keepalives = Counter("bw_hub_keepalives", "Keepalives sent to nodes between polls, by result (ok, "
                                  "failed)", ["result"], registry=r)

    def keepalive_round(self, sent: int, failed: int) -> None:
        self.keepalives.labels("ok").inc(sent - failed)
        self.keepalives.labels("failed").inc(failed)
