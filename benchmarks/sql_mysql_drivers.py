#!/usr/bin/env python3
"""MySQL/MariaDB drivers side by side: a turn through chatmem on each, interleaved.

Sync: pymysql (pure Python) and mysqlclient (``mysql+mysqldb://``, C, libmariadb); async:
aiomysql and asyncmy. One turn is ``memory.get`` (20-message window) + ``add(user)`` +
``add(assistant)``; the drivers take turns round robin in one process, so the load of the
machine hits them alike. Drivers that are not installed are skipped. Usage:

    python benchmarks/sql_mysql_drivers.py --url mysql://test:test@127.0.0.1:33061/testdb
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]


def with_driver(url: str, driver: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme.split('+')[0]}+{driver}://{rest}"


def report(samples: dict[str, list[float]]) -> None:
    for name, values in samples.items():
        print(f"  {name:<10} median {statistics.median(values) * 1000:7.3f} ms/turn")


def run_sync(url: str, turns: int) -> None:
    memories: dict[str, Any] = {}
    for driver in ("pymysql", "mysqldb"):
        try:
            memories[driver] = MessageWindowChatMemory(
                create_repository(with_driver(url, driver)), max_messages=20
            )
        except Exception as exc:
            print(f"  {driver}: skipped ({exc})")
    cid = f"drivers-{uuid.uuid4().hex[:8]}"
    samples: dict[str, list[float]] = {name: [] for name in memories}
    for turn in range(turns + 20):
        for name, memory in memories.items():
            began = time.perf_counter()
            memory.get(f"{cid}-{name}")
            memory.add(f"{cid}-{name}", UserMessage(f"q{turn} {TEXT}"[:200]))
            memory.add(f"{cid}-{name}", AssistantMessage(TEXT))
            if turn >= 20:
                samples[name].append(time.perf_counter() - began)
    for name, memory in memories.items():
        memory.repository.delete_by_conversation_id(f"{cid}-{name}")
        memory.repository.close()
    report(samples)


async def run_async(url: str, turns: int) -> None:
    memories: dict[str, Any] = {}
    for driver in ("aiomysql", "asyncmy"):
        try:
            memories[driver] = AsyncMessageWindowChatMemory(
                create_async_repository(with_driver(url, driver)), max_messages=20
            )
        except Exception as exc:
            print(f"  {driver}: skipped ({exc})")
    cid = f"drivers-{uuid.uuid4().hex[:8]}"
    samples: dict[str, list[float]] = {name: [] for name in memories}
    for turn in range(turns + 20):
        for name, memory in memories.items():
            began = time.perf_counter()
            await memory.get(f"{cid}-{name}")
            await memory.add(f"{cid}-{name}", UserMessage(f"q{turn} {TEXT}"[:200]))
            await memory.add(f"{cid}-{name}", AssistantMessage(TEXT))
            if turn >= 20:
                samples[name].append(time.perf_counter() - began)
    for name, memory in memories.items():
        await memory.repository.delete_by_conversation_id(f"{cid}-{name}")
        await memory.repository.aclose()
    report(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a mysql:// or mariadb:// URL")
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    print("sync")
    run_sync(args.url, args.turns)
    print("async")
    asyncio.run(run_async(args.url, args.turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
