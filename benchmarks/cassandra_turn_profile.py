#!/usr/bin/env python3
"""Where a Cassandra turn's time goes: cProfile of sync turns, grouped by layer.

A turn is ``memory.get`` (window of 20) + ``add(user)`` + ``add(assistant)``, 200-character
messages, on a conversation of ``--length`` stored messages. The profile covers the calling
thread: time spent waiting on a driver future is the driver's I/O thread plus the network
plus the server ("server + I/O wait"); every other row is Python work on the caller's
thread, grouped by the module it ran in (own time, not cumulative). Statements sent per
turn are counted with the driver's request listener. Usage:

    python benchmarks/cassandra_turn_profile.py --url cassandra://127.0.0.1:9042/chatmem_test
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra.cluster import Cluster

from chatmem import AssistantMessage, MessageWindowChatMemory, UserMessage
from chatmem_repositories.cassandra import CassandraChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]

# First match wins: (substring of the file path or function name, layer).
LAYERS = [
    ("method 'wait'", "server + I/O wait"),
    ("method 'acquire'", "server + I/O wait"),
    ("threading.py", "server + I/O wait"),
    ("conversation_ids.py", "validation (conversation id)"),
    ("chatmem/messages", "message construction + codec"),
    ("chatmem/_messages", "message construction + codec"),
    ("json", "message construction + codec"),
    ("pydantic", "message construction + codec"),
    ("chatmem/_sync/memory", "window selection (memory)"),
    ("chatmem/memory", "window selection (memory)"),
    ("cassandra/_codec", "statement building (chatmem)"),
    ("cassandra/_cql", "statement building (chatmem)"),
    ("cassandra/_drivers", "statement building (chatmem)"),
    ("cassandra/_sync", "repository logic"),
    ("cassandra/_errors", "repository logic"),
    ("chatmem_repositories", "repository logic"),
    ("chatmem/", "chatmem other"),
    ("cassandra/", "driver (Python side)"),
    ("cassandra.", "driver (Python side)"),
]


def layer_of(key: tuple[str, int, str]) -> str:
    filename, _, function = key
    text = f"{filename} {function}"
    for needle, layer in LAYERS:
        if needle in text:
            return layer
    return "other (stdlib, uuid, time)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    hostport, keyspace = args.url.split("://", 1)[1].split("/", 1)
    host, _, port = hostport.partition(":")
    keyspace = keyspace.split("?")[0]
    with CassandraChatMemoryRepository.from_url(args.url, create_keyspace=True) as setup:
        setup.find_conversation_ids()
    cluster = Cluster([host], port=int(port or 9042))
    session = cluster.connect()
    repository = CassandraChatMemoryRepository(session, keyspace=keyspace)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4()}"
    sent: list[Any] = []
    try:
        history = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
            for i in range(args.length)
        ]
        for start in range(0, len(history), 1000):
            repository.append(cid, history[start : start + 1000])

        def turn(i: int) -> None:
            memory.get(cid)
            memory.add(cid, UserMessage(f"q{i} {TEXT}"[:200]))
            memory.add(cid, AssistantMessage(TEXT))

        for i in range(50):
            turn(i)
        session.add_request_init_listener(sent.append)
        turn(0)
        session.remove_request_init_listener(sent.append)
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for i in range(args.turns):
            turn(i)
        profiler.disable()
        wall = (time.perf_counter() - began) / args.turns
        stats = pstats.Stats(profiler)
        totals: dict[str, float] = defaultdict(float)
        for key, (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
            totals[layer_of(key)] += tottime
        profiled = sum(totals.values())
        print(f"stored {args.length}, {args.turns} turns, {wall * 1000:.3f} ms per turn (profiled)")
        print(f"statements sent per turn: {len(sent)} ({[type(s).__name__ for s in sent]})")
        for layer, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
            share = seconds / profiled
            print(f"  {layer:34} {seconds / args.turns * 1000:8.3f} ms  {share:6.1%}")
    finally:
        repository.delete_by_conversation_id(cid)
        cluster.shutdown()


if __name__ == "__main__":
    main()
