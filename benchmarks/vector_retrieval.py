"""Retrieval latency of the vector stores: top-20 search filtered to one conversation.

Each store is filled with N entries (256-dimensional hashing embeddings, precomputed, so
the numbers measure the store and not the model), spread over conversations of
``--per-conversation`` entries each, then queried ``--queries`` times with a filter on one
conversation (and its owner). Medians are printed side by side.

Usage:
    python benchmarks/vector_retrieval.py                      # 1,000 and 100,000 entries
    python benchmarks/vector_retrieval.py --sizes 1000 --stores memory,neo4j
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from chatmem.testing.vectors import AsyncHashingEmbeddingModel, hashing_embedding
from chatmem.vector_store import AsyncInMemoryVectorStore, AsyncVectorStore, VectorDocument

WORDS = [
    "river",
    "train",
    "bread",
    "chess",
    "cloud",
    "jazz",
    "map",
    "tea",
    "owl",
    "garden",
    "winter",
    "coffee",
    "letter",
    "bridge",
    "violin",
    "market",
    "harbour",
    "lantern",
    "pepper",
    "meadow",
    "castle",
    "rocket",
    "silver",
    "copper",
    "maple",
]
TOP_K = 20
FILL_BATCH = 1000


def entry(i: int, per_conversation: int, rng: random.Random) -> VectorDocument:
    conversation = i // per_conversation
    text = " ".join(rng.choice(WORDS) for _ in range(12)) + f" note {i}"
    return VectorDocument(
        id=f"bench-{i}",
        text=text,
        metadata={"conversation_id": f"conv-{conversation}", "owner": f"user-{conversation % 97}"},
        embedding=hashing_embedding(text),
    )


async def fill(store: AsyncVectorStore, size: int, start: int, per_conversation: int) -> float:
    rng = random.Random(start)
    began = time.perf_counter()
    for first in range(start, size, FILL_BATCH):
        batch = [
            entry(i, per_conversation, rng) for i in range(first, min(size, first + FILL_BATCH))
        ]
        await store.add(batch)
    return time.perf_counter() - began


async def measure(store: AsyncVectorStore, size: int, per_conversation: int, queries: int) -> float:
    rng = random.Random(7)
    conversations = max(1, size // per_conversation)
    timings = []
    for q in range(queries + 5):
        conversation = rng.randrange(conversations)
        where = {"conversation_id": f"conv-{conversation}", "owner": f"user-{conversation % 97}"}
        vector = hashing_embedding(" ".join(rng.choice(WORDS) for _ in range(6)))
        began = time.perf_counter()
        found = await store.similarity_search_by_vector(vector, top_k=TOP_K, where=where)
        elapsed = time.perf_counter() - began
        assert len(found) == min(TOP_K, per_conversation, size), len(found)
        assert all(d.metadata["conversation_id"] == f"conv-{conversation}" for d in found)
        if q >= 5:  # warm-up queries are not counted
            timings.append(elapsed)
    return statistics.median(timings) * 1000


# -- stores ----------------------------------------------------------------------------------

Opened = tuple[AsyncVectorStore, Callable[[], Awaitable[None]]]


async def open_memory() -> Opened:
    store = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())

    async def close() -> None:
        await store.aclose()

    return store, close


async def open_neo4j() -> Opened:
    from neo4j import AsyncGraphDatabase

    from chatmem_repositories.neo4j import AsyncNeo4jVectorStore

    driver = AsyncGraphDatabase.driver("bolt://127.0.0.1:7687")
    await _neo4j_drop(driver)
    store = AsyncNeo4jVectorStore(driver, AsyncHashingEmbeddingModel(), label="VecBenchDocument")

    async def close() -> None:
        await _neo4j_drop(driver)
        await driver.close()

    return store, close


async def _neo4j_drop(driver: Any) -> None:
    async with driver.session() as session:
        await (
            await session.run(
                "MATCH (n:VecBenchDocument) CALL { WITH n DELETE n } IN TRANSACTIONS OF 10000 ROWS"
            )
        ).consume()


async def open_cassandra() -> Opened:
    from cassandra.cluster import Cluster

    from chatmem_repositories.cassandra import AsyncCassandraVectorStore

    cluster = Cluster(["127.0.0.1"], port=9042)
    session = cluster.connect()
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS chatmem_vectors_bench WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.execute("DROP TABLE IF EXISTS chatmem_vectors_bench.vec_bench", timeout=120)
    store = AsyncCassandraVectorStore(
        session, AsyncHashingEmbeddingModel(), keyspace="chatmem_vectors_bench", table="vec_bench"
    )

    async def close() -> None:
        session.execute("DROP TABLE IF EXISTS chatmem_vectors_bench.vec_bench", timeout=120)
        cluster.shutdown()

    return store, close


OPENERS = {"memory": open_memory, "neo4j": open_neo4j, "cassandra": open_cassandra}


async def run(stores: list[str], sizes: list[int], per_conversation: int, queries: int) -> None:
    results: dict[str, dict[int, tuple[float, float]]] = {}
    for name in stores:
        store, close = await OPENERS[name]()
        results[name] = {}
        filled = 0
        try:
            for size in sorted(sizes):
                fill_seconds = await fill(store, size, filled, per_conversation)
                filled = size
                median = await measure(store, size, per_conversation, queries)
                results[name][size] = (median, fill_seconds)
                print(
                    f"{name:10} {size:>8,} entries: median {median:7.2f} ms "
                    f"(filled {fill_seconds:6.1f} s)",
                    flush=True,
                )
        finally:
            await close()
    print(
        f"\ntop-{TOP_K} search filtered to one conversation ({per_conversation} entries each), "
        f"median of {queries} queries, ms"
    )
    print("| store | " + " | ".join(f"{s:,} entries" for s in sorted(sizes)) + " |")
    print("| --- |" + " ---: |" * len(sizes))
    for name, by_size in results.items():
        cells = [f"{by_size[s][0]:.2f}" if s in by_size else "-" for s in sorted(sizes)]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="memory,neo4j,cassandra")
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--per-conversation", type=int, default=100)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(
        run(
            args.stores.split(","),
            [int(s) for s in args.sizes.split(",")],
            args.per_conversation,
            args.queries,
        )
    )


if __name__ == "__main__":
    main()
