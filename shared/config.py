"""BW_* environment configuration: one frozen dataclass per process kind, strict casts.

A missing required variable or a malformed value raises ConfigError naming the variable.
"""
import os
from dataclasses import dataclass
from typing import Callable, Mapping

from shared.census_wire import MAX_SHARDS
from shared.errors import ConfigError

_MISSING = object()


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _list(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"must be >= 0: {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a number > 0: {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"must be an integer >= 1: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"must be an integer >= 0: {text!r}")
    return value


def _census_shards(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_SHARDS:
        raise ValueError(f"must be an integer from 0 to {MAX_SHARDS}: {text!r}")
    return value


CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE")


def _consistency(text: str) -> str:
    name = text.strip().upper()
    if name not in CONSISTENCY_LEVELS:
        raise ValueError(f"not a consistency level ({', '.join(CONSISTENCY_LEVELS)}): {text!r}")
    return name


def get(env: Mapping[str, str], key: str, cast: Callable = str, default=_MISSING):
    raw = env.get(key)
    if raw is None or raw == "":
        if default is _MISSING:
            raise ConfigError(f"{key} is missing and has no default")
        return default
    try:
        return cast(raw)
    except ValueError as exc:
        raise ConfigError(f"{key} is invalid: {exc}") from None


DEFAULT_DATA_DIR = ".run/data"
# NTP-disciplined hosts keep their clocks within milliseconds of each other (chrony on Amazon's Time Sync
# Service: well under one), so a tenth of a second is wide; the hub checks every node against it at each poll
# (blackwidow.upstream.clock_check) and gives a node certainly beyond it no upstream slot
DEFAULT_MAX_CLOCK_SKEW_S = 0.1
# Wikis a subscription may name (the hub) and the exact host[:port] entries that may be internal
# addresses (the hub and the spawns alike: shared.wiki_hosts)
DEFAULT_WIKI_ALLOWLIST = ("*.wikipedia.org", "*.wikimedia.org", "*.wiktionary.org", "*.wikidata.org")


def default_database_url(data_dir: str) -> str:
    """The embedded SQLite store used when BW_DATABASE_URL is unset."""
    return "sqlite:///" + os.path.abspath(os.path.join(data_dir, "blackwidow.db"))


# dump files one node reads at once, hub and spawn alike: each walk keeps a core busy, two fill a 2-core node's
# gaps (bench §11), and two is what Wikimedia's dump servers allow a client
DUMP_FILES_PER_NODE = 2


@dataclass(frozen=True)
class CommonConfig:
    node_secret: str
    data_dir: str
    log_json: bool
    log_level: str
    cassandra_hosts: tuple[str, ...]      # empty => the embedded SQLite revision store
    cassandra_keyspace: str
    cassandra_port: int
    # levels of the revision store's writes and reads (the writer's own count reads use the write
    # level); the defaults survive one replica down at RF 3 and read what a quorum wrote
    cassandra_write_consistency: str
    cassandra_read_consistency: str
    revisions_sqlite: str
    # how far any node's wall clock may be from the hub's: upstream budget windows are shrunk by it
    # at both ends on the spawn (shared.hub_clock), and the hub leaves 2x it between two holders of a slot
    max_clock_skew_s: float


def common_from_env(env: Mapping[str, str]) -> dict:
    data_dir = get(env, "BW_DATA_DIR", str, DEFAULT_DATA_DIR)
    return dict(
        node_secret=get(env, "BW_NODE_SECRET"),
        data_dir=data_dir,
        log_json=get(env, "BW_LOG_JSON", _bool, True),
        log_level=get(env, "BW_LOG_LEVEL", str, "INFO"),
        cassandra_hosts=get(env, "BW_CASSANDRA_HOSTS", _list, ()),
        cassandra_keyspace=get(env, "BW_CASSANDRA_KEYSPACE", str, "blackwidow"),
        cassandra_port=get(env, "BW_CASSANDRA_PORT", int, 9042),
        cassandra_write_consistency=get(env, "BW_CASSANDRA_WRITE_CONSISTENCY", _consistency, "LOCAL_QUORUM"),
        cassandra_read_consistency=get(env, "BW_CASSANDRA_READ_CONSISTENCY", _consistency, "LOCAL_QUORUM"),
        revisions_sqlite=get(env, "BW_REVISIONS_SQLITE", str, os.path.join(data_dir, "revisions.db")),
        max_clock_skew_s=get(env, "BW_MAX_CLOCK_SKEW_S", _non_negative_float, DEFAULT_MAX_CLOCK_SKEW_S),
    )


@dataclass(frozen=True)
class HubConfig(CommonConfig):
    admin_token: str
    database_url: str
    poll_interval_s: float
    node_failures: int            # consecutive failed polls before a node is removed
    detach_after_s: float
    orphan_after_s: float
    routing: str                  # "modulo" (default) or "rendezvous"
    wiki_allowlist: tuple[str, ...]
    max_body_bytes: int
    # a node whose process restarts this often within the window is evicted and refused for a while
    node_flap_restarts: int = 3
    node_flap_window_s: float = 300.0
    node_quarantine_s: float = 600.0
    # upstream budgets (docs/upstream.md): length of one slot hold, the span shares are balanced over,
    # the spread of nodes resuming after a pause
    budget_window_s: float = 15.0
    budget_cycle_s: float = 900.0
    budget_pause_jitter_s: float = 2.0
    # seconds between two budget rounds, which hand a slot over between ticks; 0: only at ticks
    budget_round_s: float = 0.25
    # bounded polls (docs/coordination.md): assigned ids per poll request, statuses per answer
    poll_page_ids: int = 5000
    report_page_items: int = 1000
    # change feeds (docs/coordination.md): seconds between a reader's reads of one wiki's feed; 0: no feeds,
    # every page is revisited on its own
    feed_interval_s: float = 3.0
    # dump bootstraps (docs/dumps.md): dump files one node reads at once (an ingest keeps a core busy)
    dump_files_per_node: int = DUMP_FILES_PER_NODE
    # category sets (docs/sets.md): seconds between two listings of a category's members
    members_interval_s: float = 300.0
    # set censuses (docs/dumps.md, "The census"): page-id shards a set's proof is cut into (0: no census), and
    # seconds from one census's end to the next
    census_shards: int = 16
    census_interval_s: float = 86400.0
    # paced moves (docs/coordination.md, "Paced moves"): the most route keys a modulo node-set change moves per
    # tick (0: all at once), and the tick length the number moved is sized for
    moves_per_tick: int = 50_000
    move_tick_s: float = 10.0
    # a scheduler's takeover (docs/coordination.md, "Taking over"): the assigned subscriptions whose nodes one
    # tick takes over (0: every node in one whole tick)
    takeover_ids: int = 100_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "HubConfig":
        common = common_from_env(env)
        routing = get(env, "BW_ROUTING", str, "modulo")
        if routing not in ("modulo", "rendezvous"):
            raise ConfigError("BW_ROUTING is invalid: must be 'modulo' or 'rendezvous'")
        return cls(
            **common,
            admin_token=get(env, "BW_ADMIN_TOKEN"),
            database_url=get(env, "BW_DATABASE_URL", str, default_database_url(common["data_dir"])),
            poll_interval_s=get(env, "BW_POLL_INTERVAL_S", float, 2.0),
            node_failures=get(env, "BW_NODE_FAILURES", int, 3),
            detach_after_s=get(env, "BW_DETACH_AFTER_S", float, 15.0),
            orphan_after_s=get(env, "BW_ORPHAN_AFTER_S", float, 20.0),
            routing=routing,
            wiki_allowlist=get(env, "BW_WIKI_ALLOWLIST", _list, DEFAULT_WIKI_ALLOWLIST),
            max_body_bytes=get(env, "BW_MAX_BODY_BYTES", int, 1_048_576),
            node_flap_restarts=get(env, "BW_NODE_FLAP_RESTARTS", int, cls.node_flap_restarts),
            node_flap_window_s=get(env, "BW_NODE_FLAP_WINDOW_S", float, cls.node_flap_window_s),
            node_quarantine_s=get(env, "BW_NODE_QUARANTINE_S", float, cls.node_quarantine_s),
            budget_window_s=get(env, "BW_BUDGET_WINDOW_S", _positive_float, 15.0),
            budget_cycle_s=get(env, "BW_BUDGET_CYCLE_S", _positive_float, 900.0),
            budget_pause_jitter_s=get(env, "BW_BUDGET_PAUSE_JITTER_S", _non_negative_float, 2.0),
            budget_round_s=get(env, "BW_BUDGET_ROUND_S", _non_negative_float, cls.budget_round_s),
            poll_page_ids=get(env, "BW_POLL_PAGE_IDS", _positive_int, cls.poll_page_ids),
            report_page_items=get(env, "BW_REPORT_PAGE_ITEMS", _positive_int, cls.report_page_items),
            feed_interval_s=get(env, "BW_FEED_INTERVAL_S", _non_negative_float, cls.feed_interval_s),
            dump_files_per_node=get(env, "BW_DUMP_FILES_PER_NODE", _positive_int, cls.dump_files_per_node),
            members_interval_s=get(env, "BW_MEMBERS_INTERVAL_S", _positive_float, cls.members_interval_s),
            census_shards=get(env, "BW_CENSUS_SHARDS", _census_shards, cls.census_shards),
            census_interval_s=get(env, "BW_CENSUS_INTERVAL_S", _positive_float, cls.census_interval_s),
            moves_per_tick=get(env, "BW_MOVES_PER_TICK", _non_negative_int, cls.moves_per_tick),
            move_tick_s=get(env, "BW_MOVE_TICK_S", _positive_float, cls.move_tick_s),
            takeover_ids=get(env, "BW_TAKEOVER_IDS", _non_negative_int, cls.takeover_ids),
        )


@dataclass(frozen=True)
class SpawnConfig(CommonConfig):
    hub_url: str
    advertise_url: str
    user_agent: str
    host_delay_s: float
    maxlag: int
    http_timeout_s: float
    detach_after_s: float         # defaults; the hub's registration answer overrides them
    orphan_after_s: float
    revisit_min_s: float
    revisit_max_s: float
    wiki_allowlist: tuple[str, ...]     # only its exact host[:port] entries matter here: internal addresses
    credentials_file: str | None        # wiki credentials by name (spawn.wiki_auth); None: anonymous only
    # dump files read at once; the hub names at most its own BW_DUMP_FILES_PER_NODE (set both alike)
    dump_files_per_node: int = DUMP_FILES_PER_NODE

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **overrides) -> "SpawnConfig":
        common = common_from_env(env)
        values = dict(
            **common,
            hub_url=get(env, "BW_HUB_URL", str, "http://127.0.0.1:8700"),
            advertise_url=get(env, "BW_ADVERTISE_URL", str, "http://127.0.0.1:8701"),
            user_agent=get(env, "BW_USER_AGENT", str,
                           "BlackWidow/0.1 (https://github.com/blackwidow-harvester; ops@example.org) "
                           "python-requests"),
            host_delay_s=get(env, "BW_HOST_DELAY_S", float, 0.1),
            maxlag=get(env, "BW_MAXLAG", int, 5),
            http_timeout_s=get(env, "BW_HTTP_TIMEOUT_S", float, 30.0),
            detach_after_s=get(env, "BW_DETACH_AFTER_S", float, 15.0),
            orphan_after_s=get(env, "BW_ORPHAN_AFTER_S", float, 20.0),
            revisit_min_s=get(env, "BW_REVISIT_MIN_S", float, 60.0),
            revisit_max_s=get(env, "BW_REVISIT_MAX_S", float, 86_400.0),
            wiki_allowlist=get(env, "BW_WIKI_ALLOWLIST", _list, DEFAULT_WIKI_ALLOWLIST),
            credentials_file=get(env, "BW_CREDENTIALS_FILE", str, None),
            dump_files_per_node=get(env, "BW_DUMP_FILES_PER_NODE", _positive_int, cls.dump_files_per_node),
        )
        values.update(overrides)
        return cls(**values)
