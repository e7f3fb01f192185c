#!/usr/bin/env python3
"""Round trips (commands sent) per memory read and per append on the Redis repository.

Counts with a redis-py client whose ``execute_command`` records each command (every call of
the repository is one command: an EVALSHA of a cached Lua script, or one HGETALL), at several
stored history lengths, sync and async. Also runs 16 concurrent writers x 200 appends to one
conversation and checks that 3,200 messages are stored, none lost or duplicated.

With ``--cluster-url``, also compares one server with a Redis Cluster side by side in one run
(sync): the median turn (window read + one append) and the median ``list_conversations`` page
of 100 (64 index buckets on the cluster, one pipeline; one script on one server) with
``--conversations`` stored.

Usage:
    python benchmarks/redis_round_trips.py --url redis://127.0.0.1:63799/0
    python benchmarks/redis_round_trips.py --lengths 10 --reps 50 \
        --cluster-url redis+cluster://127.0.0.1:7101,127.0.0.1:7102
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
import redis.asyncio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
PREFIX = f"chatmem-bench-{uuid.uuid4().hex[:6]}"


class CountingRedis(redis.Redis):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.commands.append(str(args[0]))
        return super().execute_command(*args, **options)


class AsyncCountingRedis(redis.asyncio.Redis):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.commands.append(str(args[0]))
        return await super().execute_command(*args, **options)


def history(n: int) -> list[Message]:
    return [(UserMessage if i % 2 == 0 else AssistantMessage)(TEXT) for i in range(n)]


def measure_sync(url: str, lengths: list[int], reps: int) -> None:
    client = CountingRedis.from_url(url)
    repo = RedisChatMemoryRepository(client, key_prefix=PREFIX)
    memory = MessageWindowChatMemory(repo, max_messages=20)
    try:
        for n in lengths:
            cid = f"trips-{n}-{uuid.uuid4().hex[:6]}"
            repo.append(cid, [SystemMessage("You are terse.")])
            messages = history(n)
            for start in range(0, n, 1000):
                repo.append(cid, messages[start : start + 1000])
            memory.get(cid)  # loads the scripts once
            reads, appends, read_s, append_s = [], [], [], []
            for _ in range(reps):
                client.commands.clear()
                t = time.perf_counter()
                memory.get(cid)
                read_s.append(time.perf_counter() - t)
                reads.append(len(client.commands))
                client.commands.clear()
                t = time.perf_counter()
                memory.add(cid, UserMessage(TEXT))
                append_s.append(time.perf_counter() - t)
                appends.append(len(client.commands))
            report("sync", n, reads, appends, read_s, append_s)
            repo.delete_by_conversation_id(cid)
    finally:
        client.close()


async def measure_async(url: str, lengths: list[int], reps: int) -> None:
    client = AsyncCountingRedis.from_url(url)
    repo = AsyncRedisChatMemoryRepository(client, key_prefix=PREFIX)
    memory = AsyncMessageWindowChatMemory(repo, max_messages=20)
    try:
        for n in lengths:
            cid = f"atrips-{n}-{uuid.uuid4().hex[:6]}"
            await repo.append(cid, [SystemMessage("You are terse.")])
            messages = history(n)
            for start in range(0, n, 1000):
                await repo.append(cid, messages[start : start + 1000])
            await memory.get(cid)
            reads, appends, read_s, append_s = [], [], [], []
            for _ in range(reps):
                client.commands.clear()
                t = time.perf_counter()
                await memory.get(cid)
                read_s.append(time.perf_counter() - t)
                reads.append(len(client.commands))
                client.commands.clear()
                t = time.perf_counter()
                await memory.add(cid, UserMessage(TEXT))
                append_s.append(time.perf_counter() - t)
                appends.append(len(client.commands))
            report("async", n, reads, appends, read_s, append_s)
            await repo.delete_by_conversation_id(cid)
    finally:
        await client.aclose()


def report(
    flavor: str,
    n: int,
    reads: list[int],
    appends: list[int],
    read_s: list[float],
    append_s: list[float],
) -> None:
    print(
        f"{flavor:>5} {n:>8} {max(reads):>6} {max(appends):>8} "
        f"{statistics.median(read_s) * 1000:>9.3f} {statistics.median(append_s) * 1000:>10.3f}"
    )


def concurrent_writers(url: str, writers: int = 16, per_writer: int = 200) -> None:
    cid = f"writers-{uuid.uuid4().hex[:6]}"
    with RedisChatMemoryRepository.from_url(url, key_prefix=PREFIX) as repo:

        def write(w: int) -> None:
            for i in range(per_writer):
                repo.append(cid, [UserMessage(f"{w}:{i}")])

        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=writers) as pool:
            list(pool.map(write, range(writers)))
        elapsed = time.perf_counter() - began
        stored = repo.find_by_conversation_id(cid)
        texts = [m.text for m in stored]  # type: ignore[union-attr]
        positions = [s.position for s in repo.find_history(cid, limit=10_000)]
        repo.delete_by_conversation_id(cid)
    ordered = all(
        [int(t.split(":")[1]) for t in texts if t.startswith(f"{w}:")] == list(range(per_writer))
        for w in range(writers)
    )
    print(
        f"{writers} writers x {per_writer} appends: {len(texts)} stored, "
        f"{len(set(texts))} distinct, positions unique={len(set(positions)) == len(positions)}, "
        f"per-writer order kept={ordered}, {elapsed:.2f} s "
        f"({writers * per_writer / elapsed:.0f} appends/s)"
    )


def compare_cluster(url: str, cluster_url: str, conversations: int, reps: int) -> None:
    print(f"one server vs Redis Cluster, sync, {conversations} conversations, medians of {reps}")
    print(f"{'':>8} {'turn ms':>8} {'page ms':>8} {'all pages ms':>13}")
    for label, target in (("server", url), ("cluster", cluster_url)):
        prefix = f"{PREFIX}-{label}"
        with RedisChatMemoryRepository.from_url(target, key_prefix=prefix) as repo:
            memory = MessageWindowChatMemory(repo, max_messages=20)
            cids = [f"list-{i:06d}" for i in range(conversations)]
            for cid in cids:
                repo.append(cid, [UserMessage(TEXT)])
            turns, pages = [], []
            for i in range(reps):
                cid = cids[i % conversations]
                t = time.perf_counter()
                memory.get(cid)
                memory.add(cid, UserMessage(TEXT))
                turns.append(time.perf_counter() - t)
                t = time.perf_counter()
                repo.list_conversations(limit=100)
                pages.append(time.perf_counter() - t)
            t = time.perf_counter()
            cursor, listed = None, 0
            while True:
                page = repo.list_conversations(limit=100, cursor=cursor)
                listed += len(page.conversation_ids)
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            walk = time.perf_counter() - t
            assert listed == conversations, (listed, conversations)
            for cid in cids:
                repo.delete_by_conversation_id(cid)
        print(
            f"{label:>8} {statistics.median(turns) * 1000:>8.3f} "
            f"{statistics.median(pages) * 1000:>8.3f} {walk * 1000:>13.1f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="redis://127.0.0.1:63799/0")
    parser.add_argument("--lengths", default="10,1000,100000")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--cluster-url", default=None)
    parser.add_argument("--conversations", type=int, default=2000)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    print("round trips = commands sent; memory read = MessageWindowChatMemory(20).get,")
    print("one WINDOW script (system message + window); a turn = 1 read + 2 appends = 3")
    print("append = MessageWindowChatMemory.add(one user message); medians of --reps calls")
    print(f"{'':>5} {'stored':>8} {'reads':>6} {'appends':>8} {'read ms':>9} {'append ms':>10}")
    measure_sync(args.url, lengths, args.reps)
    asyncio.run(measure_async(args.url, lengths, args.reps))
    concurrent_writers(args.url)
    if args.cluster_url:
        compare_cluster(args.url, args.cluster_url, args.conversations, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
