"""The redis-py names both twins use, spelled so ``scripts/unasync.py`` maps one to the other.

redis-py's async client is ``redis.asyncio.Redis`` and its sync one ``redis.Redis``; the
generator turns ``AsyncRedis`` into ``Redis``, so both are exported here under those names.
Likewise for Redis Cluster: ``AsyncRedisCluster`` and ``AsyncClusterNode`` (from
``redis.asyncio.cluster``) become ``RedisCluster`` and ``ClusterNode`` (``redis.cluster``).
"""

from __future__ import annotations

from redis import BlockingConnectionPool, Redis
from redis.asyncio import BlockingConnectionPool as AsyncBlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import AsyncScript, Script
from redis.retry import Retry

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
    "BlockingConnectionPool",
    "ClusterNode",
    "Redis",
    "RedisCluster",
    "Retry",
    "Script",
    "async_cluster_node",
    "async_discover",
    "cluster_node",
    "discover",
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
