#!/usr/bin/env python3
"""Per-turn cost of LangChain chat message histories: chatmem's against LangChain's own.

One turn is what ``RunnableWithMessageHistory`` does per call: read ``history.messages``,
then add the new human and AI messages. Each history first holds ``n`` stored messages; the
histories take turns, round robin, and the median per history is reported.
Measured, in one run against the same servers:

- ``ChatmemMessageHistory`` on PostgreSQL and Redis, reading the whole history (the default)
  and a 20-message turn-safe window (``max_messages=20``);
- LangChain's own: ``langchain_postgres.PostgresChatMessageHistory`` and
  ``langchain_community.chat_message_histories.RedisChatMessageHistory`` (plain Redis lists;
  ``langchain-redis`` needs RediSearch, which plain Redis does not have).

Needs ``pip install "chatmem[langchain,postgresql,redis]" langchain-postgres
langchain-community``. Usage:

    python benchmarks/langchain_history.py \
        --postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --redis redis://127.0.0.1:63799/0
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from langchain_community.chat_message_histories import RedisChatMessageHistory
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_postgres import PostgresChatMessageHistory

from chatmem import AssistantMessage, UserMessage
from chatmem.interop.langchain import ChatmemMessageHistory
from chatmem_repositories import create_repository

TABLE = "langchain_bench_history"


def turn_messages(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"question {i}: " + "lorem ipsum " * 8),
        AIMessage(f"answer {i}: " + "dolor sit amet " * 8),
    ]


def chatmem_prefill(repository: Any, conversation_id: str, n: int) -> None:
    batch = []
    for i in range(n // 2):
        batch += [
            UserMessage(f"question {i}: " + "lorem ipsum " * 8),
            AssistantMessage(f"answer {i}: " + "dolor sit amet " * 8),
        ]
        if len(batch) >= 1000:
            repository.append(conversation_id, batch)
            batch = []
    if batch:
        repository.append(conversation_id, batch)


def lc_prefill(history: BaseChatMessageHistory, n: int) -> None:
    messages: list[BaseMessage] = []
    for i in range(n // 2):
        messages += turn_messages(i)
    for start in range(0, len(messages), 1000):
        history.add_messages(messages[start : start + 1000])


def measure(history: BaseChatMessageHistory, turn: int) -> float:
    started = time.perf_counter()
    _ = history.messages
    history.add_messages(turn_messages(100_000 + turn))
    return (time.perf_counter() - started) * 1000


@contextmanager
def histories(
    pg_url: str, redis_url: str
) -> Iterator[dict[str, Callable[[int], BaseChatMessageHistory]]]:
    # A server database gets chatmem's tables only when asked (SQLite gets them by default).
    pg = create_repository(pg_url, initialize_schema="always")
    rd = create_repository(redis_url)
    connection = psycopg.connect(
        pg_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
    )
    PostgresChatMessageHistory.create_tables(connection, TABLE)
    made: list[tuple[str, Any]] = []

    def chatmem(repository: Any, window: int | None) -> Callable[[int], BaseChatMessageHistory]:
        def make(n: int) -> BaseChatMessageHistory:
            conversation = f"lc-bench-{uuid.uuid4().hex}"
            chatmem_prefill(repository, conversation, n)
            made.append(("chatmem", (repository, conversation)))
            return ChatmemMessageHistory(conversation, repository, max_messages=window)

        return make

    def lc_postgres(n: int) -> BaseChatMessageHistory:
        history = PostgresChatMessageHistory(TABLE, str(uuid.uuid4()), sync_connection=connection)
        lc_prefill(history, n)
        made.append(("lc", history))
        return history

    def lc_redis(n: int) -> BaseChatMessageHistory:
        history = RedisChatMessageHistory(f"lc-bench-{uuid.uuid4().hex}", url=redis_url)
        lc_prefill(history, n)
        made.append(("lc", history))
        return history

    try:
        yield {
            "PostgreSQL: LangChain (langchain-postgres)": lc_postgres,
            "PostgreSQL: chatmem, whole history": chatmem(pg, None),
            "PostgreSQL: chatmem, window of 20": chatmem(pg, 20),
            "Redis: LangChain (langchain-community)": lc_redis,
            "Redis: chatmem, whole history": chatmem(rd, None),
            "Redis: chatmem, window of 20": chatmem(rd, 20),
        }
    finally:
        for kind, item in made:
            if kind == "chatmem":
                item[0].delete_by_conversation_id(item[1])
            else:
                item.clear()
        connection.close()
        pg.close()
        rd.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgresql", default="postgresql+psycopg://test:test@127.0.0.1:54329/testdb"
    )
    parser.add_argument("--redis", default="redis://127.0.0.1:63799/0")
    parser.add_argument("--sizes", default="10,10000")
    parser.add_argument("--turns", type=int, default=21)
    parser.add_argument(
        "--per-history",
        type=int,
        default=5,
        help="turns on one history before fresh ones are made, so a turn reads about n messages",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int], float] = {}
    with histories(args.postgresql, args.redis) as makers:
        for n in sizes:
            timings: dict[str, list[float]] = {name: [] for name in makers}
            made: dict[str, BaseChatMessageHistory] = {}
            for turn in range(args.turns + 2):
                if turn % args.per_history == 0:
                    made = {name: make(n) for name, make in makers.items()}
                # Round robin, so load from elsewhere on the machine falls on every history.
                for name, history in made.items():
                    elapsed = measure(history, turn)
                    if turn >= 2:  # the first two warm connections and statement caches
                        timings[name].append(elapsed)
            for name in made:
                results[(name, n)] = statistics.median(timings[name])
    print(
        f"Median ms per turn (read history + add 2 messages), {args.turns} turns each, "
        f"fresh histories of n messages every {args.per_history} turns.\n"
    )
    header = " | ".join(f"n={n:,}" for n in sizes)
    ratios = " | ".join(f"vs LangChain, n={n:,}" for n in sizes)
    print(f"| history | {header} | {ratios} |")
    print("| --- |" + " ---: |" * (2 * len(sizes)))
    for name in makers:
        store = name.split(":")[0]
        baseline = next(k for k in makers if k.startswith(store) and "LangChain" in k)
        cells = " | ".join(f"{results[(name, n)]:.2f}" for n in sizes)
        rel = " | ".join(f"{results[(name, n)] / results[(baseline, n)]:.2f}x" for n in sizes)
        print(f"| {name} | {cells} | {rel} |")


if __name__ == "__main__":
    main()
