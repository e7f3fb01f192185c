"""Redis repository: plain Redis 7 (no modules), sync and async, through redis-py.

Example:
    ```python
    from chatmem_repositories.redis import RedisChatMemoryRepository

    repository = RedisChatMemoryRepository.from_url("redis://localhost:6379/0?ttl=86400")
    ```
"""

from chatmem_repositories.redis._async.repository import AsyncRedisChatMemoryRepository
from chatmem_repositories.redis._options import DRIVER_PARAMETERS, RedisOptions
from chatmem_repositories.redis._sync.repository import RedisChatMemoryRepository

__all__ = [
    "DRIVER_PARAMETERS",
    "AsyncRedisChatMemoryRepository",
    "RedisChatMemoryRepository",
    "RedisOptions",
]
