"""The Cassandra vector store: a ``vector<float, n>`` column with a SAI index (Cassandra 5)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from cassandra.cluster import Cluster, Session
from cassandra.query import PreparedStatement

from chatmem.backend import (
    AsyncBaseVectorStore,
    AsyncLock,
    AsyncTwin,
    InitializeSchema,
    VectorDocument,
    VectorFilter,
    async_embed_documents,
    check_flavor,
    check_initialize_schema,
    documents_from_rows,
)
from chatmem.embedding import AsyncEmbeddingModel
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.cassandra._async.runner import execute, execute_all
from chatmem_repositories.cassandra._codec import document_values, filter_values
from chatmem_repositories.cassandra._cql import VectorCql
from chatmem_repositories.cassandra._drivers import (
    ClusterRef,
    LazyCluster,
    async_on_thread,
)
from chatmem_repositories.cassandra._errors import mapped_driver_errors
from chatmem_repositories.cassandra._options import parse_url

__all__ = ["AsyncCassandraVectorStore"]


_DDL_TIMEOUT = 60.0
_DELETE_BATCH = 1000
_PREPARED_CONDITIONS = 4  # filters with more conditions are prepared on first use


class AsyncCassandraVectorStore(AsyncBaseVectorStore):
    """Stores documents in a Cassandra 5 table with a Storage-Attached vector index.

    Searches are one ``SELECT ... WHERE filters[?] = ? ... ORDER BY embedding ANN OF ?
    LIMIT ?``: SAI combines the metadata restrictions with the vector search, so one
    conversation's memories are searched without reading anyone else's.

    Example:
        ```python
        store = AsyncCassandraVectorStore.from_url("cassandra://127.0.0.1/app", embedding_model)
        await store.add([VectorDocument(text="I live in Paris", metadata={"owner": "ann"})])
        await store.similarity_search("Where do I live?", where={"owner": "ann"})
        await store.aclose()
        ```

    Args:
        session: A connected driver session, a ``Cluster`` to connect on first use, or a
            callable that builds one on first use. The store never shuts a handed-in
            session or cluster down.
        embedding_model: Embeds documents and queries.
        keyspace: An existing keyspace.
        table: The table; created with its indexes on first use.
        dimensions: Vector length; asked of the embedding model when ``None``.
        initialize_schema: ``"always"`` creates the table and indexes on first use;
            ``"never"`` expects them to exist.

    Raises:
        ConfigurationError: If a name is not an identifier or the model is of the other flavor.
    """

    def __init__(
        self,
        session: Session | Cluster | Callable[[], Cluster],
        embedding_model: AsyncEmbeddingModel,
        *,
        keyspace: str,
        table: str = "vector_documents",
        dimensions: int | None = None,
        initialize_schema: InitializeSchema = "always",
    ) -> None:
        super().__init__(embedding_model, dimensions=dimensions)
        create = check_initialize_schema(initialize_schema)
        self._cql = VectorCql.create(keyspace, table)
        self._ref = ClusterRef(session)
        self._session: Session | None = self._ref.session
        self._owns_cluster = False
        self._initialize_schema = create
        self._prepared: dict[str, PreparedStatement] = {}
        self._ready = False
        self._lock = AsyncLock()

    @classmethod
    def from_url(
        cls,
        url: str,
        embedding_model: AsyncEmbeddingModel,
        *,
        table: str = "vector_documents",
        dimensions: int | None = None,
        initialize_schema: InitializeSchema = "always",
        **options: Any,
    ) -> AsyncCassandraVectorStore:
        """Create a store that owns its connection (opened on first use).

        Args:
            url: ``cassandra://[user:password@]host1,host2[:port]/keyspace?option=value``; the
                keyspace must exist (the repository's ``create_keyspace`` can make it).
            embedding_model: Embeds documents and queries.
            table: The table; created with its indexes on first use.
            dimensions: Vector length; asked of the embedding model when ``None``.
            initialize_schema: ``"always"`` creates the table and indexes on first use.
            **options: The connection options of the Cassandra repository
                (``connect_timeout``, ``read_timeout``, ``local_datacenter``) and
                ``driver_options``, further ``Cluster`` arguments.

        Raises:
            ConfigurationError: For a malformed URL, an unknown option or a bad name.
        """
        settings, parsed, driver_options = parse_url(url, options)
        VectorCql.create(settings.keyspace, table)  # a bad name leaks no cluster
        check_flavor(embedding_model, "embed", is_async=AsyncTwin.IS_ASYNC, role="embedding model")
        store = cls(
            LazyCluster(settings, parsed, driver_options),
            embedding_model,
            keyspace=settings.keyspace,
            table=table,
            dimensions=dimensions,
            initialize_schema=initialize_schema,
        )
        store._owns_cluster = True
        return store

    def __repr__(self) -> str:
        return f"{type(self).__name__}(table={self._cql.name!r})"

    # -- set-up -----------------------------------------------------------------------------

    async def _ensure_ready(self) -> None:
        """Learn the dimensions, connect, create the table and prepare, once."""
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
        with mapped_driver_errors():
            if self._session is None:
                self._session = self._ref.get().connect()
        cql, session = self._cql, self._session
        with mapped_driver_errors():
            if self._initialize_schema:
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
            session = self._connected
            with mapped_driver_errors():
                prepared = await async_on_thread(lambda: session.prepare(text))
            self._prepared[name] = prepared
        return prepared

    @property
    def _connected(self) -> Session:
        assert self._session is not None, "_ensure_ready connects"
        return self._session

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
        await execute_all(self._connected, statements)
        return [d.id for d in documents]

    async def _search_by_vector(
        self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
    ) -> list[VectorDocument]:
        n = len(where.conditions)
        statement = await self._statement(f"search{n}", self._cql.search(n))
        bound = statement.bind([vector, *filter_values(where), vector, top_k])
        bound.fetch_size = None  # ANN queries cannot page; LIMIT bounds the result
        rows = await execute(self._connected, bound)
        # Rows come best first, so the threshold cuts a suffix.
        return [d for d in documents_from_rows(rows) if (d.score or 0.0) >= score_threshold]

    async def _delete(self, ids: list[str]) -> None:
        delete = self._prepared["delete"]
        await execute_all(self._connected, [delete.bind((i,)) for i in ids])

    async def _delete_where(self, where: VectorFilter) -> int:
        # Matching ids are read through the SAI index in pages and deleted by key.
        n = len(where.conditions)
        select = await self._statement(f"ids{n}", self._cql.select_ids(n))
        delete = self._prepared["delete"]
        total = 0
        while True:
            bound = select.bind([*filter_values(where), _DELETE_BATCH])
            ids = [row[0] for row in await execute(self._connected, bound)]
            await execute_all(self._connected, [delete.bind((i,)) for i in ids])
            total += len(ids)
            if len(ids) < _DELETE_BATCH:
                return total

    async def aclose(self) -> None:
        """Shut the cluster down if the store created it (:meth:`from_url`)."""
        cluster = self._ref.built
        if self._owns_cluster and cluster is not None:
            self._owns_cluster = False
            await async_on_thread(cluster.shutdown)


def _declared_dimensions(rows: Sequence[object]) -> int | None:
    for row in rows:
        text = row["type"] if isinstance(row, dict) else row[0]  # type: ignore[index]
        match = re.search(r"(\d+)\s*>", str(text))
        if match:
            return int(match.group(1))
    return None
