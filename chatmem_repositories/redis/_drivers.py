"""The redis-py names both twins use, spelled so ``scripts/unasync.py`` maps one to the other.

redis-py's async client is ``redis.asyncio.Redis`` and its sync one ``redis.Redis``; the
generator turns ``AsyncRedis`` into ``Redis``, so both are exported here under those names.
"""

from __future__ import annotations

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.commands.core import AsyncScript, Script
from redis.retry import Retry

__all__ = ["AsyncRedis", "AsyncRetry", "AsyncScript", "Redis", "Retry", "Script"]
