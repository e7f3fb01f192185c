#!/usr/bin/env python3
"""Bulk appends into an SQL repository: ``chatmem migrate`` from an in-memory source.

A ``memory://`` source is filled with ``--messages`` messages in conversations of
``--per-conversation`` (user/assistant, 200 characters). Then, in one run:

- ``migrate``: ``chatmem_cli``'s ``migrate(source, destination, verify=True)``, what the
  command runs: messages per second, end to end;
- ``no-op re-run``: the same again; every message is skipped by id (idempotent append);
- ``append only``: the destination alone, every conversation appended again as pages of
  500 into fresh conversation ids (no source reads, no verification). On PostgreSQL it also
  prints the CPU time per message of this process and of the server's backends serving the
  repository's connections (from /proc, when the server runs on this machine): unlike
  wall-clock time, these hardly change with the load of a shared machine.

Conversation ids carry a fresh tag and are deleted afterwards. ``--append-only`` runs the
last part alone; ``--source DIR`` imports chatmem from another tree (an earlier version), so
two versions can be run alternately on a shared machine. Usage:

    python benchmarks/sql_bulk.py --url postgresql://test:test@127.0.0.1:54329/testdb \
        --per-conversation 50
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if "--source" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--source") + 1])
else:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import process_cpu
from sqlalchemy import event

from chatmem import AssistantMessage, Message, UserMessage
from chatmem_cli._transfer_engine import migrate
from chatmem_repositories import create_repository, redact_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
PAGE = 500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="destination SQL repository URL")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--per-conversation", type=int, default=100)
    parser.add_argument("--append-only", action="store_true", help="skip migrate and re-run")
    parser.add_argument(
        "--concurrency", type=int, default=4, help="conversations migrated at once (CLI default)"
    )
    parser.add_argument("--source", help="import chatmem from this tree (an earlier version)")
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    source = create_repository("memory://")
    destination = create_repository(args.url, initialize_schema="always")
    backends = _record_backends(destination)
    conversations = args.messages // args.per_conversation
    histories: dict[str, list[Message]] = {}
    for c in range(conversations):
        cid = f"bulk-{tag}-{c}"
        history: list[Message] = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
            for i in range(args.per_conversation)
        ]
        source.append(cid, history)
        histories[cid] = history
    try:
        print(f"{redact_url(args.url)}: {args.messages} messages, {conversations} conversations")
        if not args.append_only:
            _migrate_twice(source, destination, args.messages, args.concurrency)
        destination.find_recent("warm-up", 1)  # connect and create the tables first
        server_before, client_before = process_cpu(backends), time.process_time()
        began = time.perf_counter()
        for cid, history in histories.items():
            for start in range(0, len(history), PAGE):
                destination.append(f"{cid}-again", history[start : start + PAGE])
        took = time.perf_counter() - began
        client = (time.process_time() - client_before) / args.messages * 1e6
        print(f"  append only    {took:7.2f} s  {args.messages / took:9.0f} msg/s")
        if backends:
            server = (process_cpu(backends) - server_before) / args.messages * 1e6
            print(f"  CPU per message: client {client:.1f} us, server {server:.1f} us")
    finally:
        for cid in histories:
            destination.delete_by_conversation_id(cid)
            destination.delete_by_conversation_id(f"{cid}-again")
        destination.close()
        source.close()
    return 0


def _record_backends(repository: Any) -> list[int]:
    """The server process ids of the repository's PostgreSQL connections, as they open."""
    pids: list[int] = []
    engine = repository._engine
    if engine.dialect.name != "postgresql":
        return pids

    def connected(dbapi_connection: Any, _record: Any) -> None:
        pids.append(dbapi_connection.info.backend_pid)

    event.listen(engine, "connect", connected)
    return pids


def _migrate_twice(source: Any, destination: Any, messages: int, concurrency: int) -> None:
    """Migrate everything, then again (a no-op re-run); print both times."""
    began = time.perf_counter()
    report = migrate(source, destination, verify=True, concurrency=concurrency)
    took = time.perf_counter() - began
    if report.stored != messages or report.mismatches:
        raise SystemExit(f"migrate copied {report.stored}: {report.mismatches[:3]}")
    print(f"  migrate        {took:7.2f} s  {messages / took:9.0f} msg/s")
    began = time.perf_counter()
    report = migrate(source, destination, verify=True, concurrency=concurrency)
    took = time.perf_counter() - began
    if report.stored or report.mismatches:
        raise SystemExit(f"re-run copied {report.stored}: {report.mismatches[:3]}")
    print(f"  no-op re-run   {took:7.2f} s")


if __name__ == "__main__":
    sys.exit(main())
