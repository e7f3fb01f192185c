"""The conformance suite against a MongoDB wire-protocol server (FerretDB 1.24 in the tests)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)
from chatmem_repositories.mongodb import AsyncMongoChatMemoryRepository

pytestmark = pytest.mark.backend("mongodb")


def _corrupt(repository: Any, conversation_id: str, position: Position) -> Any:
    return repository._messages.update_one(
        {"conversation_id": conversation_id, "position": position},
        {"$set": {"data": "{not json"}},
    )


class TestMongoAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    supports_clock = True  # FerretDB has no TTL index: chatmem's stored expiry decides

    @pytest.fixture
    async def repository_factory(
        self, mongodb_url: str, mongodb_prefix: str
    ) -> Callable[..., Awaitable[AsyncMongoChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncMongoChatMemoryRepository:
            return AsyncMongoChatMemoryRepository.from_url(
                mongodb_url, collection_prefix=mongodb_prefix, **options
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        result = await _corrupt(repository, conversation_id, position)
        assert result.modified_count == 1
