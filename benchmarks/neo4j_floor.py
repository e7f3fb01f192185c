#!/usr/bin/env python3
"""A chatmem turn on Neo4j beside the floor: the same driver doing the least a turn needs.

A turn is what ``benchmarks/turns.py`` times: ``memory.get`` (window of 20) and two
``memory.add`` calls (a user and an assistant message, 200 characters each). The floor is
one indexed read of the newest 20 message nodes of one conversation plus one round trip
creating two message nodes, through the same driver with the same session settings and no
chatmem (auto-commit statements, a range index on ``(conversation_id, position)``).

Both run in the same process, turn by turn alternately, so the machine's load falls on both
alike; each stored history length has its own conversation (and floor conversation) filled
beforehand. ``--profile`` runs cProfile over extra chatmem turns and prints where the time
goes (chatmem, the driver's Python code, waiting for the server). ``--ops N`` times each
operation on its own, interleaved N times (sync): the window read against the floor's read,
a one- and a two-message append against the floor's insert of one and two nodes, and
``RETURN 1`` (a round trip that does no work), which splits a turn into round trips, commits
and chatmem's own share.

Usage:
    python benchmarks/neo4j_floor.py --url bolt://127.0.0.1:7687 --lengths 10,1000
    python benchmarks/neo4j_floor.py --profile 300 --lengths 10
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neo4j import AsyncDriver, AsyncGraphDatabase, Driver, GraphDatabase

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
BATCH = 1000
LABEL = "FloorBenchMessage"
FLOOR_SCHEMA = (
    f"CREATE INDEX floor_bench_log IF NOT EXISTS FOR (m:{LABEL}) ON (m.conversation_id, m.position)"
)
FLOOR_READ = (
    f"MATCH (m:{LABEL}) WHERE m.conversation_id = $cid AND m.position > 0 "
    "WITH m ORDER BY m.conversation_id DESC, m.position DESC LIMIT 20 "
    "RETURN m.position AS position, m.data AS data"
)
FLOOR_WRITE = f"UNWIND $rows AS row CREATE (m:{LABEL}) SET m = row"
FLOOR_CLEAN = f"MATCH (m:{LABEL}) WHERE m.conversation_id = $cid DETACH DELETE m"


def history(n: int) -> list[Message]:
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200]) for i in range(n)
    ]


def rows(cid: str, first: int, count: int) -> list[dict[str, Any]]:
    return [
        {"conversation_id": cid, "position": first + i, "data": TEXT, "type": "USER"}
        for i in range(count)
    ]


SESSION = {"database": "neo4j", "notifications_min_severity": "OFF"}


class SyncFloor:
    """The floor's statements on the blocking driver."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.next: dict[str, int] = {}

    def run(self, query: Any, **params: Any) -> list[Any]:
        with self.driver.session(**SESSION) as session:  # type: ignore[arg-type]
            return list(session.run(query, params))

    def fill(self, cid: str, n: int) -> None:
        for start in range(0, n, BATCH):
            self.run(FLOOR_WRITE, rows=rows(cid, start + 1, min(BATCH, n - start)))
        self.next[cid] = n + 1

    def turn(self, cid: str) -> None:
        self.run(FLOOR_READ, cid=cid)
        self.run(FLOOR_WRITE, rows=rows(cid, self.next[cid], 2))
        self.next[cid] += 2


class AsyncFloor:
    """The floor's statements on the async driver."""

    def __init__(self, driver: AsyncDriver) -> None:
        self.driver = driver
        self.next: dict[str, int] = {}

    async def run(self, query: Any, **params: Any) -> list[Any]:
        async with self.driver.session(**SESSION) as session:  # type: ignore[arg-type]
            return [record async for record in await session.run(query, params)]

    async def fill(self, cid: str, n: int) -> None:
        for start in range(0, n, BATCH):
            await self.run(FLOOR_WRITE, rows=rows(cid, start + 1, min(BATCH, n - start)))
        self.next[cid] = n + 1

    async def turn(self, cid: str) -> None:
        await self.run(FLOOR_READ, cid=cid)
        await self.run(FLOOR_WRITE, rows=rows(cid, self.next[cid], 2))
        self.next[cid] += 2


def sync_turn(memory: MessageWindowChatMemory, cid: str, turn: int) -> None:
    memory.get(cid)
    memory.add(cid, UserMessage(f"q{turn} {TEXT}"[:200]))
    memory.add(cid, AssistantMessage(TEXT))


async def async_turn(memory: AsyncMessageWindowChatMemory, cid: str, turn: int) -> None:
    await memory.get(cid)
    await memory.add(cid, UserMessage(f"q{turn} {TEXT}"[:200]))
    await memory.add(cid, AssistantMessage(TEXT))


