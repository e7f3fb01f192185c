"""The Cassandra vector store: a ``vector<float, n>`` column with a SAI index (Cassandra 5)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cassandra.cluster import Session
from cassandra.query import PreparedStatement

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._async.vector_store import async_embed_documents, async_embed_query
from chatmem._concurrency import AsyncLock, async_api
from chatmem._flavor import check_flavor
from chatmem._vector_types import (
    VectorDocument,
    VectorFilter,
    as_filter,
    check_search,
    check_vector,
)
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.cassandra._errors import driver_errors
from chatmem_repositories.cassandra._vector_cql import (
    VectorCql,
    document_values,
    documents_from_rows,
    filter_values,
)
from chatmem_repositories.cassandra._vector_session import (
    VECTOR_WRITES_IN_FLIGHT,
    AsyncSemaphore,
    async_execute,
    async_execute_all,
    async_on_thread,
)

__all__ = ["AsyncCassandraVectorStore"]

Where = VectorFilter | Mapping[str, str] | None

_DDL_TIMEOUT = 60.0
_DELETE_BATCH = 1000
_PREPARED_CONDITIONS = 4  # filters with more conditions are prepared on first use


class AsyncCassandraVectorStore:
    """Stores documents in a Cassandra 5 table with a Storage-Attached vector index.

    Searches are one ``SELECT ... WHERE filters[?] = ? ... ORDER BY embedding ANN OF ?
    LIMIT ?``: SAI combines the metadata restrictions with the vector search, so one
    conversation's memories are searched without reading anyone else's.

    Example:
        ```python
        store = AsyncCassandraVectorStore(session, embedding_model, keyspace="app")
        await store.add([VectorDocument(text="I live in Paris", metadata={"owner": "ann"})])
        await store.similarity_search("Where do I live?", where={"owner": "ann"})
        ```

    Args:
        session: A connected driver session. The store never shuts it down.
        embedding_model: Embeds documents and queries.
        keyspace: An existing keyspace.
        table: The table; created with its indexes on first use.
        dimensions: Vector length; asked of the embedding model when ``None``.
        create_schema: Create the table and indexes on first use.

    Raises:
        ConfigurationError: If a name is not an identifier or the model is of the other flavor.
    """

    def __init__(
        self,
        session: Session,
        embedding_model: AsyncEmbeddingModel,
        *,
        keyspace: str,
        table: str = "vector_documents",
        dimensions: int | None = None,
        create_schema: bool = True,
    ) -> None:
        check_flavor(embedding_model, "embed", is_async=async_api, role="embedding model")
        self._cql = VectorCql.create(keyspace, table)
        self.embedding_model = embedding_model
        """The model that embeds documents and queries."""
        self._session = session
        self._dimensions = dimensions
        self._create_schema = create_schema
        self._prepared: dict[str, PreparedStatement] = {}
        self._ready = False
        self._lock = AsyncLock()
        self._writes = AsyncSemaphore(VECTOR_WRITES_IN_FLIGHT)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(table={self._cql.name!r})"

    # -- set-up -----------------------------------------------------------------------------

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        async with self._lock:
            if self._ready:
                return
            if self._dimensions is None:
                self._dimensions = await self.embedding_model.dimensions()
            dimensions = self._dimensions
            await async_on_thread(lambda: self._set_up_blocking(dimensions))
            self._ready = True

    def _set_up_blocking(self, dimensions: int) -> None:
        cql, session = self._cql, self._session
        with driver_errors():
            if self._create_schema:
                for ddl in cql.schema(dimensions):
                    session.execute(ddl, timeout=_DDL_TIMEOUT)
            column_type = session.prepare(cql.column_type)
            rows = list(session.execute(column_type, (cql.keyspace, cql.table)))
            declared = _declared_dimensions(rows)
            if declared is not None and declared != dimensions:
                raise ConfigurationError(
                    f"table {cql.name} stores {declared}-dimensional vectors but the embedding "
                    f"model makes {dimensions}; use another table"
                )
            texts = {"insert": cql.insert, "delete": cql.delete}
            for n in range(_PREPARED_CONDITIONS + 1):
                texts[f"search{n}"] = cql.search(n)
                if n:
                    texts[f"ids{n}"] = cql.select_ids(n)
            self._prepared = {name: session.prepare(text) for name, text in texts.items()}

    async def _statement(self, name: str, text: str) -> PreparedStatement:
        prepared = self._prepared.get(name)
        if prepared is None:
            session = self._session
            with driver_errors():
                prepared = await async_on_thread(lambda: session.prepare(text))
            self._prepared[name] = prepared
        return prepared

    # -- the VectorStore API ----------------------------------------------------------------

    async def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        """Embed (where needed) and store documents; a stored id is replaced.

        Rows are written concurrently, but only two at a time: Cassandra 5.0's vector index
        fails writes beyond a small per-node concurrency (they are retried if it does).

        Args:
            documents: The documents.
        """
        documents = list(documents)
        if not documents:
            return []
        await self._ensure_ready()
        vectors = await async_embed_documents(self.embedding_model, documents, self._dimensions)
        insert = self._prepared["insert"]
        statements = [
            insert.bind(document_values(d, v)) for d, v in zip(documents, vectors, strict=True)
        ]
        await async_execute_all(self._session, statements, self._writes)
        return [d.id for d in documents]

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Return the documents most similar to ``query``, best first, with their scores.

        Args:
            query: The text.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches.
        """
        check_search(top_k, score_threshold)
        condition = as_filter(where)
        await self._ensure_ready()
        vector = await async_embed_query(self.embedding_model, query, self._dimensions)
        return await self.similarity_search_by_vector(
            vector, top_k=top_k, score_threshold=score_threshold, where=condition
        )

    async def similarity_search_by_vector(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Like :meth:`similarity_search` with an embedding instead of a text.

        Args:
            vector: The query embedding.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches.
        """
        check_search(top_k, score_threshold)
        condition = as_filter(where)
        await self._ensure_ready()
        checked = check_vector(vector, self._dimensions)
        n = len(condition.conditions)
        statement = await self._statement(f"search{n}", self._cql.search(n))
        bound = statement.bind([checked, *filter_values(condition), checked, top_k])
        bound.fetch_size = None  # ANN queries cannot page; LIMIT bounds the result
        rows = await async_execute(self._session, bound)
        # Rows come best first, so the threshold cuts a suffix.
        return [d for d in documents_from_rows(rows) if (d.score or 0.0) >= score_threshold]

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are not an error.

        Args:
            ids: The ids.
        """
        ids = list(ids)
        if not ids:
            return
        await self._ensure_ready()
        delete = self._prepared["delete"]
        await async_execute_all(self._session, [delete.bind((i,)) for i in ids], self._writes)

    async def delete_where(self, where: Where) -> int:
        """Delete every document whose metadata matches a non-empty filter.

        Matching ids are read through the SAI index in pages of 1,000 and deleted by key.

        Args:
            where: The filter.

        Raises:
            ConfigurationError: If the filter is empty.
        """
        condition = as_filter(where)
        if not condition:
            raise ConfigurationError("delete_where needs a non-empty filter")
        await self._ensure_ready()
        n = len(condition.conditions)
        select = await self._statement(f"ids{n}", self._cql.select_ids(n))
        delete = self._prepared["delete"]
        total = 0
        while True:
            bound = select.bind([*filter_values(condition), _DELETE_BATCH])
            ids = [row[0] for row in await async_execute(self._session, bound)]
            await async_execute_all(self._session, [delete.bind((i,)) for i in ids], self._writes)
            total += len(ids)
            if len(ids) < _DELETE_BATCH:
                return total

    async def aclose(self) -> None:
        """Nothing to release: the session belongs to the caller."""


def _declared_dimensions(rows: Sequence[object]) -> int | None:
    for row in rows:
        text = row["type"] if isinstance(row, dict) else row[0]  # type: ignore[index]
        match = re.search(r"(\d+)\s*>", str(text))
        if match:
            return int(match.group(1))
    return None
