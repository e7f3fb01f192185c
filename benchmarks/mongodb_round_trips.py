#!/usr/bin/env python3
"""Count the MongoDB commands of a memory turn, and time them, with pymongo's command monitoring.

A turn is what the memory advisor does: ``memory.get(cid)`` then one
``memory.add(cid, [user, answer])``. For each part the script prints the commands sent per
turn, by name, and the mean time each kind of command took from send to reply (the server's
work plus the network, as pymongo's monitoring measures it).

Usage:
    python benchmarks/mongodb_round_trips.py --url mongodb://127.0.0.1:27027/chatmem_bench
    python benchmarks/mongodb_round_trips.py --url ... --ttl 3600   # with stored expiry
    python benchmarks/mongodb_round_trips.py --url ... --async      # the asyncio client
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import monitoring

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem_repositories.mongodb import AsyncMongoChatMemoryRepository, MongoChatMemoryRepository


class Counting(monitoring.CommandListener):
    """Counts started commands by name and sums their durations (microseconds)."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.micros: Counter[str] = Counter()
        self._keys: dict[int, str] = {}

    def clear(self) -> None:
        self.names.clear()
        self.micros.clear()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        target = event.command.get(event.command_name)
        suffix = str(target).rsplit("_", 1)[-1] if isinstance(target, str) else ""
        key = f"{event.command_name} {suffix}".strip()  # such as "find messages"
        self._keys[event.request_id] = key
        self.names[key] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.micros[self._keys.pop(event.request_id, event.command_name)] += event.duration_micros

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.micros[self._keys.pop(event.request_id, event.command_name)] += event.duration_micros


class Totals:
    """Commands and their time of one part of the turn (read or append), over all turns."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.micros: Counter[str] = Counter()

    def take(self, counter: Counting) -> None:
        self.names += counter.names
        self.micros += counter.micros
        counter.clear()

    def line(self, label: str, turns: int) -> str:
        per_turn = sum(self.names.values()) / turns
        parts = ", ".join(
            f"{name} {count / turns:g} x {self.micros[name] / count / 1000:.2f} ms"
            for name, count in sorted(self.names.items())
        )
        return f"{label:<8} {per_turn:g} commands per turn ({parts})"


def _setup(args: argparse.Namespace, counter: Counting) -> tuple[dict[str, Any], str]:
    prefix = f"rt{uuid.uuid4().hex[:6]}_"
    options: dict[str, Any] = {
        "collection_prefix": prefix,
        "driver_options": {"event_listeners": [counter]},
    }
    if args.ttl:
        options["ttl"] = args.ttl
    return options, f"rt-{uuid.uuid4()}"


def _first_messages() -> list[Any]:
    return [SystemMessage("You are terse."), UserMessage("hi"), AssistantMessage("hi")]


def run_sync(args: argparse.Namespace) -> tuple[Totals, Totals]:
    counter = Counting()
    options, cid = _setup(args, counter)
    reads, appends = Totals(), Totals()
    with MongoChatMemoryRepository.from_url(args.url, **options) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        memory.add(cid, _first_messages())
        memory.get(cid)
        counter.clear()
        for i in range(args.turns):
            memory.get(cid)
            reads.take(counter)
            memory.add(cid, [UserMessage(f"question {i}"), AssistantMessage(f"answer {i}")])
            appends.take(counter)
        for collection in (repository._messages, repository._conversations):
            collection.drop()
        repository._summaries_collection.drop()
    return reads, appends


async def run_async(args: argparse.Namespace) -> tuple[Totals, Totals]:
    counter = Counting()
    options, cid = _setup(args, counter)
    reads, appends = Totals(), Totals()
    async with AsyncMongoChatMemoryRepository.from_url(args.url, **options) as repository:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
        await memory.add(cid, _first_messages())
        await memory.get(cid)
        counter.clear()
        for i in range(args.turns):
            await memory.get(cid)
            reads.take(counter)
            await memory.add(cid, [UserMessage(f"question {i}"), AssistantMessage(f"answer {i}")])
            appends.take(counter)
        for collection in (repository._messages, repository._conversations):
            await collection.drop()
        await repository._summaries_collection.drop()
    return reads, appends


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="mongodb://127.0.0.1:27027/chatmem_bench")
    parser.add_argument("--ttl", type=float, default=None, help="seconds; default: no TTL")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--async", dest="is_async", action="store_true")
    args = parser.parse_args()
    reads, appends = asyncio.run(run_async(args)) if args.is_async else run_sync(args)
    print(reads.line("read", args.turns))
    print(appends.line("append", args.turns))
    total = (sum(reads.names.values()) + sum(appends.names.values())) / args.turns
    print(f"turn     {total:g} commands per turn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
