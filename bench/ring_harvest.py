"""12. Harvest rate on the 3-node cluster: one real spawn process (`spawn serve`, as bench.ingest runs it,
the benchmark playing the hub) harvests every seeded article of the local wiki with content into the single
local node (RF 1) and into the 3-node cluster of `scripts/services/cassandra.sh up-cluster` (RF 3), side by
side in one run with the same pages and spawn settings; each stored history is then checked against the
wiki's, so that each rate is of a complete harvest. The cluster is started here and stopped after.

    .venv/bin/python -m bench.ring_harvest
"""
import functools
import os
import random
import sys
from pathlib import Path
from typing import NamedTuple

from bench.common import (LOCAL_WIKI, LOCAL_WIKI_DIR, RING, ROOT, SINGLE_NODE, Servers, cassandra_keyspace,
                          cassandra_ring, heading, seeded_articles, table, wiki_server_cpu)
from bench.ingest import Harvest, spawn_harvest
from shared.config import SpawnConfig
from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.text_history import digest

ROUNDS = 2              # each target harvested this many times, the order alternating between rounds
WARM_PAGES = 3          # pages of one unmeasured harvest into each target first: cold JVMs and caches
TEXT_SAMPLE = 200       # stored texts per harvest read back and checked against their sha1
TARGETS = (("single node", SINGLE_NODE, 1), ("3-node cluster", RING, 3))


class Run(NamedTuple):
    target: str
    replication: int
    round: int
    harvest: Harvest
    problems: list[str]     # empty when the stored histories equal the wiki's


def history_problems(store: CassandraRevisionStore, wiki: str, expected: dict[str, list[str]]) -> list[str]:
    """One line per page whose stored history differs from the wiki's: its revisions' sha1s oldest
    first, one row per revision id, and the page row's count and newest revision."""
    problems = []
    for title, sha1s in expected.items():
        page_id = store.page_id(wiki, title)
        stored = [] if page_id is None else list(store.history(wiki, page_id))[::-1]   # history() is newest first
        if [r.sha1 for r in stored] != sha1s or len({r.rev_id for r in stored}) != len(stored):
            problems.append(f"{title}: {len(stored)} revisions stored, {len(sha1s)} in the wiki")
            continue
        state = store.page(wiki, page_id)
        if state is None or (state.revisions, state.latest_rev_id) != (len(sha1s), stored[-1].rev_id):
            problems.append(f"{title}: page row {state}, want {len(sha1s)} revisions up to {stored[-1].rev_id}")
    return problems


def text_problems(store: CassandraRevisionStore, wiki: str, titles: list[str]) -> list[str]:
    """Sampled stored texts whose sha1 is not their revision's: a harvest with content stores them all."""
    revisions = [r for title in titles for r in store.history(wiki, store.page_id(wiki, title))]
    sample = random.Random(7).sample(revisions, min(TEXT_SAMPLE, len(revisions)))
    return [f"revision {r.rev_id}: stored text differs from its sha1" for r in sample
            if digest(store.content(wiki, r.rev_id) or "") != r.sha1]


def harvest_into(servers: Servers, replication: int, titles: list[str], log_dir: Path) -> tuple[Harvest, list]:
    """A spawn's harvest of `titles` with content into a fresh keyspace, and how its store differs from the
    wiki (the spawn itself stops the clock only once every page's newest revision is stored)."""
    expected = {p.title: [r.sha1 for r in p.revisions] for p in seeded_articles() if p.title in titles}
    wiki = wiki_key(LOCAL_WIKI)
    with cassandra_keyspace("bw_bench_ring_harvest", servers.hosts, port=servers.port,
                            replication=replication) as (session, keyspace):
        harvest = spawn_harvest(LOCAL_WIKI, titles, keyspace, log_dir,
                                functools.partial(wiki_server_cpu, LOCAL_WIKI_DIR), servers=servers, content=True)
        store = CassandraRevisionStore(session, keyspace)     # reads at the store's level, as analysts do
        return harvest, history_problems(store, wiki, expected) + text_problems(store, wiki, titles)


def measure(titles: list[str], log_dir: Path) -> list[Run]:
    """Warm both targets, then ROUNDS harvests into each, alternating which goes first."""
    for _, servers, replication in TARGETS:
        harvest_into(servers, replication, titles[:WARM_PAGES], log_dir)
    runs = []
    for n in range(1, ROUNDS + 1):
        for target, servers, replication in (TARGETS if n % 2 else TARGETS[::-1]):
            print(f"ring_harvest: round {n}, {target} ...", file=sys.stderr, flush=True)
            harvest, problems = harvest_into(servers, replication, titles, log_dir)
            runs.append(Run(target, replication, n, harvest, problems))
    return runs


def pooled(runs: list[Run], target: str, field: str = "") -> float:
    """Over every round of one target: revisions/s, or with `field` that Harvest field in µs per revision."""
    mine = [r.harvest for r in runs if r.target == target]
    revisions = sum(h.revisions for h in mine)
    if not field:
        return revisions / sum(h.seconds for h in mine)
    return 1e6 * sum(getattr(h, field) for h in mine) / revisions


