from collections.abc import Awaitable, Callable

import pytest

from chatmem.testing.vectors import (
    AsyncHashingEmbeddingModel,
    AsyncVectorStoreConformance,
)
from chatmem.vector_store import AsyncInMemoryVectorStore


class TestInMemoryVectorStoreAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self,
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncInMemoryVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncInMemoryVectorStore:
            return AsyncInMemoryVectorStore(model)

        return factory
