"""The encrypted vector store over Cassandra: conformance, and rows read below the wrapper."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from urllib.parse import urlsplit

import pytest
from cassandra.cluster import Cluster, Session

from chatmem.encryption import AsyncEncryptedVectorStore
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, AsyncVectorStoreConformance
from chatmem.vector_store import AsyncVectorStore
from chatmem_repositories.cassandra import AsyncCassandraVectorStore
from tests.encrypted_vectors._async.checks import (
    AsyncEncryptedVectorChecks,
    RawStorage,
    conformance_wrapper,
)
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("cassandra")

KEYSPACE = "chatmem_vectors_test"
TABLE = "vec_encrypted"


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    parts = urlsplit(server_url("cassandra"))
    cluster = Cluster([parts.hostname or "127.0.0.1"], port=parts.port or 9042)
    try:
        session = cluster.connect()
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        yield session
    finally:
        cluster.shutdown()


class TestEncryptedCassandraVectorsAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self, session: Session
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncEncryptedVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncEncryptedVectorStore:
            store = AsyncCassandraVectorStore(session, model, keyspace=KEYSPACE, table=TABLE)
            return conformance_wrapper(store)

        return factory


class TestEncryptedCassandraStorageAsync(AsyncEncryptedVectorChecks):
    @pytest.fixture
    async def inner_store(self, session: Session) -> AsyncIterator[AsyncCassandraVectorStore]:
        model = AsyncHashingEmbeddingModel()
        store = AsyncCassandraVectorStore(session, model, keyspace=KEYSPACE, table=TABLE)
        yield store
        await store.aclose()

    @pytest.fixture
    def raw_storage(self, session: Session) -> RawStorage:
        def rows(store: AsyncVectorStore, ids: list[str]) -> str:
            select = f"SELECT * FROM {KEYSPACE}.{TABLE} WHERE id = %s"
            return repr([row for i in ids for row in session.execute(select, (i,))])

        return rows
