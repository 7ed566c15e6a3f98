"""What a harvest into Cassandra must equal: the generator's expected histories (timestamps, users, flags,
comments, sizes, sha1, change tags), every revision stored exactly once by key, nothing else."""
from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.integration.analytics.harvest import wiki_pages
from tests.integration.spawn.test_harvest import as_expected, expected_rows


def articles(mediawiki) -> list[str]:
    """Every article of the seeded wiki (namespace 0, redirects left out: they resolve to their target)."""
    return [p.title for p in mediawiki.expected.pages if p.ns == 0 and not p.is_redirect]


def targets(mediawiki, titles: list[str]) -> dict[str, tuple[int, int]]:
    """title -> (page id, latest revision id), as the wiki itself reports them."""
    return wiki_pages(mediawiki, titles)


def stored_total(session, keyspace: str, api_url: str, pages: dict[str, tuple[int, int]]) -> int:
    store = CassandraRevisionStore(session, keyspace)
    wiki = wiki_key(api_url)
    return sum((state.revisions if state else 0)
               for state in (store.page(wiki, page_id) for page_id, _ in pages.values()))


def harvest_problems(session, keyspace: str, api_url: str, mediawiki,
                     pages: dict[str, tuple[int, int]]) -> list[str]:
    """Empty when every page's stored history equals the expected one; else one line per difference."""
    store = CassandraRevisionStore(session, keyspace)
    wiki = wiki_key(api_url)
    scan = session.prepare(f"SELECT wiki, rev_id, page_id FROM {keyspace}.revisions_by_id_block")
    by_id: dict[int, list[int]] = {}
    for row in session.execute(scan, timeout=60):
        if row.wiki == wiki:
            by_id.setdefault(row.page_id, []).append(row.rev_id)
    problems = []
    for title, (page_id, last_rev_id) in sorted(pages.items()):
        want = expected_rows(mediawiki.expected.page(title))
        stored = list(store.history(wiki, page_id))[::-1]
        ids = [r.rev_id for r in stored]
        if len(ids) != len(set(ids)):
            problems.append(f"{title}: {len(ids) - len(set(ids))} revision ids stored under two keys")
        got = [as_expected(r) for r in stored]
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            mine, theirs = (rows[first] if first < len(rows) else None for rows in (got, want))
            problems.append(f"{title}: {len(got)} stored, {len(want)} expected; "
                            f"first difference at #{first}: {mine} != {theirs}")
        if sorted(by_id.get(page_id, [])) != sorted(ids):
            problems.append(f"{title}: revisions_by_id_block holds {len(by_id.get(page_id, []))} ids, "
                            f"revisions_by_page {len(ids)}")
        state = store.page(wiki, page_id)
        if state is None or (state.latest_rev_id, state.revisions) != (last_rev_id, len(want)):
            problems.append(f"{title}: page row {state} should point at {last_rev_id} "
                            f"with {len(want)} revisions")
    return problems