def row(run: Run) -> tuple:
    h = run.harvest
    return (run.target, run.replication, run.round, f"{h.revisions:,}", f"{h.seconds:.1f}",
            f"{h.revisions / h.seconds:,.0f}", f"{1e6 * h.spawn_cpu / h.revisions:.0f}",
            f"{1e6 * h.cassandra_cpu / h.revisions:.0f}", f"{1e6 * h.writing / h.revisions:.0f}",
            f"{1e6 * h.waited / h.revisions:.0f}", "yes" if not run.problems else f"**no** ({len(run.problems)})")


def per_round(runs: list[Run]) -> str:
    """The cluster's rate ÷ the single node's, round by round."""
    def rate(n: int, target: str) -> float:
        h = next(r.harvest for r in runs if r.round == n and r.target == target)
        return h.revisions / h.seconds
    return ", ".join(f"{rate(n, TARGETS[1][0]) / rate(n, TARGETS[0][0]):.2f}x" for n in range(1, ROUNDS + 1))


def describe(pages: int, consistency: str) -> str:
    return (f"One real spawn process (`spawn serve`, host delay 0, default settings, the benchmark playing the "
            f"hub) harvests all {pages} seeded articles of the local wiki with content, into a fresh keyspace "
            f"on the single local node (RF 1) and on the 3-node cluster (127.0.0.2-4, RF 3, 512 MiB heaps), at "
            f"the spawn's default levels: {consistency}. Same pages and settings for both; {ROUNDS} rounds, the "
            f"order alternating, after one unmeasured harvest of {WARM_PAGES} pages into each. The clock runs "
            f"from the first send until every page's newest revision is stored. *Complete*: every page's stored "
            f"history equals the wiki's (sha1s oldest first, one row per revision, the page row's count and "
            f"newest revision), read back at the store's read level, and {TEXT_SAMPLE} sampled texts match "
            f"their sha1. CPU per revision: the spawn's, and Cassandra's (all three nodes on the cluster); "
            f"writing and waiting: seconds the spawn's sources spent in the store's write and waiting for the "
            f"wiki, summed over pages harvested side by side.\n")


def wiki_cpu(runs: list[Run]) -> str:
    """The wiki server's CPU per revision on each target, when it could be read."""
    if any(r.harvest.wiki_cpu is None for r in runs):
        return ""
    return (f" The wiki's PHP server, on those cores too, served the same pages with "
            f"{pooled(runs, TARGETS[1][0], 'wiki_cpu'):,.0f} against {pooled(runs, TARGETS[0][0], 'wiki_cpu'):,.0f} "
            f"µs of CPU per revision.")


def reading(runs: list[Run], load: tuple[float, float]) -> str:
    """What the figures say, from the figures."""
    single, ring = TARGETS[0][0], TARGETS[1][0]

    def ratio(field: str) -> str:
        return f"{pooled(runs, ring, field):,.0f} against {pooled(runs, single, field):,.0f} µs"
    return (f"Per revision, the three nodes together used {ratio('cassandra_cpu')} of CPU on the "
            f"single node (whose figure also counts whatever else used that node meanwhile), and the spawn's "
            f"sources spent {ratio('writing')} writing and {ratio('waited')} waiting for the wiki. A write at "
            f"RF 3 is applied on three replicas and the coordinator waits for two; here all of them share the "
            f"machine's 2 cores with the single node, the wiki, the spawn and other work (1-minute load average "
            f"{load[0]:.1f} before the rounds, {load[1]:.1f} after).{wiki_cpu(runs)}\n\n"
            f"What this does not show: a cluster on hosts of its own, where the replicas work in parallel and "
            f"the network, not shared cores, separates them; more than one spawn; a node lost mid-harvest (the "
            f"node-loss test, `tests/e2e/test_cassandra_node_loss.py`, checks that nothing is lost then).")


def report(runs: list[Run], pages: int, consistency: str, load: tuple[float, float]) -> None:
    single, ring = pooled(runs, TARGETS[0][0]), pooled(runs, TARGETS[1][0])
    print(heading(12, "Harvest rate on the 3-node cluster against the single node"))
    print(describe(pages, consistency))
    print(table(("target", "RF", "round", "revisions", "seconds", "revisions/s",
                 "spawn CPU µs/rev", "Cassandra CPU µs/rev", "writing µs/rev", "waiting µs/rev", "complete"),
                [row(r) for r in runs], right=range(1, 10)))
    complete = all(not r.problems for r in runs)
    print(f"\n3-node cluster against the single node, all rounds: {ring:,.0f} against {single:,.0f} revisions/s "
          f"({ring / single:.2f}x; per round {per_round(runs)}). Every harvest complete: "
          f"{'yes' if complete else '**no**'}. No goal was set.")
    for r in runs:
        for problem in r.problems[:5]:
            print(f"- {r.target}, round {r.round}: {problem}")
    print("\n" + reading(runs, load))


def main() -> None:
    titles = [p.title for p in seeded_articles()]
    log_dir = ROOT / ".run/bench/ring_harvest"
    log_dir.mkdir(parents=True, exist_ok=True)
    defaults = SpawnConfig.from_env({"BW_NODE_SECRET": "x"})        # what a spawn runs with unless told
    consistency = (f"{defaults.cassandra_write_consistency} writes and "
                   f"{defaults.cassandra_read_consistency} reads")
    with cassandra_ring() as up:
        if not up:
            sys.exit("ring_harvest: `cassandra.sh up-cluster` failed")
        before = os.getloadavg()[0]
        runs = measure(titles, log_dir)
        after = os.getloadavg()[0]
    report(runs, len(titles), consistency, (before, after))


if __name__ == "__main__":
    main()
