#!/usr/bin/env python3
"""A Cassandra turn in parts, beside the floor's: wall time and client CPU per operation.

Measured round-robin in one run, on conversations of ``--length`` messages, so machine noise
hits every part alike:

- ``floor read`` / ``floor write``: the floor's statements (benchmarks/_floor_drivers.py):
  a prepared ``SELECT ... LIMIT 20`` and an unlogged batch of two ``INSERT``s;
- ``memory.get``: chatmem's window read (``find_window``, one query) and decoding;
- ``append 2 (Paxos)``: ``repository.append`` of the user message and the answer, the
  conditional batch (claims ``IF NOT EXISTS``, rows, counter ``IF next_position = ?``);
- ``append 2, plain``: the same statements bound to the same kind of values without any
  condition (unlogged): what the append would cost if Cassandra needed no consensus;
- ``turn``: ``memory.get`` + one ``memory.add([user, answer])``, and ``floor turn``.

"client CPU" is ``time.process_time()``: every thread of this process, the driver's I/O
thread included; the rest of the wall time is the network and the server. Usage:

    python benchmarks/cassandra_turn_parts.py --url cassandra://127.0.0.1:9042/chatmem_test
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _floor_drivers import TEXT, CassandraFloor
from cassandra.query import BatchStatement, BatchType

from chatmem import AssistantMessage, MessageWindowChatMemory, UserMessage
from chatmem.messages import encode_message
from chatmem_repositories.cassandra import CassandraChatMemoryRepository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--length", type=int, default=10)
    args = parser.parse_args()
    repository = CassandraChatMemoryRepository.from_url(args.url, create_keyspace=True)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    repository.find_conversation_ids()  # connects and prepares
    db = repository._db  # the benchmark borrows the repository's session and statements
    session, prepared = db.session, db.prepared
    assert session is not None
    counter = session.prepare(
        f"UPDATE {db.cql.messages} SET touched = true, next_position = ? WHERE conversation_id = ?"
    )
    profile = db.write_profile
    floor = CassandraFloor(args.url)
    ids = {name: f"turn-parts-{name}-{uuid.uuid4().hex[:8]}" for name in ("cm", "plain", "fl")}
    seed = [(UserMessage if i % 2 == 0 else AssistantMessage)(TEXT) for i in range(args.length)]
    for start in range(0, len(seed), 1000):
        repository.append(ids["cm"], seed[start : start + 1000])
    floor.fill(ids["fl"], args.length)
    plain_next = [1]

    def pair() -> list[UserMessage | AssistantMessage]:
        return [UserMessage(TEXT), AssistantMessage(TEXT)]

    def plain() -> None:
        cid, position = ids["plain"], plain_next[0]
        plain_next[0] += 2
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for offset, message in enumerate(pair()):
            values = (cid, "i", 0, message.id, position + offset)
            batch.add(prepared["claim_plain"], values)
            data = encode_message(message)
            row = (cid, "c", position + offset, message.id, message.type.value)
            batch.add(prepared["insert"], (*row, message.created_at, data))
        batch.add(counter, (position + 2, cid))
        session.execute(batch, execution_profile=profile)

    def turn() -> None:
        memory.get(ids["cm"])
        memory.add(ids["cm"], pair())

    variants: dict[str, Callable[[], object]] = {
        "floor read": lambda: floor.session.execute(floor.read, (ids["fl"],)).all(),
        "memory.get": lambda: memory.get(ids["cm"]),
        "floor write": lambda: floor.session.execute(floor.batch(ids["fl"])),
        "append 2 (Paxos)": lambda: repository.append(ids["cm"], pair()),
        "append 2, plain": plain,
        "floor turn": lambda: floor.turn(ids["fl"]),
        "turn": turn,
    }
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for round_ in range(args.rounds + 30):
            for name, call in variants.items():
                began, began_cpu = time.perf_counter(), time.process_time()
                call()
                if round_ >= 30:
                    wall[name].append(time.perf_counter() - began)
                    cpu[name].append(time.process_time() - began_cpu)
        load = [round(x, 2) for x in os.getloadavg()]
        print(f"stored {args.length}, {args.rounds} rounds, load {load}")
        print(f"  {'':18} {'wall ms':>8} {'client CPU µs':>14}")
        for name in variants:
            median, mean_cpu = statistics.median(wall[name]), statistics.fmean(cpu[name])
            print(f"  {name:18} {median * 1000:8.3f} {mean_cpu * 1e6:14.0f}")
    finally:
        for cid in (ids["cm"], ids["plain"]):
            repository.delete_by_conversation_id(cid)
        repository.close()
        floor.close()


if __name__ == "__main__":
    main()
