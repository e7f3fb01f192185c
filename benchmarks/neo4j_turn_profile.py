#!/usr/bin/env python3
"""Where a Neo4j turn's time goes: client CPU by layer, and the wait for the server.

A turn is what the memory advisor does: ``memory.get`` (window of 20) and one ``memory.add``
of the user message and the answer, 200-character messages, on a conversation of
``--length`` stored messages; sync by default, ``--async`` for the async twin. The turns are
first timed without a profiler: wall time and this process's CPU time per turn; the wait
(server, network and the scheduler) is the difference. Then cProfile runs the same turns, and
the client CPU is split by layer in proportion to the profiled times: validation of the
conversation id, message construction, the codec, the memory's window selection, statement
building (parameters, rows), the driver with the repository's statement runner, and the
rest (the event loop, in async). Python function calls per turn are printed too: unlike
times, they do not depend on the machine's load. Usage:

    python benchmarks/neo4j_turn_profile.py --url bolt://127.0.0.1:7687
    python benchmarks/neo4j_turn_profile.py --async --turns 500 --length 1000
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
_WAITS = ("recv_into", "recv", "sendall", "send", "poll", "select", "control")
Key = tuple[str, int, str]


def history(n: int) -> list[Message]:
    return [(UserMessage if i % 2 == 0 else AssistantMessage)(TEXT) for i in range(n)]


def _cumulative(stats: dict[Key, Any], test: Callable[[Key], bool]) -> float:
    return float(sum(row[3] for key, row in stats.items() if test(key)))


def _named(file_part: str, *names: str) -> Callable[[Key], bool]:
    return lambda key: file_part in key[0] and key[2] in names


def report(profiler: cProfile.Profile, turns: int, wall: float, cpu: float) -> None:
    """Print the per-turn breakdown (``wall`` and ``cpu`` are seconds per unprofiled turn)."""
    stats: dict[Key, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    waiting = sum(
        row[2]
        for key, row in stats.items()
        if key[0] == "~" and any(f"'{w}'" in key[2] or f".{w}" in key[2] for w in _WAITS)
    )
    profiled = sum(row[2] for row in stats.values()) - waiting
    calls = sum(row[1] for row in stats.values())
    validation = _cumulative(stats, _named("conversation_ids", "validate_conversation_id"))
    construction = _cumulative(stats, _named("chatmem/messages", "__init__"))
    encode = _cumulative(stats, _named("chatmem/messages", "encode_message", "searchable_text"))
    decode = _cumulative(stats, _named("chatmem/messages", "decode_message"))
    memory = _cumulative(stats, _named("memory.py", "get", "add"))
    repository = _cumulative(stats, _named("repository.py", "find_window", "append"))
    runner = _cumulative(stats, _named("runner.py", "execute"))
    rows = {
        "validation (conversation id)": validation,
        "message construction": construction,
        "codec (encode + decode)": encode + decode,
        "window selection (memory, outside the repository)": memory - repository - validation / 2,
        "statement building (parameters, rows)": repository
        - runner
        - encode
        - decode
        - validation / 2,
        "driver + statement runner": runner - waiting,
    }
    rows["other (event loop, interpreter)"] = profiled - sum(rows.values())
    scale = cpu / profiled  # profiled seconds (all turns) -> unprofiled seconds per turn
    print(
        f"wall {wall * 1e6:,.0f} us per turn, client CPU {cpu * 1e6:,.0f} us, "
        f"wait (server, network, scheduler) {max(wall - cpu, 0) * 1e6:,.0f} us; "
        f"{calls / turns:,.0f} Python calls per turn; load {os.getloadavg()[0]:.1f}"
    )
    for name, seconds in rows.items():
        print(f"  {name:<52} {seconds * scale * 1e6:8,.0f} us")


def run_sync(url: str, length: int, turns: int) -> None:
    repository = Neo4jChatMemoryRepository.from_url(url)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4().hex[:8]}"

    def loop() -> None:
        for _ in range(turns):
            memory.get(cid)
            memory.add(cid, [UserMessage(TEXT), AssistantMessage(TEXT)])

    try:
        for start in range(0, length, 1000):
            repository.append(cid, history(min(1000, length - start)))
        loop()  # warm-up
        began, cpu_began = time.perf_counter(), time.process_time()
        loop()
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
        profiler = cProfile.Profile()
        profiler.runcall(loop)
        report(profiler, turns, wall / turns, cpu / turns)
    finally:
        repository.delete_by_conversation_id(cid)
        repository.close()


async def run_async(url: str, length: int, turns: int) -> None:
    repository = AsyncNeo4jChatMemoryRepository.from_url(url)
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    cid = f"profile-{uuid.uuid4().hex[:8]}"

    async def loop() -> None:
        for _ in range(turns):
            await memory.get(cid)
            await memory.add(cid, [UserMessage(TEXT), AssistantMessage(TEXT)])

    try:
        for start in range(0, length, 1000):
            await repository.append(cid, history(min(1000, length - start)))
        await loop()  # warm-up
        began, cpu_began = time.perf_counter(), time.process_time()
        await loop()
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
        profiler = cProfile.Profile()
        profiler.enable()
        await loop()
        profiler.disable()
        report(profiler, turns, wall / turns, cpu / turns)
    finally:
        await repository.delete_by_conversation_id(cid)
        await repository.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="bolt://127.0.0.1:7687")
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--length", type=int, default=10, help="messages stored first")
    args = parser.parse_args()
    print(f"{'async' if args.use_async else 'sync'}, {args.length} stored, {args.turns} turns")
    if args.use_async:
        asyncio.run(run_async(args.url, args.length, args.turns))
    else:
        run_sync(args.url, args.length, args.turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
