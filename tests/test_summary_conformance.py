"""The summary-store conformance suite on every backend that keeps summaries, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.testing import AsyncSummaryConformance, SummaryConformance


class TestInMemorySummariesAsync(AsyncSummaryConformance):
    @pytest.fixture
    def repository_factory(self) -> Callable[..., Awaitable[AsyncInMemoryChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
            return AsyncInMemoryChatMemoryRepository(**options)

        return factory


class TestInMemorySummariesSync(SummaryConformance):
    @pytest.fixture
    def repository_factory(self) -> Callable[..., InMemoryChatMemoryRepository]:
        return InMemoryChatMemoryRepository
