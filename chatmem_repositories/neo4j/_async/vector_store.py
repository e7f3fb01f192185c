"""The Neo4j vector store over the driver's async API (Neo4j 5 vector index)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, LiteralString

from neo4j import AsyncDriver, AsyncGraphDatabase

from chatmem.backend import (
    AsyncBaseVectorStore,
    AsyncLock,
    AsyncTwin,
    InitializeSchema,
    VectorDocument,
    VectorFilter,
    async_embed_documents,
    check_flavor,
    check_identifier,
    check_initialize_schema,
    documents_from_rows,
)
from chatmem.embedding import AsyncEmbeddingModel
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.neo4j._async.runner import AsyncStatementRunner, create_rules, seconds
from chatmem_repositories.neo4j._codec import document_rows
from chatmem_repositories.neo4j._cypher import VectorStatements
from chatmem_repositories.neo4j._errors import DRIVER_ERRORS, map_driver_error
from chatmem_repositories.neo4j._options import parse_url

__all__ = ["AsyncNeo4jVectorStore"]

Rows = list[list[Any]]

_WRITE_BATCH = 1000
_DELETE_BATCH = 5000


class AsyncNeo4jVectorStore(AsyncBaseVectorStore):
    """Stores documents as nodes with an embedding property and a Neo4j 5 vector index.

    Unfiltered searches use ``db.index.vector.queryNodes``. Filtered searches (one
    conversation's memories) find the matching nodes through a range index on the first
    indexed key and score them exactly, so a conversation always gets its own top k.

    Example:
        ```python
        store = AsyncNeo4jVectorStore.from_url("bolt://localhost:7687", embedding_model)
        await store.add([VectorDocument(text="I live in Paris", metadata={"owner": "ann"})])
        await store.similarity_search("Where do I live?", where={"owner": "ann"})
        await store.aclose()
        ```

    Args:
        driver: A driver to use. The store does not close it.
        embedding_model: Embeds documents and queries.
        database: Database name; ``None`` uses the server's home database.
        label: Node label of the documents.
        index_name: Vector index name; ``<label>_embedding`` by default.
        dimensions: Vector length; asked of the embedding model when ``None``.
        indexed_keys: Metadata keys that get a range index, most selective first; a filtered
            search seeks through the first of them that the filter names.
        initialize_schema: ``"always"`` creates the constraint and indexes on first use;
            ``"never"`` expects them to exist.
        retry_time: How long a statement is retried after transient errors; seconds or a
            timedelta.
        read_timeout: How long one statement may wait for the server's answer before its
            connection is closed and a timeout raised; ``None`` relies on the driver.

    Raises:
        ConfigurationError: If a name is not an ASCII identifier or the model is of the
            other flavor.
    """

    def __init__(
        self,
        driver: AsyncDriver,
        embedding_model: AsyncEmbeddingModel,
        *,
        database: str | None = None,
        label: str = "VectorDocument",
        index_name: str | None = None,
        dimensions: int | None = None,
        indexed_keys: Sequence[str] = ("conversation_id", "owner"),
        initialize_schema: InitializeSchema = "always",
        retry_time: timedelta | float = 10.0,
        read_timeout: timedelta | float | None = 30.0,
    ) -> None:
        super().__init__(embedding_model, dimensions=dimensions)
        create = check_initialize_schema(initialize_schema)
        self._statements = VectorStatements.create(label, index_name)
        self._indexed_keys = [check_identifier(k, "an indexed key") for k in indexed_keys]
        self._driver = driver
        # Statements run as the repository's do: auto-commit, retried, under read_timeout.
        self._runner = AsyncStatementRunner(
            driver,
            database=database,
            schema=(),
            initialize=False,  # the vector schema needs the dimensions: _ensure_ready
            retry_seconds=float(seconds(retry_time) or 0.0),
            read_timeout=seconds(read_timeout),
            clock=None,
        )
        self._schema_ready = not create
        self._schema_lock = AsyncLock()
        self._owns_driver = False

    @classmethod
    def from_url(
        cls,
        url: str,
        embedding_model: AsyncEmbeddingModel,
        *,
        label: str = "VectorDocument",
        index_name: str | None = None,
        dimensions: int | None = None,
        indexed_keys: Sequence[str] = ("conversation_id", "owner"),
        initialize_schema: InitializeSchema = "always",
        **options: Any,
    ) -> AsyncNeo4jVectorStore:
        """Create a store that owns a new driver.

        Args:
            url: ``neo4j://`` or ``bolt://`` URL with optional ``user:password@``,
                ``/database`` and the Neo4j repository's query options.
            embedding_model: Embeds documents and queries.
            label: Node label of the documents.
            index_name: Vector index name; ``<label>_embedding`` by default.
            dimensions: Vector length; asked of the embedding model when ``None``.
            indexed_keys: Metadata keys that get a range index.
            initialize_schema: ``"always"`` creates the constraint and indexes on first use.
            **options: The connection options of the Neo4j repository (see
                :class:`~chatmem_repositories.neo4j.Neo4jOptions`; they win over the URL's)
                and ``driver_options``, further ``GraphDatabase.driver`` arguments.

        Raises:
            ConfigurationError: For a bad URL, name or option.
        """
        settings = parse_url(url, options)
        # Check every name before the driver exists, so a bad one leaks nothing.
        VectorStatements.create(label, index_name)
        for key in indexed_keys:
            check_identifier(key, "an indexed key")
        check_flavor(embedding_model, "embed", is_async=AsyncTwin.IS_ASYNC, role="embedding model")
        driver = AsyncGraphDatabase.driver(settings.uri, auth=settings.auth, **settings.config)
        store = cls(
            driver,
            embedding_model,
            database=settings.options.database,
            label=label,
            index_name=index_name,
            dimensions=dimensions,
            indexed_keys=indexed_keys,
            initialize_schema=initialize_schema,
            retry_time=settings.options.max_transaction_retry_time,
            read_timeout=settings.options.read_timeout,
        )
        store._owns_driver = True
        return store

    def __repr__(self) -> str:
        s = self._statements
        return f"{type(self).__name__}(label={s.label!r}, index_name={s.index_name!r})"

    # -- plumbing ---------------------------------------------------------------------------

    async def _ensure_ready(self) -> None:
        """Learn the dimensions and create the schema, once."""
        if self._schema_ready and self._dimensions is not None:
            return
        async with self._schema_lock:
            if self._dimensions is None:
                self._dimensions = await self.embedding_model.dimensions()
            if self._schema_ready:
                return
            try:
                await self._create_schema(self._dimensions)
            except DRIVER_ERRORS as exc:
                raise map_driver_error(exc, "vector schema creation") from exc
            self._schema_ready = True

    async def _create_schema(self, dimensions: int) -> None:
        statements = self._statements
        async with self._driver.session(**self._runner.session_config()) as session:
            await create_rules(session, statements.schema(dimensions, self._indexed_keys))
            result = await session.run(statements.index_dimensions, name=statements.index_name)
            record = await result.single()
        existing = record["dimensions"] if record else None
        if existing is not None and int(existing) != dimensions:
            raise ConfigurationError(
                f"vector index {statements.index_name!r} has {existing} dimensions but the "
                f"embedding model makes {dimensions}; use another label or index_name"
            )

    async def _execute(self, action: str, query: LiteralString, params: dict[str, Any]) -> Rows:
        await self._ensure_ready()
        return await self._runner.write(action, query, params)

    async def _query(self, action: str, query: LiteralString, params: dict[str, Any]) -> Rows:
        await self._ensure_ready()
        return await self._runner.read(action, query, params)

    # -- the VectorStore API ----------------------------------------------------------------

    async def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        """Embed (where needed) and store documents; a stored id is replaced.

        Large batches are written in transactions of 1,000 documents.

        Args:
            documents: The documents.
        """
        documents = list(documents)
        if not documents:
            return []
        await self._ensure_ready()
        vectors = await async_embed_documents(self.embedding_model, documents, self._dimensions)
        rows = document_rows(documents, vectors)
        for start in range(0, len(rows), _WRITE_BATCH):
            batch = rows[start : start + _WRITE_BATCH]
            await self._execute("vector add", self._statements.upsert, {"rows": batch})
        return [d.id for d in documents]

    async def _search_by_vector(
        self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
    ) -> list[VectorDocument]:
        statement, params = self._statements.search(where, self._indexed_keys)
        params.update(vector=vector, k=top_k, threshold=float(score_threshold))
        rows = await self._query("vector search", statement, params)
        return documents_from_rows(rows)

    async def _delete(self, ids: list[str]) -> None:
        await self._execute("vector delete", self._statements.delete_ids, {"ids": ids})

    async def _delete_where(self, where: VectorFilter) -> int:
        statement, params = self._statements.delete_where(where)
        params["batch"] = _DELETE_BATCH
        total = 0
        while True:
            rows = await self._execute("vector delete", statement, params)
            deleted = int(rows[0][0]) if rows else 0
            total += deleted
            if deleted < _DELETE_BATCH:
                return total

    async def aclose(self) -> None:
        """Close the driver if the store created it (:meth:`from_url`)."""
        if self._owns_driver:
            await self._driver.close()
