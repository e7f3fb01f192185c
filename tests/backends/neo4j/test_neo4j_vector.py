"""The vector-store conformance suite on a real Neo4j server, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from chatmem.exceptions import ConfigurationError
from chatmem.testing.vectors import (
    AsyncHashingEmbeddingModel,
    AsyncVectorStoreConformance,
    HashingEmbeddingModel,
    VectorStoreConformance,
)
from chatmem.vector_store import VectorDocument
from chatmem_repositories.neo4j import AsyncNeo4jVectorStore, Neo4jVectorStore
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")

LABEL = "VecConformanceDocument"


class TestNeo4jVectorStoreAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self,
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncNeo4jVectorStore]]:
        url = server_url("neo4j")

        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncNeo4jVectorStore:
            return AsyncNeo4jVectorStore.from_url(
                url, model, label=LABEL, indexed_keys=("tenant", "conversation_id")
            )

        return factory


class TestNeo4jVectorStoreSync(VectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(self) -> Callable[[HashingEmbeddingModel], Neo4jVectorStore]:
        url = server_url("neo4j")

        def factory(model: HashingEmbeddingModel) -> Neo4jVectorStore:
            return Neo4jVectorStore.from_url(
                url, model, label=LABEL, indexed_keys=("tenant", "conversation_id")
            )

        return factory


def test_unfiltered_search_uses_the_vector_index() -> None:
    url = server_url("neo4j")
    store = Neo4jVectorStore.from_url(url, HashingEmbeddingModel(), label="VecUnfilteredDocument")
    try:
        store.add(
            [VectorDocument(text=f"zebra quokka {i}", metadata={"run": "t"}) for i in range(3)]
            + [VectorDocument(text="unrelated words here", metadata={"run": "t"})]
        )
        found = store.similarity_search("zebra quokka", top_k=3)
        assert len(found) == 3
        assert all("zebra quokka" in d.text for d in found)
        assert found[0].score is not None
        assert found[0].score > 0.8
        assert store.similarity_search("zebra quokka", top_k=3, score_threshold=0.99) == []
    finally:
        store.delete_where({"run": "t"})
        store.close()


def test_an_index_of_other_dimensions_is_refused() -> None:
    url = server_url("neo4j")
    first = Neo4jVectorStore.from_url(url, HashingEmbeddingModel(), label="VecDimsDocument")
    second = Neo4jVectorStore.from_url(url, HashingEmbeddingModel(64), label="VecDimsDocument")
    try:
        first.similarity_search("x")
        with pytest.raises(ConfigurationError, match="dimensions"):
            second.similarity_search("x")
    finally:
        first.close()
        second.close()


def test_bad_labels_are_refused_before_connecting() -> None:
    for label in ("Doc`) DETACH DELETE n //", "a b", ""):
        with pytest.raises(ConfigurationError):
            Neo4jVectorStore.from_url("bolt://127.0.0.1:1", HashingEmbeddingModel(), label=label)
