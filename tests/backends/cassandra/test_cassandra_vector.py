"""The vector-store conformance suite on a real Cassandra 5 server, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import urlsplit

import pytest
from cassandra.cluster import Cluster, Session

from chatmem.exceptions import ConfigurationError
from chatmem.testing.vectors import (
    AsyncHashingEmbeddingModel,
    AsyncVectorStoreConformance,
    HashingEmbeddingModel,
    VectorStoreConformance,
)
from chatmem.vector_store import VectorDocument
from chatmem_repositories.cassandra import AsyncCassandraVectorStore, CassandraVectorStore
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("cassandra")

KEYSPACE = "chatmem_vectors_test"


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


class TestCassandraVectorStoreAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self, session: Session
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncCassandraVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncCassandraVectorStore:
            return AsyncCassandraVectorStore(session, model, keyspace=KEYSPACE)

        return factory


class TestCassandraVectorStoreSync(VectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self, session: Session
    ) -> Callable[[HashingEmbeddingModel], CassandraVectorStore]:
        def factory(model: HashingEmbeddingModel) -> CassandraVectorStore:
            return CassandraVectorStore(session, model, keyspace=KEYSPACE)

        return factory


def test_a_table_of_other_dimensions_is_refused(session: Session) -> None:
    CassandraVectorStore(session, HashingEmbeddingModel(), keyspace=KEYSPACE).similarity_search("x")
    other = CassandraVectorStore(session, HashingEmbeddingModel(64), keyspace=KEYSPACE)
    with pytest.raises(ConfigurationError, match="dimensional"):
        other.similarity_search("x")


def test_unfiltered_search(session: Session) -> None:
    store = CassandraVectorStore(
        session, HashingEmbeddingModel(), keyspace=KEYSPACE, table="vec_unfiltered"
    )
    store.add(
        [VectorDocument(text=f"zebra quokka {i}", metadata={"run": "unfiltered"}) for i in range(3)]
        + [VectorDocument(text="other words", metadata={"run": "unfiltered"})]
    )
    try:
        found = store.similarity_search("zebra quokka", top_k=3)
        assert [("zebra quokka" in d.text) for d in found] == [True, True, True]
    finally:
        store.delete_where({"run": "unfiltered"})


def test_bad_names_are_refused(session: Session) -> None:
    for keyspace, table in (("ks; DROP", "t"), ("ks", "t (id text)"), ("ks", "x" * 41)):
        with pytest.raises(ConfigurationError):
            CassandraVectorStore(session, HashingEmbeddingModel(), keyspace=keyspace, table=table)


def test_from_url_owns_its_connection_and_searches() -> None:
    url = f"{server_url('cassandra').split('?')[0].rsplit('/', 1)[0]}/{KEYSPACE}"
    store = CassandraVectorStore.from_url(
        url + "?connect_timeout=5", HashingEmbeddingModel(), table="vec_from_url"
    )
    try:
        store.add([VectorDocument(text="penguin walrus", metadata={"run": "from_url"})])
        found = store.similarity_search("penguin walrus", where={"run": "from_url"})
        assert [d.text for d in found] == ["penguin walrus"]
        store.delete_where({"run": "from_url"})
    finally:
        store.close()
    cluster = store._ref.built
    assert cluster is not None
    assert cluster.is_shutdown


def test_from_url_refuses_an_unknown_option_before_connecting() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'read_timeout'"):
        CassandraVectorStore.from_url(
            "cassandra://127.0.0.1/ks?read_timeuot=3", HashingEmbeddingModel()
        )
