"""``vector``: retrieval latency of the vector stores, top-20 search filtered to one conversation.

Each store is filled with ``--sizes`` entries (256-dimensional hashing embeddings, precomputed,
so the numbers measure the store and not the model), spread over conversations of 100 entries,
then queried ``--turns`` times with a filter on one conversation and its owner.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from benchmarks.harness import Run, scenario
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
PER_CONVERSATION = 100


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


async def measure(
    store: AsyncVectorStore, size: int, per_conversation: int, queries: int
) -> list[float]:
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
    return [t * 1000 for t in timings]


Opened = tuple[AsyncVectorStore, Callable[[], Awaitable[None]]]


async def open_memory(url: str) -> Opened:
    store = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())

    async def close() -> None:
        await store.aclose()

    return store, close


async def open_neo4j(url: str) -> Opened:
    from neo4j import AsyncGraphDatabase

    from chatmem_repositories.neo4j import AsyncNeo4jVectorStore

    driver = AsyncGraphDatabase.driver(url.split("?", 1)[0])
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


async def open_cassandra(url: str) -> Opened:
    from cassandra.cluster import Cluster

    from chatmem_repositories.cassandra import AsyncCassandraVectorStore

    parts = urlsplit(url)
    cluster = Cluster([parts.hostname or "127.0.0.1"], port=parts.port or 9042)
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


async def _run(run: Run) -> None:
    assert run.backend
    assert run.url
    store, close = await OPENERS[run.backend](run.url)
    try:
        filled = 0
        for size in run.sizes:
            await fill(store, size, filled, PER_CONVERSATION)
            filled = size
            samples = await measure(store, size, PER_CONVERSATION, run.turns)
            run.record({"n": size, "top_k": TOP_K, "per_conversation": PER_CONVERSATION}, samples)
    finally:
        await close()


@scenario("vector", backends=("memory", "neo4j"), sizes=(1000, 10000), turns=100)
def vector(run: Run) -> None:
    """Top-20 vector search filtered to one conversation, against the number of entries."""
    asyncio.run(_run(run))
