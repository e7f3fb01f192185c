#!/usr/bin/env python3
"""Per-turn cost of OpenAI Agents SDK sessions: chatmem's ChatmemSession against the SDK's own.

One turn is what the SDK's Runner does with a session per model call once a limit is set:
``get_items(limit)``, then ``add_items`` of the user's item and the assistant's answer. Each
session first holds ``n`` items; the sessions take turns, round robin, and the median per
session is reported. Measured, in one run, each pair on the same store:

- PostgreSQL: the SDK's ``SQLAlchemySession`` and chatmem's SQL repository, both through
  SQLAlchemy with psycopg's async driver (the same URL), so the drivers do not differ;
- Redis: the SDK's ``RedisSession`` and chatmem's Redis repository;
- SQLite: the SDK's ``SQLiteSession`` and chatmem's SQL repository (aiosqlite), each on a
  file of its own.

Needs ``pip install "chatmem[openai-agents,postgresql,redis,sqlite]"
"openai-agents[redis,sqlalchemy]"`` (the dev extra has them). Usage:

    python benchmarks/openai_agents_session.py \
        --postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --redis redis://127.0.0.1:63799/0
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import SQLiteSession
from agents.extensions.memory import RedisSession, SQLAlchemySession
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import create_async_engine

from benchmarks._measure import load_average
from chatmem.interop.openai_agents import ChatmemSession
from chatmem_repositories import create_async_repository

SDK_SESSIONS = "bench_agent_sessions"
SDK_MESSAGES = "bench_agent_messages"
REDIS_PREFIX = "bench-agents"
LIMIT = 20  # items read per turn


def turn_items(i: int) -> list[dict[str, Any]]:
    """The user's item and the assistant's answer, as the Runner adds them."""
    return [
        {"role": "user", "content": f"question {i}: " + "lorem ipsum " * 8},
        {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": f"answer {i}: " + "dolor sit " * 8,
                    "annotations": [],
                }
            ],
        },
    ]


async def prefill(session: Any, n: int) -> None:
    items = [item for i in range(n // 2) for item in turn_items(i)][:n]
    for start in range(0, len(items), 1000):
        await session.add_items(items[start : start + 1000])


async def measure(session: Any, turn: int) -> float:
    started = time.perf_counter()
    await session.get_items(LIMIT)
    await session.add_items(turn_items(1_000_000 + turn))
    return (time.perf_counter() - started) * 1000


Maker = Callable[[], Any]


@asynccontextmanager
async def makers(
    pg_url: str, redis_url: str, directory: Path, stores: set[str]
) -> AsyncIterator[dict[str, Maker]]:
    # A server database gets chatmem's tables only when asked (SQLite gets them by default).
    pg = create_async_repository(pg_url, initialize_schema="always")
    rd = create_async_repository(redis_url)
    lite = create_async_repository(f"sqlite:///{directory / 'chatmem.db'}")
    engine = create_async_engine(pg_url)
    redis = Redis.from_url(redis_url)
    made: list[Any] = []

    def new_id() -> str:
        return f"agents-bench-{uuid.uuid4().hex}"

    def keep(session: Any) -> Any:
        made.append(session)
        return session

    try:
        yield {
            name: maker
            for name, maker in {
                "PostgreSQL: SDK SQLAlchemySession": lambda: keep(
                    SQLAlchemySession(
                        new_id(),
                        engine=engine,
                        create_tables=True,
                        sessions_table=SDK_SESSIONS,
                        messages_table=SDK_MESSAGES,
                    )
                ),
                "PostgreSQL: chatmem": lambda: keep(ChatmemSession(new_id(), pg)),
                "Redis: SDK RedisSession": lambda: keep(
                    RedisSession(new_id(), redis_client=redis, key_prefix=REDIS_PREFIX)
                ),
                "Redis: chatmem": lambda: keep(ChatmemSession(new_id(), rd)),
                "SQLite: SDK SQLiteSession": lambda: keep(
                    SQLiteSession(new_id(), directory / "sdk.db")
                ),
                "SQLite: chatmem": lambda: keep(ChatmemSession(new_id(), lite)),
            }.items()
            if name.split(":")[0].lower() in stores
        }
    finally:
        for session in made:
            await session.clear_session()
            if isinstance(session, SQLiteSession):
                session.close()
        await redis.aclose()
        await engine.dispose()
        for repository in (pg, rd, lite):
            await repository.aclose()


async def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as directory:
        stores = set(args.stores.split(","))
        async with makers(args.postgresql, args.redis, Path(directory), stores) as make:
            for n in sizes:
                sessions = {name: maker() for name, maker in make.items()}
                for session in sessions.values():
                    await prefill(session, n)
                timings: dict[str, list[float]] = {name: [] for name in sessions}
                for turn in range(args.turns + 2):
                    # Round robin, so load from elsewhere on the machine falls on every session.
                    for name, session in sessions.items():
                        elapsed = await measure(session, turn)
                        if turn >= 2:  # the first two warm connections and statement caches
                            timings[name].append(elapsed)
                for name in sessions:
                    results[(name, n)] = statistics.median(timings[name])
    names = list(make)
    print(
        f"Median ms per turn (get_items({LIMIT}) + add_items of 2 items), {args.turns} turns "
        f"each, on sessions holding n items; load average {load_average()}.\n"
    )
    header = " | ".join(f"n={n:,}" for n in sizes)
    ratios = " | ".join(f"vs the SDK, n={n:,}" for n in sizes)
    print(f"| session | {header} | {ratios} |")
    print("| --- |" + " ---: |" * (2 * len(sizes)))
    for name in names:
        store = name.split(":")[0]
        baseline = next(k for k in names if k.startswith(store) and "SDK" in k)
        cells = " | ".join(f"{results[(name, n)]:.2f}" for n in sizes)
        rel = " | ".join(f"{results[(name, n)] / results[(baseline, n)]:.2f}x" for n in sizes)
        print(f"| {name} | {cells} | {rel} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgresql",
        default=os.environ.get(
            "CHATMEM_TEST_POSTGRESQL_URL", "postgresql+psycopg://test:test@127.0.0.1:54329/testdb"
        ),
    )
    parser.add_argument(
        "--redis", default=os.environ.get("CHATMEM_TEST_REDIS_URL", "redis://127.0.0.1:63799/0")
    )
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--stores", default="postgresql,redis,sqlite")
    parser.add_argument("--turns", type=int, default=21)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
