#!/usr/bin/env python3
"""Cassandra ring failures, measured: acknowledged appends lost and duplicated, errors, recovery.

Runs on the three-node ring of ``scripts/servers/cassandra-ring`` (start it with its
``start.sh`` or ``scripts/servers/up.sh cassandra-ring``; the URL names the three nodes and
creates the keyspace with replication factor 3; reads and writes at ``LOCAL_QUORUM``, Paxos
at ``LOCAL_SERIAL``, the defaults). Each run is one fault sequence under 8 writer threads
appending to one conversation through one repository, a failed append sent again, the same
message, until it is acknowledged (``tests/support/cassandra_ring.py``):

1. one node down: n3 killed (SIGKILL, as in a crash);
2. two nodes down: n2 killed too, a couple of seconds of failing writes;
3. both started again side by side (on their data; hinted handoff and read repair bring them
   up to date); the run ends once every writer has appended again.

Per setting (one node down, two nodes down, restart) it prints: runs, appends acknowledged,
errors the writers' calls raised by type (and the driver errors behind them); then over the
whole run acknowledged appends lost, messages stored twice, whether the lightweight-transaction
counter gave every stored message its own position, and the time until writes succeed again
after the restart (min / median / max). Before the faults, it measures the append cost on the
ring and on the single test node side by side (sequential appends of one message, median and
95th percentile, milliseconds). ``--checker`` runs the history checker while one node is down
(it costs ~20 s a run).

Usage:
    scripts/servers/up.sh cassandra-ring
    nice -n 10 python benchmarks/failover_cassandra.py --runs 10 \
        --json benchmarks/results/failover-cassandra.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import UserMessage
from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from tests.support.cassandra_ring import RingRun, RingTopology, run_ring_faults
from tests.support.postgres_standby import spread
from tests.support.servers import DEFAULT_URLS

SETTINGS = ("one node down", "two nodes down", "one node back", "both back")


def append_cost(url: str, appends: int) -> dict[str, float]:
    """Milliseconds per sequential one-message append (median, p95), after a warm-up."""
    repository = CassandraChatMemoryRepository.from_url(
        url, table_prefix="chatmem_ring_", create_keyspace=True
    )
    conversation_id = f"cost-{uuid.uuid4().hex[:12]}"
    try:
        for n in range(20):  # connect, prepare, warm the JITs
            repository.append(conversation_id, [UserMessage(f"warm {n}")])
        times = []
        for n in range(appends):
            began = time.perf_counter()
            repository.append(conversation_id, [UserMessage(f"message {n}")])
            times.append((time.perf_counter() - began) * 1000)
        repository.delete_by_conversation_id(conversation_id)
    finally:
        repository.close()
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(len(times) * 0.95)], 2),
    }


def record(run: RingRun) -> dict[str, Any]:
    checker = run.checker
    return {
        "acknowledged": run.acknowledged,
        "lost": run.lost,
        "duplicated": run.duplicated,
        "stored": run.stored,
        "positions_consistent": run.positions_consistent,
        "first_failure_s": round(run.first_failure, 3),
        "seen_down_s": round(run.seen_down, 3),
        "restart_s": round(run.restart, 3),
        "quorum_recovered_s": round(run.quorum_recovered, 3),
        "all_recovered_s": round(run.recovered, 3),
        "phases": {
            phase.name: {
                "acknowledged": phase.acknowledged,
                "errors": dict(phase.errors),
                "causes": dict(phase.causes),
                "samples": phase.samples,
            }
            for phase in run.phases
        },
        "checker_errors": dict(checker.errors) if checker else None,
        "anomalies": (
            [{"kind": a.kind, "explanation": a.explanation} for a in checker.anomalies]
            if checker
            else None
        ),
    }


def report(runs: list[dict[str, Any]]) -> None:
    print(f"\n{len(runs)} runs (each: one node down, then two, then both restarted)")
    for name in SETTINGS:
        errors: Counter[str] = Counter()
        causes: Counter[str] = Counter()
        for run in runs:
            errors.update(run["phases"][name]["errors"])
            causes.update(run["phases"][name]["causes"])
        acked = sum(run["phases"][name]["acknowledged"] for run in runs)
        print(f"  {name:15} acknowledged {acked:6,}; errors: {_counts(errors)} ({_counts(causes)})")
    print(f"  appends acknowledged  {sum(r['acknowledged'] for r in runs):,}")
    print(f"  acknowledged lost     {sum(len(r['lost']) for r in runs)}")
    print(f"  duplicated            {sum(r['duplicated'] for r in runs)}")
    consistent = sum(r["positions_consistent"] for r in runs)
    print(f"  positions consistent  {consistent} of {len(runs)} runs")
    print(f"  node marked down by the others after {_spread(runs, 'seen_down_s')}")
    print(f"  first failure after the second kill {spread([r['first_failure_s'] for r in runs])}")
    print(f"  restart of two nodes  {spread([r['restart_s'] for r in runs])}")
    print(f"  writes again after the first node answered {_spread(runs, 'quorum_recovered_s')}")
    print(f"  every writer again after both answered     {_spread(runs, 'all_recovered_s')}")


def _spread(runs: list[dict[str, Any]], key: str) -> str:
    return spread([r[key] for r in runs])


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counter.most_common()) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("CHATMEM_TEST_CASSANDRA_RING_URL", DEFAULT_URLS["cassandra_ring"]),
    )
    parser.add_argument(
        "--single-url",
        default=os.environ.get("CHATMEM_TEST_CASSANDRA_URL", DEFAULT_URLS["cassandra"]),
    )
    parser.add_argument("--runs", type=int, default=10, help="fault sequences")
    parser.add_argument("--appends", type=int, default=300, help="appends timed per server")
    parser.add_argument("--checker", action="store_true", help="run the history checker")
    parser.add_argument("--seed", type=int, default=None, help="checker seed of the first run")
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args()
    topology = RingTopology(args.url)
    topology.ensure_up()
    began = time.monotonic()
    results: dict[str, Any] = {"append_cost": {}, "runs": []}
    for name, url in (("ring", args.url), ("single node", args.single_url)):
        results["append_cost"][name] = cost = append_cost(url, args.appends)
        print(f"append cost, {name}: median {cost['median_ms']} ms, p95 {cost['p95_ms']} ms")
    for n in range(args.runs):
        seed = None if args.seed is None else args.seed + n
        run = run_ring_faults(topology, checker_seed=seed, with_checker=args.checker)
        print(f"[{n + 1}/{args.runs}] {run.summary()}", flush=True)
        results["runs"].append(record(run))
        if args.json is not None:
            args.json.write_text(json.dumps(results, indent=1))
    report(results["runs"])
    print(f"\n{time.monotonic() - began:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
