"""Neo4j repositories: conversations as a graph, through the official ``neo4j`` driver.

``create_repository("bolt://localhost:7687")`` (or ``neo4j://``, ``+s``/``+ssc`` forms) picks
this backend. See ``docs/backends/neo4j.md`` for the graph model, indexes and options.
"""

from chatmem_repositories.neo4j._async.repository import AsyncNeo4jChatMemoryRepository
from chatmem_repositories.neo4j._async.vector_store import AsyncNeo4jVectorStore
from chatmem_repositories.neo4j._options import DRIVER_PARAMETERS, Neo4jOptions
from chatmem_repositories.neo4j._sync.repository import Neo4jChatMemoryRepository
from chatmem_repositories.neo4j._sync.vector_store import Neo4jVectorStore

__all__ = [
    "DRIVER_PARAMETERS",
    "AsyncNeo4jChatMemoryRepository",
    "AsyncNeo4jVectorStore",
    "Neo4jChatMemoryRepository",
    "Neo4jOptions",
    "Neo4jVectorStore",
]
