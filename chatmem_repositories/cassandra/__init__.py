"""Apache Cassandra repositories and vector stores (``cassandra://``), sync and async.

Needs the driver: ``pip install "chatmem[cassandra]"``. See ``docs/backends/cassandra.md``.
"""

from chatmem_repositories.cassandra._async.repository import AsyncCassandraChatMemoryRepository
from chatmem_repositories.cassandra._async.vector_store import AsyncCassandraVectorStore
from chatmem_repositories.cassandra._options import DRIVER_PARAMETERS, CassandraOptions
from chatmem_repositories.cassandra._sync.repository import CassandraChatMemoryRepository
from chatmem_repositories.cassandra._sync.vector_store import CassandraVectorStore

__all__ = [
    "DRIVER_PARAMETERS",
    "AsyncCassandraChatMemoryRepository",
    "AsyncCassandraVectorStore",
    "CassandraChatMemoryRepository",
    "CassandraOptions",
    "CassandraVectorStore",
]
