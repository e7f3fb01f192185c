#!/usr/bin/env python3
"""Round trips and statements per memory read and per append on the Neo4j repository.

The driver has no command listener, so this counts on the wire: the repository talks to the
server through the TCP proxy of ``tests/backends/neo4j/test_neo4j_faults.py``, which counts
a round trip each time the client sends after the server has answered. Statements are
counted by wrapping the driver session's ``run``. Both at several stored history lengths,
sync and async. Then 16 concurrent writers x 200 appends to one conversation, checking that
3,200 messages are stored, none lost or duplicated, each writer's order kept.

Usage:
    python benchmarks/neo4j_round_trips.py --url bolt://127.0.0.1:7687 --lengths 10,10000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neo4j import AsyncSession, Session

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.backend import run_all
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository
from tests.backends.neo4j.test_neo4j_faults import TcpProxy

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
statements = 0


def _count_runs() -> None:
    sync_run, async_run = Session.run, AsyncSession.run

    def run(self: Session, *args: Any, **kwargs: Any) -> Any:
        global statements
        statements += 1
        return sync_run(self, *args, **kwargs)

    async def arun(self: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        global statements
        statements += 1
        return await async_run(self, *args, **kwargs)

    Session.run = run  # type: ignore[method-assign]
    AsyncSession.run = arun  # type: ignore[method-assign]


def history(n: int) -> list[Message]:
    return [SystemMessage("be brief")] + [
        (UserMessage if i % 2 == 0 else AssistantMessage)(TEXT) for i in range(n)
    ]


def measure_sync(proxy: TcpProxy, lengths: list[int]) -> None:
    global statements
    with Neo4jChatMemoryRepository.from_url(
        f"bolt://127.0.0.1:{proxy.port}", database="neo4j"
    ) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        for n in lengths:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            messages = history(n)
            for start in range(0, len(messages), 1000):
                repository.append(cid, messages[start : start + 1000])
            memory.get(cid)
            proxy.reset_count()
            statements = 0
            memory.get(cid)
            read = (statements, proxy.round_trips)
            proxy.reset_count()
            statements = 0
            repository.append(cid, [UserMessage(TEXT)])
            append = (statements, proxy.round_trips)
            print(
                f"sync  stored={n:>7}: memory read {read[0]} statements / {read[1]} round trips;"
                f" append {append[0]} statement / {append[1]} round trip"
            )
            repository.delete_by_conversation_id(cid)


async def measure_async(proxy: TcpProxy, lengths: list[int]) -> None:
    global statements
    async with AsyncNeo4jChatMemoryRepository.from_url(
        f"bolt://127.0.0.1:{proxy.port}", database="neo4j"
    ) as repository:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
        for n in lengths:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            messages = history(n)
            for start in range(0, len(messages), 1000):
                await repository.append(cid, messages[start : start + 1000])
            await memory.get(cid)
            proxy.reset_count()
            statements = 0
            await memory.get(cid)
            read = (statements, proxy.round_trips)
            proxy.reset_count()
            statements = 0
            await repository.append(cid, [UserMessage(TEXT)])
            append = (statements, proxy.round_trips)
            print(
                f"async stored={n:>7}: memory read {read[0]} statements / {read[1]} round trips;"
                f" append {append[0]} statement / {append[1]} round trip"
            )
            await repository.delete_by_conversation_id(cid)


def check_writes(stored: list[Message], writers: int, per_writer: int) -> str:
    texts = [getattr(m, "text", "") for m in stored]
    ordered = all(
        [int(t.split(":")[1]) for t in texts if t.startswith(f"{w}:")] == list(range(per_writer))
        for w in range(writers)
    )
    return (
        f"{len(texts)} stored, {len(set(texts))} distinct, "
        f"{len({m.id for m in stored})} distinct ids, per-writer order kept: {ordered}"
    )


def concurrency_sync(url: str, writers: int, per_writer: int) -> None:
    with Neo4jChatMemoryRepository.from_url(url) as repository:
        cid = f"writers-{uuid.uuid4().hex[:8]}"

        def writer(w: int) -> Any:
            return lambda: [
                repository.append(cid, [UserMessage(f"{w}:{i}")]) for i in range(per_writer)
            ]

        began = time.perf_counter()
        run_all([writer(w) for w in range(writers)])
        elapsed = time.perf_counter() - began
        result = check_writes(repository.find_by_conversation_id(cid), writers, per_writer)
        print(f"sync  {writers} writers x {per_writer} appends in {elapsed:.1f} s: {result}")
        repository.delete_by_conversation_id(cid)


async def concurrency_async(url: str, writers: int, per_writer: int) -> None:
    async with AsyncNeo4jChatMemoryRepository.from_url(url) as repository:
        cid = f"writers-{uuid.uuid4().hex[:8]}"

        async def writer(w: int) -> None:
            for i in range(per_writer):
                await repository.append(cid, [UserMessage(f"{w}:{i}")])

        began = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(writers)))
        elapsed = time.perf_counter() - began
        result = check_writes(await repository.find_by_conversation_id(cid), writers, per_writer)
        print(f"async {writers} writers x {per_writer} appends in {elapsed:.1f} s: {result}")
        await repository.delete_by_conversation_id(cid)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="bolt://127.0.0.1:7687")
    parser.add_argument("--lengths", default="10,10000")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    parts = urlsplit(args.url)
    _count_runs()
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 7687)
    try:
        measure_sync(proxy, lengths)
        asyncio.run(measure_async(proxy, lengths))
    finally:
        proxy.kill()
    concurrency_sync(args.url, args.writers, args.appends)
    asyncio.run(concurrency_async(args.url, args.writers, args.appends))
    return 0


if __name__ == "__main__":
    sys.exit(main())
