#!/usr/bin/env python3
"""Where a Cassandra turn's time goes: cProfile of turns, grouped by layer.

A turn is what the memory advisor does: ``memory.get`` (window of 20) and one
``memory.add`` of the user message and the answer (``--adds 2``: one add per message),
200-character messages, on a conversation of ``--length`` stored messages; sync by default,
``--async`` for the async twin. The profile covers the calling thread (the event loop's, in
async): time spent waiting on a driver future is the driver's I/O thread plus the network
plus the server ("server + I/O wait"); every other row is Python work on the caller's
thread, grouped by the module it ran in (own time, not cumulative). Statements sent per turn
are counted with the driver's request listener. Usage:

    python benchmarks/cassandra_turn_profile.py --url cassandra://127.0.0.1:9042/chatmem_test
    python benchmarks/cassandra_turn_profile.py --async --turns 500
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra.cluster import Cluster

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
)

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]

# First match wins: (substring of the file path or function name, layer).
LAYERS = [
    ("method 'wait'", "server + I/O wait"),
    ("method 'acquire'", "server + I/O wait"),
    ("method 'poll'", "server + I/O wait"),
    ("method 'select'", "server + I/O wait"),
    ("threading.py", "server + I/O wait"),
    ("conversation_ids.py", "validation (conversation id)"),
    ("chatmem/messages", "message construction + codec"),
    ("chatmem/_messages", "message construction + codec"),
    ("json", "message construction + codec"),
    ("pydantic", "message construction + codec"),
    ("chatmem/_sync/memory", "window selection (memory)"),
    ("chatmem/_async/memory", "window selection (memory)"),
    ("chatmem/memory", "window selection (memory)"),
    ("cassandra/_codec", "statement building (chatmem)"),
    ("cassandra/_cql", "statement building (chatmem)"),
    ("cassandra/_drivers", "driver adapter (chatmem)"),
    ("cassandra/_sync", "repository logic"),
    ("cassandra/_async", "repository logic"),
    ("cassandra/_errors", "repository logic"),
    ("chatmem_repositories", "repository logic"),
    ("chatmem/", "chatmem other"),
    ("asyncio", "event loop (asyncio)"),
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


def history(length: int) -> list[Message]:
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
        for i in range(length)
    ]


def turn_messages(i: int) -> list[Message]:
    return [UserMessage(f"q{i} {TEXT}"[:200]), AssistantMessage(TEXT)]


def report(args: Any, profiler: cProfile.Profile, wall: float, sent: list[Any]) -> None:
    stats = pstats.Stats(profiler)
    totals: dict[str, float] = defaultdict(float)
    for key, (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        totals[layer_of(key)] += tottime
    profiled = sum(totals.values())
    twin = "async" if args.use_async else "sync"
    print(
        f"{twin}, stored {args.length}, {args.adds} add(s) per turn, {args.turns} turns,"
        f" {wall * 1000:.3f} ms per turn (profiled), load {os.getloadavg()[0]:.2f}"
    )
    print(f"statements sent per turn: {len(sent)} ({[type(s).__name__ for s in sent]})")
    for layer, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        share = seconds / profiled
        print(f"  {layer:34} {seconds / args.turns * 1e6:8.0f} µs  {share:6.1%}")
    if args.top:
        stats.sort_stats("tottime").print_stats(args.top)


def run_sync(args: Any, host: str, port: int, keyspace: str) -> None:
    cluster = Cluster([host], port=port)
    session = cluster.connect()
    repository = CassandraChatMemoryRepository(session, keyspace=keyspace)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4()}"
    sent: list[Any] = []

    def turn(i: int) -> None:
        memory.get(cid)
        messages = turn_messages(i)
        if args.adds == 1:
            memory.add(cid, messages)
        else:
            for message in messages:
                memory.add(cid, message)

    try:
        chunk = history(args.length)
        for start in range(0, len(chunk), 1000):
            repository.append(cid, chunk[start : start + 1000])
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
        report(args, profiler, (time.perf_counter() - began) / args.turns, sent)
    finally:
        repository.delete_by_conversation_id(cid)
        cluster.shutdown()


async def run_async(args: Any, host: str, port: int, keyspace: str) -> None:
    cluster = Cluster([host], port=port)
    session = cluster.connect()
    repository = AsyncCassandraChatMemoryRepository(session, keyspace=keyspace)
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4()}"
    sent: list[Any] = []

    async def turn(i: int) -> None:
        await memory.get(cid)
        messages = turn_messages(i)
        if args.adds == 1:
            await memory.add(cid, messages)
        else:
            for message in messages:
                await memory.add(cid, message)

    try:
        chunk = history(args.length)
        for start in range(0, len(chunk), 1000):
            await repository.append(cid, chunk[start : start + 1000])
        for i in range(50):
            await turn(i)
        session.add_request_init_listener(sent.append)
        await turn(0)
        session.remove_request_init_listener(sent.append)
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for i in range(args.turns):
            await turn(i)
        profiler.disable()
        report(args, profiler, (time.perf_counter() - began) / args.turns, sent)
    finally:
        await repository.delete_by_conversation_id(cid)
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--adds", type=int, choices=(1, 2), default=1)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--top", type=int, default=0, help="also print the top N functions")
    args = parser.parse_args()
    hostport, keyspace = args.url.split("://", 1)[1].split("/", 1)
    host, _, port = hostport.partition(":")
    keyspace = keyspace.split("?")[0]
    with CassandraChatMemoryRepository.from_url(args.url, create_keyspace=True) as setup:
        setup.find_conversation_ids()
    if args.use_async:
        asyncio.run(run_async(args, host, int(port or 9042), keyspace))
    else:
        run_sync(args, host, int(port or 9042), keyspace)


if __name__ == "__main__":
    main()
