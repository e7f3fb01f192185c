"""Measure the peers side by side and print a Markdown table; every (peer, store, n) is recorded.

Usage:

    python -m benchmarks.peers --stores postgresql,redis --sizes 10,1000,10000 --turns 50

Stores are reached at ``CHATMEM_TEST_<STORE>_URL`` (the test servers' defaults otherwise) or
``--url store=URL``; SQLite files go to a temporary directory. Records are appended to
``benchmarks/results/peers.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._results import append_record
from benchmarks.peers import available_peers, measure_peers, missing_peers

# The test servers' URLs (tests/support/servers.py), used when no variable or --url names one.
DEFAULT_URLS = {
    "postgresql": "postgresql+psycopg://test:test@127.0.0.1:25432/testdb",
    "mariadb": "mysql+pymysql://test:test@127.0.0.1:23306/testdb?charset=utf8mb4",
    "redis": "redis://127.0.0.1:63799/0",
    "mongodb": "mongodb://127.0.0.1:27027/chatmem_test",
    "cassandra": "cassandra://127.0.0.1:9042/chatmem_test",
    "neo4j": "bolt://127.0.0.1:7687",
}
STORES = ("sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra", "neo4j")


def table(rows: Sequence[dict[str, Any]], sizes: Sequence[int]) -> str:
    """Median ms per turn of each (store, peer) by size, with its ratio to the fastest peer."""
    medians = {(r["store"], r["peer"], r["n"]): statistics.median(r["samples_ms"]) for r in rows}
    fastest = {
        (store, n): min(v for (s, _, m), v in medians.items() if (s, m) == (store, n))
        for store, _, n in medians
    }
    head = " | ".join(f"n={n:,}" for n in sizes)
    lines = [f"| store | peer | {head} |", "| --- | --- |" + " ---: |" * len(sizes)]
    pairs = dict.fromkeys((s, p) for s, p, _ in medians)
    for store, peer in sorted(pairs, key=lambda pair: STORES.index(pair[0])):
        cells = " | ".join(
            f"{medians[store, peer, n]:.2f} ({medians[store, peer, n] / fastest[store, n]:.1f}x)"
            for n in sizes
        )
        lines.append(f"| {store} | {peer} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__)
    parser.add_argument("--stores", default="postgresql,redis,sqlite")
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--peers", help="only peers whose name contains one of these (comma list)")
    parser.add_argument("--skip", help="leave out peers whose name contains one of these")
    parser.add_argument(
        "--url", action="append", default=[], metavar="STORE=URL", help="a store's URL"
    )
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    unknown = sorted(set(stores) - set(STORES))
    if unknown:
        parser.error(f"unknown stores {unknown}; known: {', '.join(STORES)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    given = dict(item.split("=", 1) for item in args.url)
    peers = available_peers(stores)
    if args.peers:
        wanted = args.peers.split(",")
        peers = [p for p in peers if any(w in p.name for w in wanted)]
    if args.skip:
        unwanted = args.skip.split(",")
        peers = [p for p in peers if not any(w in p.name for w in unwanted)]
    for module, reason in missing_peers().items():
        print(f"absent: {module}: {reason}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:

        def url_of(store: str) -> str:
            if store == "sqlite":
                return given.get(store, f"sqlite:///{Path(directory) / 'peers.db'}")
            variable = f"CHATMEM_TEST_{store.upper()}_URL"
            return given.get(store) or os.environ.get(variable, DEFAULT_URLS[store])

        rows = asyncio.run(measure_peers(peers, url_of, sizes, args.turns))
    for row in rows:
        params = {"peer": row["peer"], "store": row["store"], "n": row["n"]}
        append_record("peers", {**params, "turns": args.turns}, row["samples_ms"])
    load = "/".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"Median ms per turn ({args.turns} turns each; ratio to the fastest peer on the store")
    print(f"at that n); load average after the run {load}.\n")
    print(table(rows, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
