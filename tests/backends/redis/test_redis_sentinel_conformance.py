"""The conformance suites through a redis+sentinel:// URL, sync and async.

The repository conformance, the concurrent history checker and the summary-store conformance
on the master of scripts/servers/redis-sentinel, found through its three sentinels.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from redis.sentinel import Sentinel

from chatmem import UserMessage
from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
    AsyncSummaryConformance,
    HistoryCheckerConformance,
    RepositoryConformance,
    SummaryConformance,
)
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from chatmem_repositories.redis._options import parse_url, sentinel_settings
from chatmem_repositories.redis._schema import KeyLayout
from tests.support.cleanup import drop_redis_keys
from tests.support.servers import server_url

PREFIX = f"chatmem-sentinel-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def sentinel_url() -> Iterator[str]:
    """The Sentinel topology's URL; after the module, the keys under ``PREFIX`` are deleted."""
    url = server_url("redis_sentinel")
    yield url
    found = sentinel_settings(parse_url(url, {}))
    host, port = Sentinel(found.sentinels).discover_master(found.service_name)  # type: ignore[no-untyped-call]
    drop_redis_keys(f"redis://{host}:{port}/{found.server_kwargs['db']}", PREFIX)


def _msgs_key(conversation_id: str) -> str:
    return KeyLayout(PREFIX).conversation(conversation_id)[1]


class TestRedisSentinelAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    @pytest.fixture
    def repository_factory(
        self, sentinel_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(
                sentinel_url, key_prefix=PREFIX, **options
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await repository._client.hset(_msgs_key(conversation_id), str(position), b"\xff{not json")


class TestRedisSentinelSync(RepositoryConformance, HistoryCheckerConformance):
    @pytest.fixture
    def repository_factory(self, sentinel_url: str) -> Callable[..., RedisChatMemoryRepository]:
        def factory(**options: Any) -> RedisChatMemoryRepository:
            return RedisChatMemoryRepository.from_url(sentinel_url, key_prefix=PREFIX, **options)

        return factory

    def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        repository._client.hset(_msgs_key(conversation_id), str(position), b"\xff{not json")


class TestRedisSentinelSummariesAsync(AsyncSummaryConformance):
    @pytest.fixture
    def repository_factory(
        self, sentinel_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(
                sentinel_url, key_prefix=PREFIX, **options
            )

        return factory


class TestRedisSentinelSummariesSync(SummaryConformance):
    @pytest.fixture
    def repository_factory(self, sentinel_url: str) -> Callable[..., RedisChatMemoryRepository]:
        def factory(**options: Any) -> RedisChatMemoryRepository:
            return RedisChatMemoryRepository.from_url(sentinel_url, key_prefix=PREFIX, **options)

        return factory


def test_wait_replicas_waits_for_both_replicas(sentinel_url: str) -> None:
    # Two replicas: WAIT 2 is met; the append and its WAIT are one pipeline on one connection.
    with RedisChatMemoryRepository.from_url(
        sentinel_url, key_prefix=PREFIX, wait_replicas=2, wait_timeout_ms=5000
    ) as repository:
        stored = repository.append("waited", [UserMessage("hi", id="m1")])
        assert [s.position for s in stored] == [1]
        assert repository.append_many([("waited", [UserMessage("again", id="m2")])])[0]


async def test_async_pool_drops_a_connection_to_a_replaced_master(sentinel_url: str) -> None:
    # The sync pool closes a returned connection whose address is no longer the master's; the
    # async one (redis-py 8.1) did not, so it went on using the old master after a failover.
    repository = AsyncRedisChatMemoryRepository.from_url(sentinel_url, key_prefix=PREFIX)
    async with repository:
        await repository.find_version("c")
        pool = repository._client.connection_pool
        connection = await pool.get_connection()
        assert connection.is_connected
        real = pool.master_address
        pool.master_address = ("127.0.0.1", 1)  # what a rediscovery after a failover records
        try:
            await pool.release(connection)
        finally:
            pool.master_address = real
        assert not connection.is_connected
        # Its next use asks the sentinels again and reaches the master.
        assert await repository.find_version("c") == 0
