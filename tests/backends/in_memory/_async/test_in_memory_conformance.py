from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)


class TestInMemoryAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(self) -> Callable[..., Awaitable[AsyncInMemoryChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
            return AsyncInMemoryChatMemoryRepository(**options)

        return factory
