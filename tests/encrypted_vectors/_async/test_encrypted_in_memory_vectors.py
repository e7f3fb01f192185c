"""The encrypted vector store over the in-memory store: conformance, sealing and its rules."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, UserMessage, scoped_conversation_id
from chatmem.encryption import (
    AsyncEncryptedLog,
    AsyncEncryptedVectorStore,
    KeyUnavailableError,
    StaticKeyProvider,
    generate_key,
)
from chatmem.exceptions import ConfigurationError
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, AsyncVectorStoreConformance
from chatmem.vector_store import AsyncInMemoryVectorStore, AsyncVectorStore, VectorDocument
from chatmem_advisors._long_term import conversation_filter
from tests.encrypted_vectors._async.checks import (
    AsyncEncryptedVectorChecks,
    RawStorage,
    conformance_wrapper,
    new_log,
)


class TestEncryptedInMemoryVectorsAsync(AsyncVectorStoreConformance):
    @pytest.fixture
    def vector_store_factory(
        self,
    ) -> Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncEncryptedVectorStore]]:
        async def factory(model: AsyncHashingEmbeddingModel) -> AsyncEncryptedVectorStore:
            return conformance_wrapper(AsyncInMemoryVectorStore(model))

        return factory


def in_memory_objects(store: AsyncVectorStore, ids: list[str]) -> str:
    """Every object the in-memory store keeps for these documents: documents and index."""
    assert isinstance(store, AsyncInMemoryVectorStore)
    documents = [d for d in store._documents if d.id in ids]
    rows = {store._rows[d.id] for d in documents}
    index = [entry for entry, found in store._index.items() if found & rows]
    return repr([d.model_dump() for d in documents]) + repr(index)


class TestEncryptedInMemoryStorageAsync(AsyncEncryptedVectorChecks):
    @pytest.fixture
    async def inner_store(self) -> AsyncIterator[AsyncInMemoryVectorStore]:
        store = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())
        yield store
        await store.aclose()

    @pytest.fixture
    def raw_storage(self) -> RawStorage:
        return in_memory_objects


@pytest.fixture
async def log() -> AsyncIterator[AsyncEncryptedLog]:
    log = new_log()
    yield log
    await log.aclose()


@pytest.fixture
def inner() -> AsyncInMemoryVectorStore:
    return AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())


@pytest.fixture
def store(inner: AsyncInMemoryVectorStore, log: AsyncEncryptedLog) -> AsyncEncryptedVectorStore:
    return AsyncEncryptedVectorStore(inner, log)


@pytest.mark.asyncio
async def test_a_document_without_its_conversation_is_refused(
    store: AsyncEncryptedVectorStore, inner: AsyncInMemoryVectorStore
) -> None:
    for metadata in ({}, {"owner": "ann"}, {"conversation_id": ""}, {"conversation_id": 7}):
        with pytest.raises(ConfigurationError, match="conversation_id"):
            await store.add([VectorDocument(text="x", metadata=metadata)])
    with pytest.raises(ConfigurationError, match="conversation_id"):
        await store.add(
            [
                VectorDocument(text="fine", metadata={"conversation_id": "c1"}),
                VectorDocument(text="no conversation"),
            ]
        )
    assert inner._documents == []  # a refused batch stores nothing


@pytest.mark.asyncio
async def test_filters_on_sealed_fields_are_refused(store: AsyncEncryptedVectorStore) -> None:
    await store.add([VectorDocument(text="x", metadata={"conversation_id": "c1", "type": "user"})])
    for call in (
        lambda: store.similarity_search("x", where={"conversation_id": "c1", "type": "user"}),
        lambda: store.similarity_search_by_vector([1.0] * 256, where={"type": "user"}),
        lambda: store.delete_where({"type": "user"}),
    ):
        with pytest.raises(ConfigurationError, match=r"'type'.*clear_metadata"):
            await call()
    assert len(await store.similarity_search("x", where={"conversation_id": "c1"})) == 1
    assert len(await store.similarity_search("x", where={"owner": "nobody"})) == 0


@pytest.mark.asyncio
async def test_clear_metadata_keeps_more_fields_filterable(
    inner: AsyncInMemoryVectorStore, log: AsyncEncryptedLog
) -> None:
    store = AsyncEncryptedVectorStore(inner, log, clear_metadata=["type"])
    document = VectorDocument(
        text="hello", metadata={"conversation_id": "c1", "type": "user", "mood": "calm"}
    )
    await store.add([document])
    assert inner._documents[0].metadata == {"conversation_id": "c1", "type": "user"}
    (found,) = await store.similarity_search("hello", where={"type": "user"})
    assert found.metadata == document.metadata
    assert store.clear_fields == {"conversation_id", "owner", "type"}


@pytest.mark.asyncio
async def test_the_key_field_names_the_conversation_holding_the_key(
    inner: AsyncInMemoryVectorStore, log: AsyncEncryptedLog
) -> None:
    store = AsyncEncryptedVectorStore(inner, log, key_field="session")
    await store.add([VectorDocument(text="hello", metadata={"session": "s1"})])
    # The key lives in the conversation named by the field, which holds no message.
    assert len(await log.data_key_events("s1")) == 1
    assert await log.find_by_conversation_id("s1") == []
    assert [d.text for d in await store.similarity_search("hello", where={"session": "s1"})] == [
        "hello"
    ]
    with pytest.raises(ConfigurationError, match="'session'"):
        await store.add([VectorDocument(text="x", metadata={"conversation_id": "s1"})])


@pytest.mark.asyncio
async def test_documents_use_the_key_of_their_conversations_messages(
    store: AsyncEncryptedVectorStore, log: AsyncEncryptedLog
) -> None:
    await log.append("c1", [UserMessage(text="hi")])
    (event,) = await log.data_key_events("c1")
    await store.add([VectorDocument(text="hi", metadata={"conversation_id": "c1"})])
    await store.add([VectorDocument(text="again", metadata={"conversation_id": "c1"})])
    assert await log.data_key_events("c1") == [event]  # no second key
    assert await log.count_messages("c1") == 1


@pytest.mark.asyncio
async def test_a_document_stored_in_clear_is_returned_as_it_is(
    store: AsyncEncryptedVectorStore, inner: AsyncInMemoryVectorStore
) -> None:
    old = VectorDocument(text="written before encryption", metadata={"conversation_id": "c1"})
    await inner.add([old])
    (found,) = await store.similarity_search("before encryption", where={"conversation_id": "c1"})
    assert (found.id, found.text, found.metadata) == (old.id, old.text, old.metadata)


@pytest.mark.asyncio
async def test_a_retired_key_is_an_error_not_a_shredded_document(
    inner: AsyncInMemoryVectorStore,
) -> None:
    repository = AsyncInMemoryChatMemoryRepository()
    old = StaticKeyProvider.from_text(f"k1:{generate_key()}")
    writer = AsyncEncryptedVectorStore(inner, AsyncEncryptedLog(repository, old))
    await writer.add([VectorDocument(text="hello", metadata={"conversation_id": "c1"})])
    new = StaticKeyProvider.from_text(f"k2:{generate_key()}")
    reader = AsyncEncryptedVectorStore(inner, AsyncEncryptedLog(repository, new))
    with pytest.raises(KeyUnavailableError) as raised:
        await reader.similarity_search("hello", where={"conversation_id": "c1"})
    assert raised.value.key_id == "k1"


@pytest.mark.asyncio
async def test_the_advisors_documents_and_filters_work_by_default(
    store: AsyncEncryptedVectorStore, inner: AsyncInMemoryVectorStore, log: AsyncEncryptedLog
) -> None:
    # The metadata the vector memory advisor writes, and its filters (conversation, owner).
    owner = f"ann-{uuid.uuid4().hex[:8]}"
    ids = [scoped_conversation_id(owner, c) for c in ("trip", "work")]
    documents = [
        VectorDocument(
            text=f"entry {i} of {c}",
            metadata={
                "conversation_id": c,
                "owner": owner,
                "type": "user",
                "created_at": "2026-01-01T00:00:00+00:00",
                "message_id": f"m{i}",
            },
        )
        for c in ids
        for i in range(2)
    ]
    await store.add(documents)
    for conversation_id in ids:
        found = await store.similarity_search(
            "entry", top_k=10, where=conversation_filter(conversation_id)
        )
        assert {d.metadata["message_id"] for d in found} == {"m0", "m1"}
        assert all(d.metadata["type"] == "user" for d in found)
    assert {k for d in inner._documents for k in d.metadata} == {"conversation_id", "owner"}

    # Erasing an owner: every conversation it owns goes, the keys of its documents with them.
    page = await log.list_conversations(owner=owner)
    assert sorted(page.conversation_ids) == sorted(ids)
    for conversation_id in page.conversation_ids:
        await log.delete_by_conversation_id(conversation_id)
    assert await store.similarity_search("entry", top_k=10, where={"owner": owner}) == []
    assert await store.delete_where(conversation_filter(ids[0])) == 2
