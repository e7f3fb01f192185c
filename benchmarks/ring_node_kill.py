#!/usr/bin/env python3
"""A Cassandra ring node killed: does it keep every write it acknowledged? Per commit-log mode.

Runs on the three-node ring of ``scripts/servers/cassandra-ring`` and measures the server
setting under chatmem's ring tests, not chatmem: whether a node SIGKILLed while it
acknowledges writes still holds all of them after its restart. One probe:

1. n3 killed, so a ``QUORUM`` write is acknowledged by n1 and n2 alone;
2. one thread writes rows at ``QUORUM`` through n2 as coordinator for a few seconds, and n2
   is killed while it writes;
3. n1 is killed too, n2 started alone, and its own copy read at ``ONE`` (no other node can
   answer): every write n2 acknowledged should be there;
4. n1 and n3 started again.

With ``commitlog_sync: periodic`` a write is acknowledged before its commit-log section is
marked, and replay stops at the last marker, so n2 forgets its last ~100 ms: in the ring fault
test those writes are then held by n1 alone, and a ``QUORUM`` read of n2 and n3 misses them.
With ``batch`` (the ring's setting) it keeps every one. Each mode's probes run on nodes
restarted with it (``CHATMEM_RING_COMMITLOG``); the ring is left in ``batch``. ``--appends N``
first times N sequential one-message chatmem appends on the ring in each mode (what ``batch``
costs; median and 95th percentile, milliseconds).

Usage:
    scripts/servers/up.sh cassandra-ring
    python benchmarks/ring_node_kill.py --probes 5 --json benchmarks/results/ring-node-kill.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import WhiteListRoundRobinPolicy

from benchmarks.failover_cassandra import append_cost
from tests.support.cassandra_ring import NODES, RingTopology, finish, ring_keyspace
from tests.support.servers import DEFAULT_URLS

TABLE = "kill_probe"
MODES = ("periodic", "batch")


class Node:
    """A driver session whose every request goes to one node as coordinator."""

    def __init__(self, address: str, keyspace: str, level: int) -> None:
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([address]),
            consistency_level=level,
            request_timeout=10,
        )
        self.cluster = Cluster([address], execution_profiles={EXEC_PROFILE_DEFAULT: profile})
        self.session: Session = self.cluster.connect(keyspace)

    def close(self) -> None:
        self.cluster.shutdown()


def restart_in(topology: RingTopology, mode: str) -> None:
    """Stop every node and start it again with ``mode`` (the config is written on start)."""
    for node in NODES:
        topology.stop(node)
    for process in [topology.start(node, commitlog=mode) for node in NODES]:
        finish(process)


def probe(topology: RingTopology, keyspace: str, mode: str, write_for: float) -> dict[str, Any]:
    """One kill of a node while it acknowledges writes; what it kept (see the module doc)."""
    address = topology.addresses
    writer = Node(address["n2"], keyspace, ConsistencyLevel.QUORUM)
    insert = writer.session.prepare(f"INSERT INTO {TABLE} (k, c) VALUES (?, ?)")
    key = uuid.uuid4().hex[:12]
    acknowledged: list[tuple[int, float]] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            try:
                writer.session.execute(insert, (key, n))
            except Exception:  # n2 is gone: the probe's end
                return
            acknowledged.append((n, time.monotonic()))
            n += 1

    topology.kill("n3")
    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(write_for * (1 + random.random()))
    killed = topology.kill("n2")
    stop.set()
    thread.join()
    writer.close()
    topology.kill("n1")
    finish(topology.start("n2", commitlog=mode))
    reader = Node(address["n2"], keyspace, ConsistencyLevel.ONE)
    try:
        rows = reader.session.execute(f"SELECT c FROM {TABLE} WHERE k = %s", (key,))
        kept = {row.c for row in rows}
    finally:
        reader.close()
    for process in [topology.start(node, commitlog=mode) for node in ("n1", "n3")]:
        finish(process)
    forgotten = [at for n, at in acknowledged if n not in kept]
    return {
        "mode": mode,
        "acknowledged": len(acknowledged),
        "forgotten": len(forgotten),
        # When the forgotten writes were acknowledged, against the moment the kill was sent
        # (the process dies a little later: positive values are writes acknowledged after it).
        "forgotten_ms_after_kill_sent": [round((at - killed) * 1000, 1) for at in forgotten],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("CHATMEM_TEST_CASSANDRA_RING_URL", DEFAULT_URLS["cassandra_ring"]),
    )
    parser.add_argument("--probes", type=int, default=5, help="kills per commit-log mode")
    parser.add_argument("--write-for", type=float, default=3.0, help="seconds before the kill")
    parser.add_argument("--appends", type=int, default=0, help="appends timed per mode")
    parser.add_argument("--json", type=Path, default=None, help="write every probe here")
    args = parser.parse_args()
    topology = RingTopology(args.url)
    topology.ensure_up()
    keyspace = ring_keyspace(args.url)
    setup = Node(topology.addresses["n1"], keyspace, ConsistencyLevel.QUORUM)
    setup.session.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (k text, c int, PRIMARY KEY (k, c))")
    setup.cluster.control_connection.wait_for_schema_agreement()
    setup.close()
    results: list[dict[str, Any]] = []
    costs: dict[str, dict[str, float]] = {}

    def save() -> None:
        if args.json is not None:
            args.json.write_text(json.dumps({"append_cost": costs, "probes": results}, indent=1))

    began = time.monotonic()
    current = "batch"
    try:
        for mode in MODES:
            restart_in(topology, mode)
            current = mode
            if args.appends:
                costs[mode] = append_cost(args.url, args.appends)
                print(f"{mode}: append cost {costs[mode]}", flush=True)
                save()
            for n in range(args.probes):
                result = probe(topology, keyspace, mode, args.write_for)
                print(f"{mode} [{n + 1}/{args.probes}]: {result}", flush=True)
                results.append(result)
                save()
    finally:
        if current != "batch":  # leave the ring as the tests expect it
            restart_in(topology, "batch")
    for mode in MODES:
        mine = [r for r in results if r["mode"] == mode]
        lost = [r["forgotten"] for r in mine]
        print(
            f"{mode}: {len(mine)} kills, {sum(r['acknowledged'] for r in mine)} writes"
            f" acknowledged by the killed node, {sum(lost)} forgotten after its restart"
            f" (per kill: {lost})"
        )
    print(f"{time.monotonic() - began:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
