"""The redis-py names both twins use, spelled so ``scripts/unasync.py`` maps one to the other.

redis-py's async client is ``redis.asyncio.Redis`` and its sync one ``redis.Redis``; the
generator turns ``AsyncRedis`` into ``Redis``, so both are exported here under those names.
Likewise for Redis Cluster: ``AsyncRedisCluster`` and ``AsyncClusterNode`` (from
``redis.asyncio.cluster``) become ``RedisCluster`` and ``ClusterNode`` (``redis.cluster``), and
for Redis Sentinel: ``AsyncSentinel`` and ``AsyncSentinelConnectionPool``
(``redis.asyncio.sentinel``) become ``Sentinel`` and ``SentinelConnectionPool``
(``redis.sentinel``).
"""

from __future__ import annotations

from typing import Any

from redis import BlockingConnectionPool, Redis
from redis.asyncio import BlockingConnectionPool as AsyncBlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelConnectionPool
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import AsyncScript, Script
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

DEFAULT_MAX_CONNECTIONS = 100
"""Connections a URL-made client keeps at most (redis-py's own limit); callers past it wait."""

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "AsyncBlockingConnectionPool",
    "AsyncClusterNode",
    "AsyncRedis",
    "AsyncRedisCluster",
    "AsyncRetry",
    "AsyncScript",
    "AsyncSentinel",
    "AsyncSentinelConnectionPool",
    "BlockingConnectionPool",
    "ClusterNode",
    "Redis",
    "RedisCluster",
    "Retry",
    "Script",
    "Sentinel",
    "SentinelConnectionPool",
    "async_cluster_node",
    "async_discover",
    "async_sentinel_master",
    "cluster_node",
    "discover",
    "sentinel_master",
]


def async_cluster_node(host: str, port: int) -> AsyncClusterNode:
    """A startup node for the async ``RedisCluster``."""
    return AsyncClusterNode(host, port)


def cluster_node(host: str, port: int) -> ClusterNode:
    """A startup node for the sync ``RedisCluster`` (its constructor is not typed)."""
    return ClusterNode(host, port)  # type: ignore[no-untyped-call]


async def async_discover(client: AsyncRedis | AsyncRedisCluster) -> None:
    """Read a cluster's slots before the first command (no-op for one server).

    The async ``RedisCluster`` does it on the first command, and when many tasks send their
    first commands at once it may close connections that other tasks are using: their
    commands then fail (``'NoneType' object has no attribute 'writelines'``) or read another
    command's reply. Discovering first, once, under its own lock, avoids that.
    """
    if isinstance(client, AsyncRedisCluster):
        await client.initialize()


def discover(client: Redis | RedisCluster) -> None:
    """Nothing to do: the sync ``RedisCluster`` reads the slots when it is created."""


class _AsyncSentinelPool(AsyncSentinelConnectionPool):
    """redis-py's async Sentinel pool; a connection to a replaced master is dropped on release.

    redis-py's sync pool checks ``owns_connection`` when a connection comes back and closes
    one whose address is no longer the master's; its async ``ConnectionPool.release`` never
    calls it (redis-py 8.1). So a connection that was in use while a failover changed the
    master went back to the pool still connected to the old one, and was used again: reads
    then saw a replica, writes got READONLY, or, on an old master cut off but still up, were
    acknowledged and lost. Closing it here makes its next use ask the sentinels, as sync does.
    """

    async def release(self, connection: Any) -> None:
        master = self.master_address
        if self.is_master and master is not None and (connection.host, connection.port) != master:
            await connection.disconnect()
        await super().release(connection)


def async_sentinel_master(
    sentinels: list[tuple[str, int]],
    service_name: str,
    sentinel_kwargs: dict[str, Any],
    **kwargs: Any,
) -> tuple[AsyncSentinel, AsyncRedis]:
    """redis-py's async ``Sentinel`` for ``sentinels``, and its client of the service's master.

    The client's pool (``SentinelConnectionPool``) asks the sentinels for the master whenever
    it connects and drops connections to a master that was replaced; ``kwargs`` configure the
    master's connections.
    """
    sentinel = AsyncSentinel(sentinels, sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client = sentinel.master_for(
        service_name,
        redis_class=AsyncRedis,
        connection_pool_class=_AsyncSentinelPool,
        **kwargs,
    )
    return sentinel, client


def sentinel_master(
    sentinels: list[tuple[str, int]],
    service_name: str,
    sentinel_kwargs: dict[str, Any],
    **kwargs: Any,
) -> tuple[Sentinel, Redis]:
    """redis-py's sync ``Sentinel`` for ``sentinels``, and its client of the service's master.

    As :func:`async_sentinel_master` (redis-py's sync Sentinel is not typed).
    """
    sentinel = Sentinel(sentinels, sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client = sentinel.master_for(  # type: ignore[no-untyped-call]
        service_name, redis_class=Redis, connection_pool_class=SentinelConnectionPool, **kwargs
    )
    return sentinel, client
