#!/usr/bin/env python3
"""What consensus costs a Cassandra append: the conditional batch against the same rows plain.

Measured side by side, round-robin, on one conversation per variant, with the repository's
own session, prepared statements and consistency levels:

- ``append (Paxos)``: ``repository.append`` of one 200-character message: the conditional
  batch (claim ``IF NOT EXISTS``, message row, and ``touched`` with the counter ``IF
  next_position = ?``);
- ``same rows, plain``: the same three statements bound to the same values, without any
  condition (an unlogged single-partition batch): what an append would cost if Cassandra
  needed no consensus for it, and gave neither idempotence nor server order;
- ``window read``: ``find_window(cid, 20)``;
- ``floor write``: two plain INSERTs in one batch, as ``benchmarks/floor.py`` sends them.

Usage:

    python benchmarks/cassandra_paxos_cost.py --url cassandra://127.0.0.1:9042/chatmem_test
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra.query import BatchStatement, BatchType

from chatmem import UserMessage
from chatmem.messages import encode_message
from chatmem_repositories.cassandra import CassandraChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    repository = CassandraChatMemoryRepository.from_url(args.url, create_keyspace=True)
    repository.find_conversation_ids()  # connects and prepares
    db = repository._db  # the benchmark borrows the repository's session and statements
    session, prepared = db.session, db.prepared
    assert session is not None
    table = db.cql.messages
    counter = session.prepare(
        f"UPDATE {table} SET touched = true, next_position = ? WHERE conversation_id = ?"
    )
    ids = {name: f"paxos-cost-{name}-{uuid.uuid4().hex[:8]}" for name in ("lwt", "plain", "floor")}
    profile = db.write_profile
    plain_next = [1]

    def lwt() -> None:
        repository.append(ids["lwt"], [UserMessage(TEXT)])

    def plain() -> None:
        cid, message, position = ids["plain"], UserMessage(TEXT), plain_next[0]
        plain_next[0] += 1
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        batch.add(prepared["claim_plain"], (cid, "i", 0, message.id, position))
        batch.add(
            prepared["insert"],
            (cid, "c", position, message.id, "user", message.created_at, encode_message(message)),
        )
        batch.add(counter, (position + 1, cid))
        session.execute(batch, execution_profile=profile)

    floor_next = [1]

    def floor() -> None:
        cid, position = ids["floor"], floor_next[0]
        floor_next[0] += 2
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for offset in range(2):
            message = UserMessage(TEXT)
            batch.add(
                prepared["insert"],
                (
                    cid,
                    "c",
                    position + offset,
                    message.id,
                    "user",
                    message.created_at,
                    encode_message(message),
                ),
            )
        session.execute(batch, execution_profile=profile)

    def read() -> None:
        repository.find_window(ids["lwt"], 20)

    variants: dict[str, Callable[[], None]] = {
        "append (Paxos)": lwt,
        "same rows, plain": plain,
        "window read": read,
        "floor write (2 rows)": floor,
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for round_ in range(args.rounds + 30):
            for name, call in variants.items():
                began = time.perf_counter()
                call()
                if round_ >= 30:
                    samples[name].append(time.perf_counter() - began)
        print(f"load {[round(x, 2) for x in os.getloadavg()]}, {args.rounds} rounds")
        base = statistics.median(samples["same rows, plain"])
        for name, values in samples.items():
            median = statistics.median(values)
            print(f"  {name:22} {median * 1000:7.3f} ms  ({median / base:4.2f}x plain)")
    finally:
        for cid in ids.values():
            repository.delete_by_conversation_id(cid)
        repository.close()


if __name__ == "__main__":
    main()
