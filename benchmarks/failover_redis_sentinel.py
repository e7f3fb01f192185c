#!/usr/bin/env python3
"""Redis Sentinel failover, measured: acknowledged appends lost and duplicated, time to recover.

Runs on the topology of ``scripts/servers/redis-sentinel`` (a master, two replicas, three
sentinels; quorum 2, down-after-milliseconds 2000; start it with its ``start.sh``). Each run
is one failover under 8 concurrent writers appending to one conversation through one
repository made from the ``redis+sentinel://`` URL (threads and a sync repository on even
runs, asyncio tasks and an async repository on odd ones), with the history checker beside
them; a writer whose call fails sends the same message again until it is acknowledged.
Afterwards the conversation is read back from the new master and a killed node is started
again as its replica (``rejoin.sh``). The settings take turns, so the machine's noise hits
them alike:

- ``kill``: the master SIGKILLed; the sentinels promote a replica after
  down-after-milliseconds and an election;
- ``kill-wait``: the same, with ``wait_replicas=1&wait_timeout_ms=1000`` (every write waits
  for one replica, Redis ``WAIT``);
- ``planned``: ``SENTINEL FAILOVER`` (the old master stays up and is demoted).

Per setting it prints: runs, appends acknowledged, acknowledged appends lost, messages stored
twice, the time from the failover's start until the first append again and until every
writer's (min / median / max), the errors the writers' failed calls raised, and the history
checker's anomalies. Then, on the healthy topology, what one append costs (sequential, one
sync repository) with and without ``wait_replicas=1``.

Usage:
    CHATMEM_SERVERS_RUN=/tmp/chatmem-servers scripts/servers/redis-sentinel/start.sh
    python benchmarks/failover_redis_sentinel.py --runs 10 --seed 1000 \\
        --json benchmarks/results/failover-redis-sentinel.json
"""

from __future__ import annotations

import argparse
import asyncio
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
from chatmem_repositories.redis import RedisChatMemoryRepository
from tests.support.postgres_standby import spread
from tests.support.redis_sentinel import (
    SentinelRun,
    SentinelTopology,
    async_run_failover,
    run_failover,
)
from tests.support.servers import DEFAULT_URLS

WAIT = {"wait_replicas": 1, "wait_timeout_ms": 1000}
SETTINGS: dict[str, tuple[bool, dict[str, Any]]] = {
    "kill": (False, {}),
    "kill-wait": (False, WAIT),
    "planned": (True, {}),
}


def one_run(
    topology: SentinelTopology, url: str, setting: str, n: int, seed: int | None
) -> SentinelRun:
    planned, options = SETTINGS[setting]
    checker_seed = None if seed is None else seed + n
    if n % 2 == 0:
        return run_failover(
            topology, url, setting, planned=planned, options=options, checker_seed=checker_seed
        )
    return asyncio.run(
        async_run_failover(
            topology, url, setting, planned=planned, options=options, checker_seed=checker_seed
        )
    )


def record(run: SentinelRun, n: int) -> dict[str, Any]:
    checker = run.checker
    return {
        "setting": run.mode,
        "writers": "threads" if n % 2 == 0 else "tasks",
        "acknowledged": run.acknowledged,
        "lost": run.lost,
        "lost_acknowledged_from_s": round(-run.oldest_lost, 3),
        "lost_acknowledged_until_s": round(run.newest_lost, 3),
        "duplicated": run.duplicated,
        "first_recovered_s": round(run.first_recovered, 3),
        "all_recovered_s": round(run.all_recovered, 3),
        "promoted_s": round(run.failover.promoted_at - run.failover.killed_at, 3),
        "errors": dict(run.errors),
        "checker_seed": checker.report.history.seed if checker else None,
        "checker_operations": checker.report.operations if checker else None,
        "checker_during_failover": checker.during if checker else None,
        "checker_errors": dict(checker.errors) if checker else None,
        "anomalies": [
            {"kind": a.kind, "explanation": a.explanation}
            for a in (checker.anomalies if checker else [])
        ],
    }


def report(setting: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    errors: Counter[str] = Counter()
    anomalies: Counter[str] = Counter()
    for run in runs:
        errors.update(run["errors"])
        anomalies.update(a["kind"] for a in run["anomalies"])
    lost = [len(r["lost"]) for r in runs]
    summary = {
        "runs": len(runs),
        "acknowledged": sum(r["acknowledged"] for r in runs),
        "lost": sum(lost),
        "lost_per_run": lost,
        "duplicated": sum(r["duplicated"] for r in runs),
        "first_append_again_s": spread([r["first_recovered_s"] for r in runs]),
        "every_writer_again_s": spread([r["all_recovered_s"] for r in runs]),
        "sentinels_agree_s": spread([r["promoted_s"] for r in runs]),
        "errors": dict(errors.most_common()),
        "anomalies": dict(anomalies.most_common()),
    }
    print(f"\n{setting}: {len(runs)} failovers")
    for name, value in summary.items():
        print(f"  {name:22} {value}")
    return summary


def append_cost(url: str, appends: int) -> dict[str, Any]:
    """Seconds per sequential append (one message), without and with ``wait_replicas=1``."""
    costs: dict[str, Any] = {}
    for label, options in (("no WAIT", {}), ("wait_replicas=1", WAIT)):
        with RedisChatMemoryRepository.from_url(
            url, key_prefix="chatmem-sentinel-cost", **options
        ) as repository:
            conversation = f"cost-{uuid.uuid4().hex[:8]}"
            for n in range(50):  # warm up: connection, script cache
                repository.append(conversation, [UserMessage(f"warm {n}")])
            times = []
            for n in range(appends):
                began = time.perf_counter()
                repository.append(conversation, [UserMessage(f"message {n}")])
                times.append(time.perf_counter() - began)
            repository.delete_by_conversation_id(conversation)
        times.sort()
        costs[label] = {
            "appends": appends,
            "median_us": round(statistics.median(times) * 1e6),
            "p99_us": round(times[int(len(times) * 0.99)] * 1e6),
            "mean_us": round(statistics.fmean(times) * 1e6),
        }
        print(f"  append, {label:16} {costs[label]}")
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("CHATMEM_TEST_REDIS_SENTINEL_URL", DEFAULT_URLS["redis_sentinel"]),
    )
    parser.add_argument("--runs", type=int, default=10, help="failovers per setting")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--appends", type=int, default=3000, help="appends timed per cost row")
    parser.add_argument("--seed", type=int, default=None, help="checker seed of the first run")
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args()
    settings = args.settings.split(",")
    topology = SentinelTopology(args.url)
    results: dict[str, Any] = {"runs": {s: [] for s in settings}}
    began = time.monotonic()
    for n in range(args.runs):
        for setting in settings:
            run = one_run(topology, args.url, setting, n, args.seed)
            print(f"[{setting} {n + 1}/{args.runs}] {run.summary()}", flush=True)
            results["runs"][setting].append(record(run, n))
            if args.json is not None:
                args.json.write_text(json.dumps(results, indent=1))
    results["summary"] = {s: report(s, results["runs"][s]) for s in settings}
    topology.rejoin()
    print("\nappend cost on the healthy topology (one sync repository, sequential):")
    results["append_cost"] = append_cost(args.url, args.appends)
    seconds = time.monotonic() - began
    results["seconds"] = round(seconds)
    results["load_average"] = round(os.getloadavg()[0], 1)
    print(f"\n{seconds:.0f} s, load average {os.getloadavg()[0]:.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
