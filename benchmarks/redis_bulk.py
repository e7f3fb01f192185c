#!/usr/bin/env python3
"""Bulk appends into the Redis repository: the destination side of ``chatmem migrate``/``import``.

``--messages`` messages (default 50,000) in ``--conversations`` conversations (default
1,000), user/assistant alternating, 200 characters each, are built in memory first. Then,
in one run, into fresh conversation ids each time:

- ``append``: ``repository.append(conversation_id, page)`` for every conversation, pages of
  ``--page`` messages (what ``migrate`` and ``import`` call): messages per second;
- ``no-op re-run``: the same appends again; every message is skipped by id (idempotent);
- ``append_many``: the repository's ``append_many`` with ``--group`` conversations per call
  (one pipeline, one script per conversation), when the repository has it;
- ``migrate``: ``chatmem_cli``'s ``migrate(source, destination, verify=True)`` from a
  ``memory://`` source, end to end (source reads and verification included).

Every stored conversation is checked (message count and order) and deleted afterwards.
Each phase prints its wall time and the CPU time it cost (this process, and the Redis
server's own ``INFO cpu`` on a single server): on a busy machine the wall time follows the
load, the CPU time per message much less. The load average is printed too. Usage:

    python benchmarks/redis_bulk.py --url redis://127.0.0.1:63799/0
    python benchmarks/redis_bulk.py --url redis+cluster://127.0.0.1:7101,127.0.0.1:7102
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from chatmem import AssistantMessage, Message, UserMessage
from chatmem_repositories import create_repository, redact_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]


def build(conversations: int, per_conversation: int) -> list[list[Message]]:
    return [
        [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"{c:05d} {i:06d} {TEXT}"[:200])
            for i in range(per_conversation)
        ]
        for c in range(conversations)
    ]


def server_cpu(url: str) -> Callable[[], float]:
    """CPU seconds the Redis server has used (``INFO cpu``); 0 on a cluster (several servers)."""
    if "+cluster" in url:
        return lambda: 0.0
    client = redis.Redis.from_url(url)

    def used() -> float:
        info = client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    return used


def timed(
    label: str, messages: int, run: Callable[[], object], server: Callable[[], float]
) -> None:
    # Wall time depends on the machine's load; CPU time (this process plus the Redis server)
    # much less: both are printed.
    began, cpu, served = time.perf_counter(), time.process_time(), server()
    run()
    took = time.perf_counter() - began
    cpu, served = time.process_time() - cpu, server() - served
    rate = f"{messages / took:8.0f} msg/s" if messages else " " * 14
    per = f"  {(cpu + served) / messages * 1e6:5.1f} µs CPU/msg" if messages else ""
    print(
        f"  {label:14s} {took:6.2f} s {rate}  "
        f"client CPU {cpu:5.2f} s, server CPU {served:5.2f} s{per}",
        flush=True,
    )


class Run:
    """One destination, the histories to write, and every conversation id used."""

    def __init__(self, url: str, histories: list[list[Message]], page: int) -> None:
        self.repository = create_repository(url, key_prefix=f"bulk{uuid.uuid4().hex[:8]}")
        self.histories = histories
        self.page = page
        self.used: list[str] = []
        self.server = server_cpu(url)

    def ids(self, run: str) -> list[str]:
        cids = [f"bulk-{run}-{c}" for c in range(len(self.histories))]
        self.used.extend(cids)
        return cids

    def check(self, cids: list[str]) -> None:
        for cid, history in zip(cids, self.histories, strict=True):
            stored = self.repository.find_by_conversation_id(cid)
            if [m.id for m in stored] != [m.id for m in history]:
                raise SystemExit(f"{cid}: {len(stored)} stored, order or ids differ")

    def append_all(self, cids: list[str]) -> None:
        for cid, history in zip(cids, self.histories, strict=True):
            for start in range(0, len(history), self.page):
                self.repository.append(cid, history[start : start + self.page])

    def append_many(self, cids: list[str], group: int) -> None:
        pairs = list(zip(cids, self.histories, strict=True))
        for start in range(0, len(pairs), group):
            # The Redis repository's own method, beyond the protocol create_repository
            # returns; main runs this phase only when the repository has it.
            cast(Any, self.repository).append_many(pairs[start : start + group])

    def migrate(self, total: int) -> None:
        from chatmem_cli._transfer_engine import migrate  # only this phase needs the CLI

        source = create_repository("memory://")
        migrated = [f"bulk-migrate-{c}" for c in range(len(self.histories))]
        for cid, history in zip(migrated, self.histories, strict=True):
            source.append(cid, history)
        self.used.extend(migrated)

        def run_migrate() -> None:
            report = migrate(source, self.repository, verify=True)
            if report.mismatches:
                raise SystemExit(f"migrate: {report.mismatches[:3]}")

        timed("migrate", total, run_migrate, self.server)
        self.check(migrated)
        timed("no-op migrate", 0, run_migrate, self.server)
        source.close()

    def close(self) -> None:
        for cid in self.used:
            self.repository.delete_by_conversation_id(cid)
        self.repository.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="redis://127.0.0.1:63799/0")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--page", type=int, default=500, help="messages per append")
    parser.add_argument("--group", type=int, default=100, help="conversations per append_many")
    parser.add_argument("--skip-migrate", action="store_true")
    args = parser.parse_args()
    per = args.messages // args.conversations
    total = per * args.conversations
    run = Run(args.url, build(args.conversations, per), args.page)
    try:
        load = os.getloadavg()
        print(
            f"{redact_url(args.url)}: {total} messages in {args.conversations} conversations, "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        )
        plain = run.ids("append")
        timed("append", total, lambda: run.append_all(plain), run.server)
        run.check(plain)
        timed("no-op re-run", 0, lambda: run.append_all(plain), run.server)
        run.check(plain)
        if hasattr(run.repository, "append_many"):
            grouped = run.ids("many")
            timed("append_many", total, lambda: run.append_many(grouped, args.group), run.server)
            run.check(grouped)
            timed("no-op re-run", 0, lambda: run.append_many(grouped, args.group), run.server)
            run.check(grouped)
        if not args.skip_migrate:
            run.migrate(total)
        load = os.getloadavg()
        print(f"  load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
