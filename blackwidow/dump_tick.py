"""What the scheduler's tick calls for the set subscriptions (docs/dumps.md, "Bootstrapping through the hub";
docs/sets.md): the files, catch-ups and category listings read from the database, handed to live nodes, carried by
the polls, and the nodes' reports taken back. The rules live in blackwidow.dump_plan and blackwidow.members_plan
(pure); the SQL in blackwidow.store.dumps and blackwidow.store.members.

Per tick (blackwidow.poller.poll_once):
  1. in the tick's first transaction: `loaded = load(session)`;
  2. before the polls: `round = plan(loaded, live, at, config)`; each node's poll carries `round.parts[node]`;
  3. after the polls: `after = read(round, polled reports, at, rules)`;
  4. in the tick's last transaction: `save(session, round, after)`, which also turns the category listings held
     whole into their sets' subscriptions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

from blackwidow import census_plan, dump_plan, members_plan
from blackwidow.decide import Rules, failed_retry_delay
from blackwidow.poll_pages import DumpPart
from blackwidow.store import dumps as dumps_store
from blackwidow.store import members as members_store
from shared.config import HubConfig
from shared.wire import StatusReport

DEFAULT_INTERVAL_S = 3.0        # between a caught-up reader's reads, when the change feeds are off


@dataclass(frozen=True)
class Loaded:
    files: Mapping[str, dump_plan.FileState] = field(default_factory=dict)
    catch_ups: Mapping[str, dump_plan.CatchUpState] = field(default_factory=dict)
    listings: Mapping[str, members_plan.ListingState] = field(default_factory=dict)
    intakes: Mapping[str, members_plan.Intake] = field(default_factory=dict)    # after the polls: parts to write


@dataclass(frozen=True)
class DumpRound:
    loaded: Loaded
    files: Mapping[str, dump_plan.FileState]
    catch_ups: Mapping[str, dump_plan.CatchUpState]
    parts: Mapping[str, DumpPart]
    listings: Mapping[str, members_plan.ListingState] = field(default_factory=dict)


def load(session) -> Loaded:
    return Loaded(dumps_store.load_files(session), dumps_store.load_catch_ups(session),
                  members_store.load_listings(session))


def plan(loaded: Loaded, live: frozenset[str], at: datetime, config: HubConfig) -> DumpRound:
    files = dump_plan.placed(loaded.files, live, at, config.dump_files_per_node)
    catch_ups = dump_plan.readers(loaded.catch_ups, live)
    reading = dump_plan.duties(files)
    following = dump_plan.catch_up_duties(catch_ups, config.feed_interval_s or DEFAULT_INTERVAL_S,
                                          census_plan.Settings(config.census_shards, config.census_interval_s))
    listings = members_plan.readers(loaded.listings, live)
    listing = members_plan.duties(listings, config.members_interval_s)
    proving = dump_plan.census_shard_duties(catch_ups, live)
    parts = {node: DumpPart(reading.get(node, ()), following.get(node, ()), listing.get(node, ()),
                            proving.get(node, ()))
             for node in reading.keys() | following.keys() | listing.keys() | proving.keys()}
    return DumpRound(loaded, files, catch_ups, parts, listings)


def read(sent: DumpRound, reports: Mapping[str, StatusReport], at: datetime, rules: Rules) -> Loaded:
    files = dump_plan.absorbed(sent.files, {n: r.dumps for n, r in reports.items()}, at,
                               lambda failures: failed_retry_delay(failures, rules))
    listings, intakes = members_plan.taken_in(sent.listings, {n: r.members for n, r in reports.items()})
    return Loaded(files, dump_plan.caught_up(sent.catch_ups, {n: r.catch_up for n, r in reports.items()}, at,
                                             {n: r.census for n, r in reports.items()}),
                  listings, intakes)


def save(session, sent: DumpRound, after: Loaded) -> None:
    """Write what changed since the tick read it."""
    dumps_store.save_files(session, after.files, sent.loaded.files)
    dumps_store.save_catch_ups(session, after.catch_ups, sent.loaded.catch_ups)
    members_store.save_listings(session, after.listings, sent.loaded.listings, after.intakes)
    members_store.follow_all(session)