Samples = dict[int, dict[str, list[float]]]
KINDS = ("chatmem", "floor", "chatmem_cpu", "floor_cpu")


def report(mode: str, samples: Samples) -> None:
    for n, kinds in samples.items():
        chatmem, floor, chatmem_cpu, floor_cpu = (
            statistics.mean(kinds[k]) * 1000
            if k.endswith("cpu")
            else statistics.median(kinds[k]) * 1000
            for k in KINDS
        )
        print(
            f"{mode:<5} n={n:>7}: chatmem {chatmem:6.2f} ms  floor {floor:6.2f} ms  "
            f"ratio {chatmem / floor:4.2f}; client CPU chatmem {chatmem_cpu:5.2f} ms "
            f"floor {floor_cpu:5.2f} ms ({len(kinds['chatmem'])} turns each)"
        )


def run_sync(url: str, lengths: list[int], turns: int, warmup: int, profile: int) -> None:
    repository = Neo4jChatMemoryRepository.from_url(url, database="neo4j")
    memory = MessageWindowChatMemory(repository, max_messages=20)
    driver = GraphDatabase.driver(url)
    floor = SyncFloor(driver)
    floor.run(FLOOR_SCHEMA)
    floor.run("CALL db.awaitIndexes(60)")
    tag = uuid.uuid4().hex[:8]
    ids = {n: (f"floor-c-{n}-{tag}", f"floor-f-{n}-{tag}") for n in lengths}
    samples: Samples = {n: {k: [] for k in KINDS} for n in lengths}
    try:
        for n, (cid, fid) in ids.items():
            messages = history(n)
            for start in range(0, n, BATCH):
                repository.append(cid, messages[start : start + BATCH])
            floor.fill(fid, n)
        for turn in range(warmup + turns):
            for n, (cid, fid) in ids.items():
                began, cpu_began = time.perf_counter(), time.process_time()
                sync_turn(memory, cid, turn)
                middle, cpu_middle = time.perf_counter(), time.process_time()
                floor.turn(fid)
                ended, cpu_ended = time.perf_counter(), time.process_time()
                if turn >= warmup:
                    samples[n]["chatmem"].append(middle - began)
                    samples[n]["floor"].append(ended - middle)
                    samples[n]["chatmem_cpu"].append(cpu_middle - cpu_began)
                    samples[n]["floor_cpu"].append(cpu_ended - cpu_middle)
        report("sync", samples)
        if profile:
            cid = ids[lengths[0]][0]
            profiler = cProfile.Profile()
            began = time.perf_counter()
            profiler.enable()
            for turn in range(profile):
                sync_turn(memory, cid, turn)
            profiler.disable()
            print_profile(profiler, time.perf_counter() - began, profile)
    finally:
        for cid, fid in ids.values():
            repository.delete_by_conversation_id(cid)
            floor.run(FLOOR_CLEAN, cid=fid)
        repository.close()
        driver.close()


async def run_async(url: str, lengths: list[int], turns: int, warmup: int, profile: int) -> None:
    repository = AsyncNeo4jChatMemoryRepository.from_url(url, database="neo4j")
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    driver = AsyncGraphDatabase.driver(url)
    floor = AsyncFloor(driver)
    await floor.run(FLOOR_SCHEMA)
    await floor.run("CALL db.awaitIndexes(60)")
    tag = uuid.uuid4().hex[:8]
    ids = {n: (f"floor-c-{n}-{tag}", f"floor-f-{n}-{tag}") for n in lengths}
    samples: Samples = {n: {k: [] for k in KINDS} for n in lengths}
    try:
        for n, (cid, fid) in ids.items():
            messages = history(n)
            for start in range(0, n, BATCH):
                await repository.append(cid, messages[start : start + BATCH])
            await floor.fill(fid, n)
        for turn in range(warmup + turns):
            for n, (cid, fid) in ids.items():
                began, cpu_began = time.perf_counter(), time.process_time()
                await async_turn(memory, cid, turn)
                middle, cpu_middle = time.perf_counter(), time.process_time()
                await floor.turn(fid)
                ended, cpu_ended = time.perf_counter(), time.process_time()
                if turn >= warmup:
                    samples[n]["chatmem"].append(middle - began)
                    samples[n]["floor"].append(ended - middle)
                    samples[n]["chatmem_cpu"].append(cpu_middle - cpu_began)
                    samples[n]["floor_cpu"].append(cpu_ended - cpu_middle)
        report("async", samples)
        if profile:
            cid = ids[lengths[0]][0]
            profiler = cProfile.Profile()
            began = time.perf_counter()
            profiler.enable()
            for turn in range(profile):
                await async_turn(memory, cid, turn)
            profiler.disable()
            print_profile(profiler, time.perf_counter() - began, profile)
    finally:
        for cid, fid in ids.values():
            await repository.delete_by_conversation_id(cid)
            await floor.run(FLOOR_CLEAN, cid=fid)
        await repository.aclose()
        await driver.close()


