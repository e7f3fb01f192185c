#!/usr/bin/env python3
"""PostgreSQL failover, measured: acknowledged appends lost and duplicated, time to recover.

Runs on the primary/standby topology of ``scripts/servers/postgres-standby`` (start it with
its ``start.sh``; the URL names both nodes with ``target_session_attrs=read-write``). Each
run is one failover under 8 concurrent writers appending to one conversation through one
repository (threads and a sync repository on even runs, asyncio tasks and an async
repository on odd ones), with the history checker running beside them: the primary's
processes are killed (SIGQUIT, an immediate shutdown, as in a crash), the standby is promoted
once a writer has seen the primary fail, and a writer whose call fails sends the same message
again until it is acknowledged. Afterwards the conversation is read back from the promoted
standby and the old primary is cloned again as its standby (``rejoin.sh``), ready for the
next run. Runs alternate between synchronous and asynchronous replication, so the machine's
noise hits both alike.

Per setting it prints: runs, appends acknowledged, acknowledged appends lost, messages
stored twice, the time from the kill until the first append again and until every writer's,
(min / median / max), the errors the writers' failed calls raised, and the history checker's
anomalies. The time to recover starts at the kill and includes the promotion, but no failure
detection: a failover manager (Patroni, a managed service) first takes its own time to decide
that the primary is gone.

Usage:
    CHATMEM_SERVERS_RUN=/tmp/chatmem-servers scripts/servers/postgres-standby/start.sh
    python benchmarks/failover_postgres.py --runs 10
    python benchmarks/failover_postgres.py --runs 10 --modes async --seed 7 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.postgres_standby import (
    FailoverRun,
    StandbyTopology,
    async_run_failover,
    run_failover,
    spread,
)
from tests.support.servers import DEFAULT_URLS


def one_run(
    topology: StandbyTopology, url: str, mode: str, n: int, seed: int | None
) -> FailoverRun:
    checker_seed = None if seed is None else seed + n
    if n % 2 == 0:
        return run_failover(topology, url, mode, checker_seed=checker_seed)
    return asyncio.run(async_run_failover(topology, url, mode, checker_seed=checker_seed))


def record(run: FailoverRun, n: int) -> dict[str, Any]:
    checker = run.checker
    return {
        "mode": run.mode,
        "writers": "threads" if n % 2 == 0 else "tasks",
        "acknowledged": run.acknowledged,
        "lost": run.lost,
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


def report(mode: str, runs: list[dict[str, Any]]) -> None:
    errors: Counter[str] = Counter()
    anomalies: Counter[str] = Counter()
    for run in runs:
        errors.update(run["errors"])
        anomalies.update(a["kind"] for a in run["anomalies"])
    lost_runs = sum(1 for run in runs if run["lost"])
    print(f"\n{mode} replication: {len(runs)} failovers")
    print(f"  appends acknowledged  {sum(r['acknowledged'] for r in runs):,}")
    print(
        f"  acknowledged lost     {sum(len(r['lost']) for r in runs)} "
        f"(in {lost_runs} of {len(runs)} runs; per run: {[len(r['lost']) for r in runs]})"
    )
    print(f"  duplicated            {sum(r['duplicated'] for r in runs)}")
    print(f"  first append again    {spread([r['first_recovered_s'] for r in runs])}")
    print(f"  every writer again    {spread([r['all_recovered_s'] for r in runs])}")
    print(f"  standby promoted      {spread([r['promoted_s'] for r in runs])}")
    print(
        "  writers' errors       "
        + (", ".join(f"{n} {e}" for e, n in errors.most_common()) or "none")
    )
    print(
        "  checker anomalies     "
        + (", ".join(f"{n} {k}" for k, n in anomalies.most_common()) or "none")
        + f" (seeds {[r['checker_seed'] for r in runs]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get(
            "CHATMEM_TEST_POSTGRESQL_STANDBY_URL", DEFAULT_URLS["postgresql_standby"]
        ),
    )
    parser.add_argument("--runs", type=int, default=10, help="failovers per replication mode")
    parser.add_argument("--modes", default="sync,async")
    parser.add_argument("--seed", type=int, default=None, help="checker seed of the first run")
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args()
    modes = args.modes.split(",")
    topology = StandbyTopology(args.url)
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    began = time.monotonic()
    for n in range(args.runs):
        for mode in modes:
            run = one_run(topology, args.url, mode, n, args.seed)
            print(f"[{mode} {n + 1}/{args.runs}] {run.summary()}", flush=True)
            results[mode].append(record(run, n))
            if args.json is not None:
                args.json.write_text(json.dumps(results, indent=1))
    for mode in modes:
        report(mode, results[mode])
    print(f"\n{time.monotonic() - began:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
