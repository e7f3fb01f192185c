#!/usr/bin/env python3
"""Turns per second of the SQL repository as concurrent clients grow, in one process.

Each client (an asyncio task, or a thread with ``--sync``) does turns over its own 20
conversations, round robin: one turn is ``memory.get`` (a 20-message window) + ``add(user)``
+ ``add(assistant)``, 200-character messages. Every concurrency level runs for
``--seconds``; the output is turns/s and the p50/p99 turn latency per level.

Several configurations run side by side in one invocation (``--variant NAME=QUERY``, a URL
query of repository options; an empty query is the default), each level measured for every
variant before the next level, so machine noise hits them alike.

Usage:
    python benchmarks/sql_concurrency.py --url postgresql://test:test@127.0.0.1:54329/testdb \
        --variant "old=pool_size=5&max_overflow=20" --variant default=
    python benchmarks/sql_concurrency.py --url sqlite:////tmp/conc.db --sync
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
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
from chatmem_repositories import create_async_repository, create_repository, redact_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
PER_CLIENT = 20  # conversations per client
PREFIX = "chatmem_conc_"


def with_query(url: str, query: str) -> str:
    parts = [f"table_prefix={PREFIX}", "initialize_schema=always"]
    if query:
        parts.append(query)
    return url + ("&" if "?" in url else "?") + "&".join(parts)


def summary(latencies: list[float], seconds: float) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        return {"turns_per_s": 0.0, "p50_ms": 0.0, "p99_ms": 0.0}
    return {
        "turns_per_s": round(len(ordered) / seconds, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


async def level_async(repository: Any, clients: int, seconds: float, tag: str) -> dict[str, float]:
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    latencies: list[float] = []
    ids: list[str] = []
    stop = time.perf_counter() + seconds

    async def client(number: int) -> None:
        mine = [f"conc-{tag}-{clients}-{number}-{i}" for i in range(PER_CLIENT)]
        ids.extend(mine)
        turn = 0
        while time.perf_counter() < stop:
            cid = mine[turn % PER_CLIENT]
            turn += 1
            began = time.perf_counter()
            await memory.get(cid)
            await memory.add(cid, UserMessage(f"q{turn} {TEXT}"[:200]))
            await memory.add(cid, AssistantMessage(TEXT))
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    result = summary(latencies, time.perf_counter() - began)
    for cid in ids:
        await repository.delete_by_conversation_id(cid)
    return result


def level_sync(repository: Any, clients: int, seconds: float, tag: str) -> dict[str, float]:
    memory = MessageWindowChatMemory(repository, max_messages=20)
    latencies: list[float] = []
    ids: list[str] = []
    stop = time.perf_counter() + seconds

    def client(number: int) -> None:
        mine = [f"conc-{tag}-{clients}-{number}-{i}" for i in range(PER_CLIENT)]
        ids.extend(mine)
        turn = 0
        while time.perf_counter() < stop:
            cid = mine[turn % PER_CLIENT]
            turn += 1
            began = time.perf_counter()
            memory.get(cid)
            memory.add(cid, UserMessage(f"q{turn} {TEXT}"[:200]))
            memory.add(cid, AssistantMessage(TEXT))
            latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = summary(latencies, time.perf_counter() - began)
    for cid in ids:
        repository.delete_by_conversation_id(cid)
    return result


async def run_async(url: str, variants: dict[str, str], levels: list[int], seconds: float) -> Any:
    repositories = {
        name: create_async_repository(with_query(url, q)) for name, q in variants.items()
    }
    tag = uuid.uuid4().hex[:6]
    results: dict[str, dict[int, dict[str, float]]] = {name: {} for name in variants}
    try:
        for name, repository in repositories.items():  # warm-up: schema, connections
            await level_async(repository, 1, 0.5, f"{tag}w{name}")
        for clients in levels:
            for name, repository in repositories.items():
                row = await level_async(repository, clients, seconds, f"{tag}{name}")
                results[name][clients] = row
                print(f"{name:>12} {clients:>5} {row}", flush=True)
    finally:
        for repository in repositories.values():
            await repository.aclose()
    return results


def run_sync(url: str, variants: dict[str, str], levels: list[int], seconds: float) -> Any:
    repositories = {name: create_repository(with_query(url, q)) for name, q in variants.items()}
    tag = uuid.uuid4().hex[:6]
    results: dict[str, dict[int, dict[str, float]]] = {name: {} for name in variants}
    try:
        for name, repository in repositories.items():
            level_sync(repository, 1, 0.5, f"{tag}w{name}")
        for clients in levels:
            for name, repository in repositories.items():
                row = level_sync(repository, clients, seconds, f"{tag}{name}")
                results[name][clients] = row
                print(f"{name:>12} {clients:>5} {row}", flush=True)
    finally:
        for repository in repositories.values():
            repository.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="SQL repository URL")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME=QUERY: repository options as a URL query (repeatable; default: the defaults)",
    )
    parser.add_argument("--levels", default="1,4,8,16,32,128", help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each level")
    parser.add_argument("--sync", action="store_true", help="threads and the sync repository")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    variants = dict(v.partition("=")[::2] for v in args.variant) or {"default": ""}
    levels = [int(x) for x in args.levels.split(",")]
    if args.sync:
        results = run_sync(args.url, variants, levels, args.seconds)
    else:
        results = asyncio.run(run_async(args.url, variants, levels, args.seconds))
    print(f"\n{redact_url(args.url)} ({'sync, threads' if args.sync else 'async, tasks'})")
    names = list(variants)
    print(f"{'clients':>7} " + " ".join(f"{n + ' turns/s':>18} {'p50/p99 ms':>16}" for n in names))
    for clients in levels:
        cells = []
        for name in names:
            row = results[name][clients]
            cells.append(f"{row['turns_per_s']:>18.0f} {row['p50_ms']:>7.1f}/{row['p99_ms']:<8.1f}")
        print(f"{clients:>7} " + " ".join(cells))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"url": redact_url(args.url), "sync": args.sync, "results": results}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
