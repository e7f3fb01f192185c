#!/usr/bin/env python3
"""Per-turn memory cost against stored history length, for any repository URL.

One turn is what a chat app does per request: read the memory (a 20-message window), append
the user message, append the assistant message. Histories of every length are filled first;
then turns are measured round-robin across the lengths, so machine noise hits them alike and
the ratios (cost at N / cost at 10) are measured side by side in one run.

Usage:
    python benchmarks/turns.py --url memory://
    python benchmarks/turns.py --url postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --lengths 10,1000,100000 --turns 300 --json results/postgresql.json
    python benchmarks/turns.py --url redis://127.0.0.1:63799/0 --async
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    Message,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import (
    create_async_repository,
    create_repository,
    redact_url,
)

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
BATCH = 1000


def history(n: int) -> list[Message]:
    return [
        (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200]) for i in range(n)
    ]


def summarize(samples: dict[int, list[float]]) -> dict[str, Any]:
    base = statistics.median(samples[min(samples)])
    rows = {}
    for length, values in samples.items():
        median = statistics.median(values)
        rows[str(length)] = {
            "median_ms": round(median * 1000, 4),
            "p90_ms": round(sorted(values)[int(len(values) * 0.9) - 1] * 1000, 4),
            "ratio_to_smallest": round(median / base, 3),
            "turns": len(values),
        }
    return rows


def run_sync(url: str, lengths: list[int], turns: int, warmup: int) -> dict[int, list[float]]:
    repository = create_repository(url)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    ids = {n: f"bench-{n}-{uuid.uuid4().hex[:8]}" for n in lengths}
    samples: dict[int, list[float]] = {n: [] for n in lengths}
    try:
        for n, cid in ids.items():
            messages = history(n)
            for start in range(0, n, BATCH):
                repository.append(cid, messages[start : start + BATCH])
        for turn in range(warmup + turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                began = time.perf_counter()
                memory.get(cid)
                memory.add(cid, user)
                memory.add(cid, answer)
                elapsed = time.perf_counter() - began
                if turn >= warmup:
                    samples[n].append(elapsed)
    finally:
        for cid in ids.values():
            repository.delete_by_conversation_id(cid)
        repository.close()
    return samples


async def run_async(
    url: str, lengths: list[int], turns: int, warmup: int
) -> dict[int, list[float]]:
    repository = create_async_repository(url)
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    ids = {n: f"bench-{n}-{uuid.uuid4().hex[:8]}" for n in lengths}
    samples: dict[int, list[float]] = {n: [] for n in lengths}
    try:
        for n, cid in ids.items():
            messages = history(n)
            for start in range(0, n, BATCH):
                await repository.append(cid, messages[start : start + BATCH])
        for turn in range(warmup + turns):
            for n, cid in ids.items():
                user, answer = UserMessage(f"q{turn} {TEXT}"[:200]), AssistantMessage(TEXT)
                began = time.perf_counter()
                await memory.get(cid)
                await memory.add(cid, user)
                await memory.add(cid, answer)
                elapsed = time.perf_counter() - began
                if turn >= warmup:
                    samples[n].append(elapsed)
    finally:
        for cid in ids.values():
            await repository.delete_by_conversation_id(cid)
        await repository.aclose()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="memory://", help="repository URL")
    parser.add_argument("--lengths", default="10,1000,100000", help="stored history lengths")
    parser.add_argument("--turns", type=int, default=200, help="measured turns per length")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured turns per length")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async twin")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    lengths = sorted(int(x) for x in args.lengths.split(","))
    began = time.perf_counter()
    if args.use_async:
        samples = asyncio.run(run_async(args.url, lengths, args.turns, args.warmup))
    else:
        samples = run_sync(args.url, lengths, args.turns, args.warmup)
    result = {
        "url": redact_url(args.url),
        "flavor": "async" if args.use_async else "sync",
        "turn": "memory.get (max_messages=20) + add(user) + add(assistant), 200-char messages",
        "lengths": summarize(samples),
        "wall_seconds": round(time.perf_counter() - began, 1),
    }
    print(f"{result['url']} ({result['flavor']}): per-turn cost by stored history length")
    print(f"{'stored':>10} {'median ms':>10} {'p90 ms':>10} {'ratio':>7}")
    for length, row in result["lengths"].items():
        print(
            f"{length:>10} {row['median_ms']:>10.3f} {row['p90_ms']:>10.3f} "
            f"{row['ratio_to_smallest']:>7.2f}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
