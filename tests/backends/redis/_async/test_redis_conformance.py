"""The conformance suite against a real Redis 7 server, sync and async."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository
from chatmem_repositories.redis._schema import KeyLayout

PREFIX = f"chatmem-test-{uuid.uuid4().hex[:8]}"


def _msgs_key(conversation_id: str) -> str:
    return KeyLayout(PREFIX).conversation(conversation_id)[1]


class TestRedisAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(redis_url, key_prefix=PREFIX, **options)

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await repository._client.hset(_msgs_key(conversation_id), str(position), b"\xff{not json")
