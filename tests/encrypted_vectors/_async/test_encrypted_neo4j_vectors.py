"""The encrypted vector store over Neo4j: conformance, and nodes read below the wrapper."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from neo4j import Driver, GraphDatabase

from chatmem.encryption import AsyncEncryptedVectorStore
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, AsyncVectorStoreConformance
from chatmem.vector_store import AsyncVectorStore
from chatmem_repositories.neo4j import AsyncNeo4jVectorStore
from tests.encrypted_vectors._async.checks import (
    AsyncEncryptedVectorChecks,
    RawStorage,
    conformance_wrapper,
)
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")

LABEL = "VecEncryptedDocument"
INDEXED = ("tenant", "conversation_id", "owner")


@pytest.fixture(scope="module")
def url() -> str:
    return server_url("neo4j")


@pytest.fixture(scope="module")
def driver(url: str) -> Iterator[Driver]:
    """A driver of its own, to read the nodes as another client would."""
    with GraphDatabase.driver(url, auth=None, notifications_min_severity="OFF") as driver:
        yield driver


class TestEncryptedNeo4jVectorsAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self, url: str
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncEncryptedVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncEncryptedVectorStore:
            store = AsyncNeo4jVectorStore.from_url(url, model, label=LABEL, indexed_keys=INDEXED)
            return conformance_wrapper(store)

        return factory


class TestEncryptedNeo4jStorageAsync(AsyncEncryptedVectorChecks):
    @pytest.fixture
    async def inner_store(self, url: str) -> AsyncIterator[AsyncNeo4jVectorStore]:
        model = AsyncHashingEmbeddingModel()
        store = AsyncNeo4jVectorStore.from_url(url, model, label=LABEL, indexed_keys=INDEXED)
        yield store
        await store.aclose()

    @pytest.fixture
    def raw_storage(self, driver: Driver) -> RawStorage:
        def properties(store: AsyncVectorStore, ids: list[str]) -> str:
            records = driver.execute_query(
                f"MATCH (n:{LABEL}) WHERE n.id IN $ids RETURN properties(n) AS p", ids=ids
            ).records
            return repr([record["p"] for record in records])

        return properties
