#!/usr/bin/env python3
"""Run benchmarks/turns.py against every backend and write one Markdown table.

Backends are read from the same environment variables as the tests
(``CHATMEM_TEST_<NAME>_URL``, defaults as in tests/support/servers.py). Results go to
``benchmarks/results/<backend>-<flavor>.json`` and ``benchmarks/results/turns.md``.

Usage:
    python benchmarks/turns_all.py                      # every backend, sync and async
    python benchmarks/turns_all.py --only redis,postgresql --turns 300
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DEFAULTS = {
    "memory": "memory://",
    "sqlite": "sqlite:///{tmp}/bench.db",
    "postgresql": "postgresql+psycopg://test:test@127.0.0.1:54329/testdb?initialize_schema=always",
    "mariadb": "mysql+pymysql://test:test@127.0.0.1:33061/testdb?charset=utf8mb4&initialize_schema=always",
    "redis": "redis://127.0.0.1:63799/0",
    "mongodb": "mongodb://127.0.0.1:27027/chatmem_bench",
    "cassandra": "cassandra://127.0.0.1:9042/chatmem_bench?create_keyspace=true",
    "neo4j": "bolt://127.0.0.1:7687",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated backends (default: all)")
    parser.add_argument("--lengths", default="10,1000,100000")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--flavors", default="sync,async")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(DEFAULTS)
    RESULTS.mkdir(exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            url = os.environ.get(f"CHATMEM_TEST_{name.upper()}_URL", DEFAULTS[name])
            url = url.format(tmp=tmp)
            for flavor in args.flavors.split(","):
                out = RESULTS / f"{name}-{flavor}.json"
                command = [
                    sys.executable, str(HERE / "turns.py"), "--url", url,
                    "--lengths", args.lengths, "--turns", str(args.turns), "--json", str(out),
                ]  # fmt: skip
                if flavor == "async":
                    command.append("--async")
                print(f"== {name} ({flavor})", flush=True)
                done = subprocess.run(command, check=False)
                if done.returncode != 0:
                    print(f"{name} ({flavor}) failed with exit {done.returncode}")
    # The table covers every result on disk, so backends can be measured in separate runs.
    for name in DEFAULTS:
        for flavor in ("sync", "async"):
            out = RESULTS / f"{name}-{flavor}.json"
            if not out.exists():
                continue
            result = json.loads(out.read_text())["lengths"]
            cells = [f"{int(n):,}: {row['median_ms']:.2f}" for n, row in result.items()]
            ratio = list(result.values())[-1]["ratio_to_smallest"]
            rows.append(f"| {name} | {flavor} | " + " / ".join(cells) + f" | {ratio:.2f} |")
    table = [
        "| backend | twin | median ms per turn, by stored messages | ratio largest/10 |",
        "| --- | --- | --- | ---: |",
        *rows,
    ]
    (RESULTS / "turns.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
