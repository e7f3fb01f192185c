from collections.abc import Awaitable, Callable

import pytest

from chatmem.testing.vectors import (
    AsyncHashingEmbeddingModel,
    AsyncVectorStoreConformance,
    HashingEmbeddingModel,
    VectorStoreConformance,
)
from chatmem.vector_store import AsyncInMemoryVectorStore, InMemoryVectorStore


class TestInMemoryVectorStoreAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self,
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncInMemoryVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncInMemoryVectorStore:
            return AsyncInMemoryVectorStore(model)

        return factory


class TestInMemoryVectorStoreSync(VectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(self) -> Callable[[HashingEmbeddingModel], InMemoryVectorStore]:
        return InMemoryVectorStore
