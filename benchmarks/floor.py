#!/usr/bin/env python3
"""chatmem's turn against the floor: the same driver doing the least a turn needs, no chatmem.

A chatmem turn is what MessageChatMemoryAdvisor does per request through
MessageWindowChatMemory (window of 20): get, then one add of the user message and the answer,
200-character messages. ``--adds 2`` measures an app that calls ``add`` once per message. The floor
(benchmarks/_floor_drivers.py) is one indexed read of the newest 20 rows of one conversation
and one round trip inserting two, with the same driver and connection settings. Both fill a
conversation of each length first; then turns are measured round-robin, alternating which of
the two goes first, so machine noise hits both alike. The ratio is chatmem / floor.

Usage:
    python benchmarks/floor.py --url postgresql+psycopg://test:test@127.0.0.1:54329/testdb
    python benchmarks/floor.py --url redis://127.0.0.1:63799/0 --async --lengths 10,1000
    python benchmarks/floor.py --url sqlite:////tmp/floor.db --turns 300 --json out.json
    python benchmarks/floor.py --table benchmarks/results   # Markdown from floor-*.json there
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _floor_drivers import TEXT, floor_for

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository, redact_url

BATCH = 1000
# chatmem creates its tables in a server database only when asked (SQLite gets them anyway).
SERVER_SQL = ("postgresql", "mysql", "mariadb")


def options(url: str) -> dict[str, Any]:
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    return {"initialize_schema": "always"} if scheme in SERVER_SQL else {}


def history(n: int) -> list[Message]:
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200]) for i in range(n)
    ]


def chunks(n: int) -> list[list[Message]]:
    messages = history(n)
    return [messages[start : start + BATCH] for start in range(0, n, BATCH)]


def run_sync(
    url: str, lengths: list[int], turns: int, warmup: int, adds: int = 1
) -> dict[str, Any]:
    repository = create_repository(url, **options(url))
    memory = MessageWindowChatMemory(repository, max_messages=20)
    floor: Any = None
    ids = {n: f"floor-{n}-{uuid.uuid4().hex[:8]}" for n in lengths}
    mine: dict[int, list[float]] = {n: [] for n in lengths}
    base: dict[int, list[float]] = {n: [] for n in lengths}
    try:
        for n, cid in ids.items():
            for chunk in chunks(n):
                repository.append(cid, chunk)
        floor = floor_for(url, is_async=False)  # after chatmem created its schema or keyspace
        for n, cid in ids.items():
            floor.fill(cid, n)
        for turn in range(warmup + turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                for which in (0, 1) if turn % 2 == 0 else (1, 0):
                    began = time.perf_counter()
                    if which == 0:
                        memory.get(cid)
                        if adds == 1:
                            memory.add(cid, [user, answer])
                        else:
                            memory.add(cid, user)
                            memory.add(cid, answer)
                    else:
                        floor.turn(cid)
                    elapsed = time.perf_counter() - began
                    if turn >= warmup:
                        (mine if which == 0 else base)[n].append(elapsed)
    finally:
        for cid in ids.values():
            repository.delete_by_conversation_id(cid)
        repository.close()
        if floor is not None:
            floor.close()
    return {"chatmem": mine, "floor": base}


async def run_async(
    url: str, lengths: list[int], turns: int, warmup: int, adds: int = 1
) -> dict[str, Any]:
    repository = create_async_repository(url, **options(url))
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    floor: Any = None
    ids = {n: f"floor-{n}-{uuid.uuid4().hex[:8]}" for n in lengths}
    mine: dict[int, list[float]] = {n: [] for n in lengths}
    base: dict[int, list[float]] = {n: [] for n in lengths}
    try:
        for n, cid in ids.items():
            for chunk in chunks(n):
                await repository.append(cid, chunk)
        floor = floor_for(url, is_async=True)  # after chatmem created its schema or keyspace
        for n, cid in ids.items():
            await floor.fill(cid, n)
        for turn in range(warmup + turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                for which in (0, 1) if turn % 2 == 0 else (1, 0):
                    began = time.perf_counter()
                    if which == 0:
                        await memory.get(cid)
                        if adds == 1:
                            await memory.add(cid, [user, answer])
                        else:
                            await memory.add(cid, user)
                            await memory.add(cid, answer)
                    else:
                        await floor.turn(cid)
                    elapsed = time.perf_counter() - began
                    if turn >= warmup:
                        (mine if which == 0 else base)[n].append(elapsed)
    finally:
        for cid in ids.values():
            await repository.delete_by_conversation_id(cid)
        await repository.aclose()
        if floor is not None:
            await floor.close()
    return {"chatmem": mine, "floor": base}


def summarize(samples: dict[str, Any]) -> dict[str, dict[str, float]]:
    rows = {}
    for n, values in samples["chatmem"].items():
        ours, floor = statistics.median(values), statistics.median(samples["floor"][n])
        rows[str(n)] = {
            "chatmem_ms": round(ours * 1000, 3),
            "floor_ms": round(floor * 1000, 3),
            "ratio": round(ours / floor, 2),
            "turns": len(values),
        }
    return rows


def table(directory: Path) -> str:
    """One Markdown table from the ``floor-*.json`` results in a directory."""
    lines = [
        "| backend | twin | stored | chatmem ms | floor ms | ratio | load (1 min) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    order = ["memory", "sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra"]
    order += ["neo4j"]

    def rank(path: Path) -> tuple[int, bool]:
        name = path.stem.split("-")[1]
        return order.index(name) if name in order else 99, path.stem.endswith("async")

    paths = sorted(directory.glob("floor-*.json"), key=rank)
    for path in paths:
        result = json.loads(path.read_text())
        name = path.stem.removeprefix("floor-").rsplit("-", 1)[0]
        for n, row in result["lengths"].items():
            lines.append(
                f"| {name} | {result['flavor']} | {int(n):,} | {row['chatmem_ms']:.3f} "
                f"| {row['floor_ms']:.3f} | {row['ratio']:.2f} | {result['load_average'][0]:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="memory://", help="repository URL")
    parser.add_argument("--lengths", default="10,1000,100000", help="stored history lengths")
    parser.add_argument("--turns", type=int, default=200, help="measured turns per length")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured turns per length")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async twin")
    parser.add_argument(
        "--adds", type=int, choices=(1, 2), default=1, help="adds per turn (the advisor does 1)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--table", type=Path, help="print a table of floor-*.json in this dir")
    args = parser.parse_args()
    if args.table:
        print(table(args.table), end="")
        return 0
    lengths = sorted(int(x) for x in args.lengths.split(","))
    began = time.perf_counter()
    if args.use_async:
        samples = asyncio.run(run_async(args.url, lengths, args.turns, args.warmup, args.adds))
    else:
        samples = run_sync(args.url, lengths, args.turns, args.warmup, args.adds)
    result = {
        "url": redact_url(args.url),
        "flavor": "async" if args.use_async else "sync",
        "turn": (
            "get (window 20) + add([user, assistant]), 200-char messages"
            if args.adds == 1
            else "get (window 20) + add(user) + add(assistant), 200-char messages"
        ),
        "adds": args.adds,
        "floor": "newest-20 indexed read + one two-row insert, same driver, no chatmem",
        "lengths": summarize(samples),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "wall_seconds": round(time.perf_counter() - began, 1),
    }
    print(f"{result['url']} ({result['flavor']}), load {result['load_average']}")
    print(f"{'stored':>8} {'chatmem ms':>11} {'floor ms':>9} {'ratio':>6}")
    for n, row in result["lengths"].items():
        print(f"{n:>8} {row['chatmem_ms']:>11.3f} {row['floor_ms']:>9.3f} {row['ratio']:>6.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
