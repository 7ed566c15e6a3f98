"""A second, throwaway local MediaWiki for the benchmarks the seeded wiki is too small for: 1,000
one-revision articles to watch and one 20,000-revision history. Built once by
scripts/services/mediawiki.sh under .run/bench/mediawiki and served on its own port; the shared
wiki on 8780 is never touched.

    python -m bench.bench_wiki --out DIR [--seed N]     (wikigen's command line: the service script runs it)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from tools import wikigen

VERSION = "1"
PORT = 8790
API = f"http://127.0.0.1:{PORT}/api.php"
WATCHED = 1000
LONG_TITLE = "Long history"
LONG_REVISIONS = 20_000
ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / ".run/bench/mediawiki"
PLAN = ((LONG_TITLE, 0, LONG_REVISIONS, "small"),) + tuple(
    (f"Watched article {k}", 0, 1, "small") for k in range(1, WATCHED + 1))


def watched_titles() -> list[str]:
    return [title for title, _, n, _ in PLAN if n == 1]


def service(action: str) -> None:
    """scripts/services/mediawiki.sh up|down for this wiki (the first `up` builds it: a minute or two)."""
    env = dict(os.environ, BW_MW_DIR=str(DIR), BW_MW_PORT=str(PORT), BW_MW_GENERATOR="bench.bench_wiki")
    subprocess.run([str(ROOT / "scripts/services/mediawiki.sh"), action], env=env, check=True, cwd=ROOT,
                   stdout=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_wiki", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seed", type=int, default=wikigen.DEFAULT_SEED)
    parser.add_argument("--version", action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        print(f"bench{VERSION}-{wikigen.GENERATOR_VERSION}")
        return 0
    if args.out is None:
        parser.error("--out is required")
    wiki = wikigen.generate(args.seed, plan=PLAN)
    wikigen.write(wiki, args.out)
    revisions = sum(len(p.revisions) for p in wiki.pages)
    print(f"bench wiki: {len(wiki.pages)} pages, {revisions} revisions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
