"""The conformance suites on a real six-node Redis Cluster, sync and async.

The repository conformance, the concurrent history checker and the summary-store conformance,
each through a ``redis+cluster://`` URL (scripts/servers/redis-cluster/start.sh).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from chatmem import Message, UserMessage
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
from chatmem_repositories.redis._options import cluster_seeds
from chatmem_repositories.redis._schema import KeyLayout

PREFIX = f"chatmem-cluster-{uuid.uuid4().hex[:8]}"


def _msgs_key(conversation_id: str) -> str:
    return KeyLayout(PREFIX, 64).conversation(conversation_id)[1]


class TestRedisClusterAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_cluster_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(
                redis_cluster_url, key_prefix=PREFIX, **options
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await repository._client.hset(_msgs_key(conversation_id), str(position), b"\xff{not json")


class TestRedisClusterSync(RepositoryConformance, HistoryCheckerConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_cluster_url: str
    ) -> Callable[..., RedisChatMemoryRepository]:
        def factory(**options: Any) -> RedisChatMemoryRepository:
            return RedisChatMemoryRepository.from_url(
                redis_cluster_url, key_prefix=PREFIX, **options
            )

        return factory

    def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        repository._client.hset(_msgs_key(conversation_id), str(position), b"\xff{not json")


class TestRedisClusterSummariesAsync(AsyncSummaryConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_cluster_url: str
    ) -> Callable[..., Awaitable[AsyncRedisChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncRedisChatMemoryRepository:
            return AsyncRedisChatMemoryRepository.from_url(
                redis_cluster_url, key_prefix=PREFIX, **options
            )

        return factory


class TestRedisClusterSummariesSync(SummaryConformance):
    @pytest.fixture
    def repository_factory(
        self, redis_cluster_url: str
    ) -> Callable[..., RedisChatMemoryRepository]:
        def factory(**options: Any) -> RedisChatMemoryRepository:
            return RedisChatMemoryRepository.from_url(
                redis_cluster_url, key_prefix=PREFIX, **options
            )

        return factory


def _flush_scripts(url: str) -> None:
    seeds = [ClusterNode(host, port) for host, port in cluster_seeds(url)]
    with RedisCluster(startup_nodes=seeds) as client:
        for node in client.get_primaries():
            with redis.Redis(host=node.host, port=node.port) as raw:
                raw.script_flush()


def _bulk(tag: str) -> list[tuple[str, list[Message]]]:
    # 40 conversations: their 64 buckets spread them over every master.
    return [
        (f"bulk-{tag}-{c}", [UserMessage(f"{c}:{i}") for i in range(c % 5 + 1)]) for c in range(40)
    ]


def test_append_many_spans_every_master_in_one_call(redis_cluster_url: str) -> None:
    pairs = _bulk(uuid.uuid4().hex[:8])
    with RedisChatMemoryRepository.from_url(redis_cluster_url, key_prefix=PREFIX) as repo:
        client: Any = repo._client  # a RedisCluster (the URL says so)
        masters = {client.get_node_from_key(repo._append_keys(cid)[0]).name for cid, _ in pairs}
        assert len(masters) == len(client.get_primaries())
        _flush_scripts(redis_cluster_url)  # every master answers NOSCRIPT: those go again as EVAL
        stored = repo.append_many(pairs)
        assert [[s.message for s in batch] for batch in stored] == [ms for _, ms in pairs]
        assert repo.append_many(pairs) == [[]] * len(pairs)  # every id is known by now
        for cid, messages in pairs:
            assert repo.find_by_conversation_id(cid) == messages
        listed = set(repo.list_conversations(limit=1000).conversation_ids)
        assert {cid for cid, _ in pairs} <= listed


async def test_async_append_many_spans_every_master_in_one_call(redis_cluster_url: str) -> None:
    pairs = _bulk(uuid.uuid4().hex[:8])
    async with AsyncRedisChatMemoryRepository.from_url(
        redis_cluster_url, key_prefix=PREFIX
    ) as repo:
        _flush_scripts(redis_cluster_url)
        stored = await repo.append_many(pairs)
        assert [[s.position for s in batch] for batch in stored] == [
            list(range(1, len(ms) + 1)) for _, ms in pairs
        ]
        assert await repo.append_many(pairs) == [[]] * len(pairs)
        for cid, messages in pairs:
            assert await repo.find_by_conversation_id(cid) == messages
