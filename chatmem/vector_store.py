"""Vector stores: documents, structured filters, the contract and the in-memory store.

A vector store keeps :class:`VectorDocument` objects with their embeddings and answers
similarity searches, filtered by :class:`VectorFilter` values (an AND of equalities on
string metadata; never query text). Neo4j and Cassandra stores live in
``chatmem_repositories``; the long-term memory advisor in ``chatmem_advisors``.

Example:
    ```python
    from chatmem.vector_store import InMemoryVectorStore, VectorDocument

    store = InMemoryVectorStore(embedding_model)
    store.add([VectorDocument(text="I live in Paris", metadata={"conversation_id": "c1"})])
    store.similarity_search("Where do I live?", top_k=3, where={"conversation_id": "c1"})
    ```
"""

from __future__ import annotations

from chatmem._async.in_memory_vector_store import AsyncInMemoryVectorStore
from chatmem._async.vector_store import AsyncVectorStore
from chatmem._sync.in_memory_vector_store import InMemoryVectorStore
from chatmem._sync.vector_store import VectorStore
from chatmem._vector_types import MetadataValue, VectorDocument, VectorFilter, as_filter

__all__ = [
    "AsyncInMemoryVectorStore",
    "AsyncVectorStore",
    "InMemoryVectorStore",
    "MetadataValue",
    "VectorDocument",
    "VectorFilter",
    "VectorStore",
    "as_filter",
]