_GROUPS: list[tuple[str, Callable[[str, str], bool]]] = [
    ("waiting for the server (socket/selector)", lambda f, n: _waits(f, n)),
    ("neo4j driver (Python)", lambda f, n: f"{os.sep}neo4j{os.sep}" in f),
    ("chatmem (memory, repository, codec)", lambda f, n: "chatmem" in f),
    ("pydantic (message construction)", lambda f, n: "pydantic" in f),
]


def _waits(filename: str, name: str) -> bool:
    return ("socket" in name and ("recv" in name or "send" in name)) or name in {
        "<method 'poll' of 'select.epoll' objects>",
        "<method 'select' of 'select.epoll' objects>",
        "<method 'control' of 'select.kqueue' objects>",
    }


def print_profile(profiler: cProfile.Profile, wall: float, turns: int) -> None:
    """Print self time per group (µs per turn) and the top functions."""
    stats = pstats.Stats(profiler)
    totals: dict[str, float] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        group = next((g for g, test in _GROUPS if test(filename, name)), "other (stdlib, asyncio)")
        totals[group] = totals.get(group, 0.0) + tottime
    print(f"profile: {turns} turns, {wall / turns * 1e3:.2f} ms per turn under the profiler")
    for group, total in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {group:<42} {total / turns * 1e6:8.0f} µs/turn")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    print("\n".join(out.getvalue().splitlines()[6:26]))


def run_ops(url: str, rounds: int) -> None:
    """Time each operation alone, interleaved, and print medians and client CPU."""
    repository = Neo4jChatMemoryRepository.from_url(url, database="neo4j")
    driver = GraphDatabase.driver(url)
    floor = SyncFloor(driver)
    floor.run(FLOOR_SCHEMA)
    floor.run("CALL db.awaitIndexes(60)")
    tag = uuid.uuid4().hex[:8]
    cid, fid = f"ops-c-{tag}", f"ops-f-{tag}"

    def floor_write(count: int) -> None:
        floor.run(FLOOR_WRITE, rows=rows(fid, floor.next[fid], count))
        floor.next[fid] += count

    ops: dict[str, Callable[[], object]] = {
        "chatmem find_window(20)": lambda: repository.find_window(cid, 20),
        "floor read of 20": lambda: floor.run(FLOOR_READ, cid=fid),
        "chatmem append 1 message": lambda: repository.append(cid, [UserMessage(TEXT)]),
        "floor insert of 1 node": lambda: floor_write(1),
        "chatmem append 2 messages": lambda: repository.append(
            cid, [UserMessage(TEXT), AssistantMessage(TEXT)]
        ),
        "floor insert of 2 nodes": lambda: floor_write(2),
        "RETURN 1 (empty round trip)": lambda: floor.run("RETURN 1"),
    }
    wall: dict[str, list[float]] = {name: [] for name in ops}
    cpu: dict[str, list[float]] = {name: [] for name in ops}
    try:
        repository.append(cid, history(1000))
        floor.fill(fid, 1000)
        for round_ in range(rounds + 10):
            for name, op in ops.items():
                began, cpu_began = time.perf_counter(), time.process_time()
                op()
                if round_ >= 10:
                    wall[name].append(time.perf_counter() - began)
                    cpu[name].append(time.process_time() - cpu_began)
        print(f"sync operations, 1,000 stored, {rounds} rounds (median wall / mean client CPU):")
        for name in ops:
            print(
                f"  {name:<28} {statistics.median(wall[name]) * 1000:6.2f} ms"
                f"  cpu {statistics.mean(cpu[name]) * 1000:5.2f} ms"
            )
    finally:
        repository.delete_by_conversation_id(cid)
        floor.run(FLOOR_CLEAN, cid=fid)
        repository.close()
        driver.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="bolt://127.0.0.1:7687")
    parser.add_argument("--lengths", default="10,1000")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--profile", type=int, default=0, help="profiled chatmem turns")
    parser.add_argument("--mode", choices=("sync", "async", "both"), default="both")
    parser.add_argument("--ops", type=int, default=0, help="time each operation alone, N rounds")
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    if args.ops:
        run_ops(args.url, args.ops)
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
        return 0
    if args.mode in ("sync", "both"):
        run_sync(args.url, lengths, args.turns, args.warmup, args.profile)
    if args.mode in ("async", "both"):
        runner: Awaitable[None] = run_async(
            args.url, lengths, args.turns, args.warmup, args.profile
        )
        asyncio.run(runner)  # type: ignore[arg-type]
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
