#!/usr/bin/env python3
"""Bytes per message in a Neo4j store: what 200-character messages cost on disk.

Stores ``--messages`` messages (200 characters each) in ``--conversations`` conversations
through the repository, twice (two rounds, each in its own conversations), and reads the size
of the database's store directory after a checkpoint (``CALL db.checkpoint()``) before and
after each round. The store directory is the server's ``data/databases/<database>``: the
test server (scripts/servers/neo4j/start.sh) keeps it under
``/tmp/chatmem-servers/neo4j/data``. Transaction logs (``data/transactions``) are reported
apart: they are rotated and pruned, not part of the store.

Neo4j reuses the records of deleted nodes and properties, so a round on a server that has
deleted data before may fill freed records instead of growing the files; the second round
(after the first has used up what was free) is the one to read. Other clients writing to
the same server at the same time add to the growth: run it on a quiet server, or read both
rounds and take the smaller. Neo4j also grows its store files in large preallocated steps
(tens of MB), so the growth per round is coarse: store enough messages that a step is small
beside it, and read the per-file growth that is printed too.

Usage:
    python benchmarks/neo4j_storage.py --url bolt://127.0.0.1:7687
    python benchmarks/neo4j_storage.py --messages 10000 --conversations 100 --keep
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neo4j import GraphDatabase
from neo4j.exceptions import ClientError

from chatmem import AssistantMessage, Message, UserMessage
from chatmem.messages import encode_message
from chatmem_repositories.neo4j import Neo4jChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
DATA = Path("/tmp/chatmem-servers/neo4j/data")
BATCH = 100


def file_bytes(path: Path) -> dict[str, int]:
    """The size of every file under ``path``, by path relative to it."""
    sizes: dict[str, int] = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with contextlib.suppress(FileNotFoundError):  # rotated away while walking
                sizes[os.path.relpath(full, path)] = os.stat(full).st_size
    return sizes


def directory_bytes(path: Path) -> int:
    """Bytes taken by the files under ``path``."""
    return sum(file_bytes(path).values())


def growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Growth per store file group (nodes, properties, strings, indexes, ...), in bytes."""
    groups: dict[str, int] = {}
    for name, size in after.items():
        change = size - before.get(name, 0)
        if change:
            group = "indexes" if name.startswith("schema") else name.split(".id")[0]
            groups[group] = groups.get(group, 0) + change
    return groups


def messages(first: int, count: int) -> list[Message]:
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
        for i in range(first, first + count)
    ]


def checkpoint(url: str, database: str | None) -> bool:
    """Flush the page cache to the store files; ``False`` where the server cannot.

    ``db.checkpoint()`` is an Enterprise Edition procedure. On Community Edition the store
    files grow as the page cache writes pages out (eviction, the periodic checkpoint), so
    the sizes read without one lag behind by at most the page cache's dirty pages.
    """
    with GraphDatabase.driver(url) as driver:
        try:
            driver.execute_query("CALL db.checkpoint()", database_=database)
        except ClientError as exc:
            if "ProcedureNotFound" not in (exc.code or ""):
                raise
            return False
    return True


def sizes(url: str, database: str, data: Path) -> tuple[int, int]:
    if not checkpoint(url, database):
        time.sleep(2)  # no checkpoint procedure: let the page cache's flusher write out
    return (
        directory_bytes(data / "databases" / database),
        directory_bytes(data / "transactions" / database),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="bolt://127.0.0.1:7687")
    parser.add_argument("--database", default="neo4j")
    parser.add_argument("--data-dir", type=Path, default=DATA, help="the server's data/")
    parser.add_argument("--messages", type=int, default=100_000, help="messages per round")
    parser.add_argument("--conversations", type=int, default=1_000, help="per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="do not delete what was stored")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if not (args.data_dir / "databases" / args.database).is_dir():
        raise SystemExit(f"no store directory {args.data_dir / 'databases' / args.database}")
    prefix = "Bytes" + uuid.uuid4().hex[:6]
    repository = Neo4jChatMemoryRepository.from_url(args.url, label_prefix=prefix)
    per = args.messages // args.conversations
    sample = messages(0, 2)
    payload = sum(len(encode_message(m).encode()) for m in sample) / len(sample)
    result: dict[str, Any] = {
        "url": args.url,
        "messages_per_round": per * args.conversations,
        "conversations_per_round": args.conversations,
        "encoded_message_bytes": round(payload),
        "text_characters": 200,
        "rounds": [],
    }
    stored: list[str] = []
    try:
        repository.append("warm-up", messages(0, 2))  # schema and labels exist from here on
        stored.append("warm-up")
        store, logs = sizes(args.url, args.database, args.data_dir)
        files = file_bytes(args.data_dir / "databases" / args.database)
        for round_ in range(args.rounds):
            began = time.perf_counter()
            for c in range(args.conversations):
                cid = f"bytes-{round_}-{c}"
                stored.append(cid)
                for start in range(0, per, BATCH):
                    repository.append(cid, messages(start, min(BATCH, per - start)))
            seconds = time.perf_counter() - began
            new_store, new_logs = sizes(args.url, args.database, args.data_dir)
            count = per * args.conversations
            row = {
                "store_bytes_before": store,
                "store_bytes_after": new_store,
                "store_bytes_per_message": round((new_store - store) / count),
                "transaction_log_bytes_per_message": round((new_logs - logs) / count),
                "messages_per_second": round(count / seconds),
            }
            result["rounds"].append(row)
            print(
                f"round {round_ + 1}: {count:,} messages in {seconds:.1f} s; store "
                f"{store / 1e6:.1f} -> {new_store / 1e6:.1f} MB = "
                f"{row['store_bytes_per_message']} bytes per message (transaction log "
                f"{row['transaction_log_bytes_per_message']}); encoded message {payload:.0f} B"
            )
            new_files = file_bytes(args.data_dir / "databases" / args.database)
            row["growth_by_file"] = growth(files, new_files)
            for group, change in sorted(row["growth_by_file"].items(), key=lambda g: -g[1]):
                print(f"  {group:<44} {change / count:8.0f} bytes per message")
            store, logs, files = new_store, new_logs, new_files
    finally:
        if not args.keep:
            for cid in stored:
                repository.delete_by_conversation_id(cid)
        repository.close()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
