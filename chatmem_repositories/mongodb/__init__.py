"""The MongoDB repository: pymongo's sync ``MongoClient`` and native ``AsyncMongoClient``.

Works on MongoDB and on FerretDB 1.x (no transactions, no TTL indexes). Create one from a URL
(``mongodb://``, ``mongodb+srv://``) or hand it an existing client.

Example:
    ```python
    from chatmem_repositories.mongodb import MongoChatMemoryRepository

    with MongoChatMemoryRepository.from_url("mongodb://localhost:27017/chat?ttl=86400") as repo:
        repo.append("007", [UserMessage("My name is James Bond")])
    ```
"""

from chatmem_repositories.mongodb._async.repository import AsyncMongoChatMemoryRepository
from chatmem_repositories.mongodb._options import DRIVER_PARAMETERS, MongoOptions
from chatmem_repositories.mongodb._sync.repository import MongoChatMemoryRepository

__all__ = [
    "DRIVER_PARAMETERS",
    "AsyncMongoChatMemoryRepository",
    "MongoChatMemoryRepository",
    "MongoOptions",
]
