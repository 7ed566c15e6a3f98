"""`make bench`: run every benchmark, one process each, and write bench/RESULTS.md.

Each script prints its own markdown section (table, goal verdicts, notes); this collects them in
order, adds when and where they ran, and lists every goal line at the top. A script that fails gets
its error in the file and the run exits non-zero after the others have run.

    .venv/bin/python -m bench.run [--only movement,writer] [--out bench/RESULTS.md]
"""
import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone

from bench.common import ROOT

SCRIPTS = ("requests_per_revision", "change_detection", "ingest", "writer", "hub_scale", "movement",
           "recovery", "quota", "content_storage", "ring_harvest", "upstream_budget", "dump_ingest",
           "feed_freshness", "feed_latency", "splice")


def machine() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit.stdout.strip() or '?'}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}, load average at start {load}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument("--out", default=str(ROOT / "bench/RESULTS.md"))
    args = parser.parse_args()
    names = args.only.split(",") if args.only else SCRIPTS
    header = machine()
    sections, failed = [], []
    for name in names:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        took = time.monotonic() - started
        if proc.returncode != 0:
            failed.append(name)
            tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
            sections.append(f"## {name}: FAILED (exit {proc.returncode})\n\n```\n{tail}\n```\n")
            print(f"bench: {name} failed after {took:.0f} s\n{tail}", file=sys.stderr)
            continue
        sections.append(proc.stdout.strip() + f"\n\n*(`python -m bench.{name}`, {took:.0f} s)*\n")
        print(f"bench: {name} done in {took:.0f} s", file=sys.stderr)

    goals = [line.strip() for s in sections for line in s.splitlines()
             if ("**met**" in line or "**missed**" in line) and not line.startswith("|")]
    text = ("# Benchmark results\n\n"
            f"Produced by `make bench` ({header}). The machine is shared and noisy: absolute times are "
            "indications; each table's ratios were measured side by side in the same run.\n\n"
            "## Goals\n\n" + "\n".join(f"- {g.lstrip('- ')}" for g in goals) + "\n\n" + "\n".join(sections))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"bench: wrote {args.out}" + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
