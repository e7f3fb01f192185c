"""The summary-store conformance suite on every backend that keeps summaries, sync and async."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository
from chatmem.testing import AsyncSummaryConformance
from chatmem_repositories.mongodb import AsyncMongoChatMemoryRepository
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository

PREFIX = f"chatmem-summary-{uuid.uuid4().hex[:8]}"


class TestInMemorySummariesAsync(AsyncSummaryConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(self) -> Callable[..., Awaitable[AsyncInMemoryChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
            return AsyncInMemoryChatMemoryRepository(**options)

        return factory


# -- Redis ------------------------------------------------------------------------------------


class TestRedisSummariesAsync(AsyncSummaryConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, **options)

        return factory


# -- MongoDB (FerretDB) -----------------------------------------------------------------------


@pytest.mark.backend("mongodb")
class TestMongoSummariesAsync(AsyncSummaryConformance):
    supports_clock = True  # FerretDB has no TTL index: chatmem's stored expiry decides

    @pytest.fixture
    def repository_factory(
        self, mongodb_url: str, mongodb_prefix: str
    ) -> Callable[..., Awaitable[AsyncMongoChatMemoryRepository]]:
        url, prefix = mongodb_url, mongodb_prefix

        async def factory(**options: Any) -> AsyncMongoChatMemoryRepository:
            return AsyncMongoChatMemoryRepository.from_url(url, collection_prefix=prefix, **options)

        return factory
