"""Apache Cassandra repositories (``cassandra://``), sync and async.

Needs the driver: ``pip install "chatmem[cassandra]"``.
"""

from chatmem_repositories.cassandra._async.repo import AsyncCassandraChatMemoryRepository
from chatmem_repositories.cassandra._async.vector import AsyncCassandraVectorStore
from chatmem_repositories.cassandra._settings import CassandraOptions
from chatmem_repositories.cassandra._sync.repo import CassandraChatMemoryRepository
from chatmem_repositories.cassandra._sync.vector import CassandraVectorStore

__all__ = [
    "AsyncCassandraChatMemoryRepository",
    "AsyncCassandraVectorStore",
    "CassandraChatMemoryRepository",
    "CassandraOptions",
    "CassandraVectorStore",
]
