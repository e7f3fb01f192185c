"""The vector-store conformance suite. Every vector store, built-in or third-party, runs it.

Subclass :class:`AsyncVectorStoreConformance` and provide one fixture,
``vector_store_factory``: a callable that takes an embedding model and returns a new, ready
store. Every test tags its documents with a fresh ``tenant`` value and filters on it, so the
store need not be emptied between tests.

Example:
    ```python
    class TestMyStore(AsyncVectorStoreConformance):
        @pytest.fixture
        def vector_store_factory(self):
            async def factory(embedding_model):
                return AsyncMyVectorStore(embedding_model, url)
            return factory
    ```
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

import pytest

from chatmem._async.vector_store import AsyncVectorStore
from chatmem._twins import async_run_all
from chatmem._vector_types import VectorDocument, VectorFilter
from chatmem.conversation_ids import MAX_CONVERSATION_ID_LENGTH
from chatmem.exceptions import ConfigurationError
from chatmem.testing._async.hashing_embedding import AsyncHashingEmbeddingModel
from chatmem.testing._hashing import hashing_embedding
from chatmem.testing._samples import HOSTILE_CONVERSATION_IDS

__all__ = ["AsyncVectorStoreConformance"]

Factory = Callable[[AsyncHashingEmbeddingModel], Awaitable[AsyncVectorStore]]

FACTS = (
    "my favourite colour is teal",
    "I live in Paris near the river",
    "my dog is called Rex",
    "I work as a carpenter",
    "the meeting is on Tuesday",
)


def _doc(text: str, tenant: str, **metadata: Any) -> VectorDocument:
    return VectorDocument(text=text, metadata={"tenant": tenant, **metadata})


class AsyncVectorStoreConformance:
    """Behaviour every vector store must have. Subclass and provide ``vector_store_factory``."""

    concurrent_writers: ClassVar[int] = 8
    """Writers in the concurrency test."""
    documents_per_writer: ClassVar[int] = 25
    """Documents each writer adds, one call each, in the concurrency test."""

    @pytest.fixture
    def embedding_model(self) -> AsyncHashingEmbeddingModel:
        """The deterministic embedding model the suite's assertions rely on."""
        return AsyncHashingEmbeddingModel()

    @pytest.fixture
    async def store(
        self, vector_store_factory: Factory, embedding_model: AsyncHashingEmbeddingModel
    ) -> AsyncIterator[AsyncVectorStore]:
        """A ready store, closed after the test."""
        store = await vector_store_factory(embedding_model)
        try:
            yield store
        finally:
            await store.aclose()

    @pytest.fixture
    def tenant(self) -> str:
        """A metadata value no other test uses."""
        return f"tenant-{uuid.uuid4()}"

    async def _cleanup(self, store: AsyncVectorStore, tenant: str) -> None:
        await store.delete_where({"tenant": tenant})

    # -- add and search -----------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_search_ranks_by_shared_words(self, store: AsyncVectorStore, tenant: str) -> None:
        await store.add([_doc(text, tenant) for text in FACTS])
        found = await store.similarity_search(
            "what is my favourite colour", top_k=3, where={"tenant": tenant}
        )
        assert found[0].text == FACTS[0]
        scores = [d.score for d in found]
        assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_documents_round_trip(self, store: AsyncVectorStore, tenant: str) -> None:
        text = "🦆 ünïcode <tag> ' \" \\ " + "long " * 2000
        metadata = {"tenant": tenant, "n": 3, "x": 1.5, "flag": True, "none": None, "q": "'\""}
        document = VectorDocument(text=text, metadata=metadata)
        assert await store.add([document]) == [document.id]
        (found,) = await store.similarity_search(text, top_k=1, where={"tenant": tenant})
        assert (found.id, found.text, found.metadata) == (document.id, text, metadata)
        assert found.embedding is None
        assert found.score == pytest.approx(1.0, abs=1e-3)
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_top_k_and_threshold(self, store: AsyncVectorStore, tenant: str) -> None:
        await store.add([_doc(f"fact number {i} about {FACTS[i % 5]}", tenant) for i in range(30)])
        where = {"tenant": tenant}
        assert len(await store.similarity_search("fact", top_k=7, where=where)) == 7
        assert len(await store.similarity_search("fact", top_k=100, where=where)) == 30
        strict = await store.similarity_search(
            "my dog is called Rex", top_k=30, score_threshold=0.8, where=where
        )
        assert strict
        assert all("Rex" in d.text and (d.score or 0) >= 0.8 for d in strict)
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_search_by_vector_and_precomputed_embeddings(
        self, store: AsyncVectorStore, embedding_model: AsyncHashingEmbeddingModel, tenant: str
    ) -> None:
        # A precomputed embedding is stored as given, not recomputed from the text.
        vector = hashing_embedding("alpha beta gamma")
        calls = embedding_model.calls
        await store.add(
            [VectorDocument(text="unrelated", metadata={"tenant": tenant}, embedding=vector)]
        )
        assert embedding_model.calls == calls
        (found,) = await store.similarity_search_by_vector(
            vector, top_k=1, where={"tenant": tenant}
        )
        assert found.text == "unrelated"
        assert found.score == pytest.approx(1.0, abs=1e-3)
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_add_embeds_in_one_batch(
        self, store: AsyncVectorStore, embedding_model: AsyncHashingEmbeddingModel, tenant: str
    ) -> None:
        calls = embedding_model.calls
        await store.add([_doc(text, tenant) for text in FACTS])
        assert embedding_model.calls == calls + 1
        assert await store.add([]) == []
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_adding_a_stored_id_replaces_it(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        first = _doc("my dog is called Rex", tenant, version="1")
        await store.add([first])
        second = VectorDocument(
            id=first.id, text="my cat is called Tom", metadata={"tenant": tenant, "version": "2"}
        )
        await store.add([second])
        found = await store.similarity_search("cat dog called", top_k=10, where={"tenant": tenant})
        assert [(d.id, d.text, d.metadata["version"]) for d in found] == [
            (first.id, "my cat is called Tom", "2")
        ]
        assert await store.similarity_search("x", where={"tenant": tenant, "version": "1"}) == []
        await self._cleanup(store, tenant)

    # -- filters and isolation ----------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_two_conversations_and_two_owners_never_see_each_other(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        cells = [(c, o) for c in ("conv-a", "conv-b") for o in ("alice", "bob")]
        await store.add(
            [
                _doc(f"my secret code is {c} {o} {i}", tenant, conversation_id=c, owner=o)
                for c, o in cells
                for i in range(5)
            ]
        )
        for c, o in cells:
            where = VectorFilter(tenant=tenant, conversation_id=c, owner=o)
            found = await store.similarity_search("my secret code", top_k=50, where=where)
            assert len(found) == 5
            assert {(d.metadata["conversation_id"], d.metadata["owner"]) for d in found} == {(c, o)}
        by_conversation = await store.similarity_search(
            "secret", top_k=50, where={"tenant": tenant, "conversation_id": "conv-a"}
        )
        assert {d.metadata["conversation_id"] for d in by_conversation} == {"conv-a"}
        assert len(by_conversation) == 10
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_only_string_values_match_filters(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        await store.add([_doc("numbers", tenant, n=3, s="3")])
        assert (
            len(await store.similarity_search("numbers", where={"tenant": tenant, "s": "3"})) == 1
        )
        assert await store.similarity_search("numbers", where={"tenant": tenant, "n": "3"}) == []
        assert await store.similarity_search("numbers", where={"tenant": tenant, "s": "4"}) == []
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_hostile_filter_values_are_only_values(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        # Valid conversation ids only: Neo4j cannot range-index values over 8 KB.
        hostile = [v for v in HOSTILE_CONVERSATION_IDS if len(v) <= MAX_CONVERSATION_ID_LENGTH]
        await store.add(
            [_doc(f"entry {i}", tenant, conversation_id=v) for i, v in enumerate(hostile)]
        )
        for i, value in enumerate(hostile):
            found = await store.similarity_search(
                "entry", top_k=100, where={"tenant": tenant, "conversation_id": value}
            )
            assert [d.text for d in found] == [f"entry {i}"], value
        everything = await store.similarity_search("entry", top_k=100, where={"tenant": tenant})
        assert len(everything) == len(hostile)
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    @pytest.mark.parametrize(
        "key", ["", "a b", "x`) DETACH DELETE n //", "1abc", "k'--", "a.b", "é", "x" * 65]
    )
    async def test_bad_filter_keys_are_refused(self, store: AsyncVectorStore, key: str) -> None:
        with pytest.raises(ConfigurationError):
            await store.similarity_search("x", where={key: "v"})
        with pytest.raises(ConfigurationError):
            await store.delete_where({key: "v"})

    @pytest.mark.asyncio
    async def test_string_filters_and_bad_arguments_are_refused(
        self, store: AsyncVectorStore
    ) -> None:
        for bad in ("conversation_id = 'x' OR 1=1", b"x"):
            with pytest.raises(ConfigurationError):
                await store.similarity_search("x", where=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError):
            await store.similarity_search("x", where={"tenant": 3})  # type: ignore[dict-item]
        with pytest.raises(ConfigurationError):
            await store.similarity_search("x", top_k=0)
        with pytest.raises(ConfigurationError):
            await store.similarity_search("x", score_threshold=1.5)
        with pytest.raises(ConfigurationError):
            await store.delete_where({})
        with pytest.raises(ConfigurationError):
            await store.add([VectorDocument(text="x", embedding=[0.5, 0.5])])

    # -- deletes ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_delete_by_id(self, store: AsyncVectorStore, tenant: str) -> None:
        ids = await store.add([_doc(text, tenant) for text in FACTS])
        await store.delete([ids[0], ids[1], "no-such-id"])
        await store.delete([])
        found = await store.similarity_search("my", top_k=10, where={"tenant": tenant})
        assert sorted(d.id for d in found) == sorted(ids[2:])
        await self._cleanup(store, tenant)

    @pytest.mark.asyncio
    async def test_delete_where_removes_only_matches(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        await store.add([_doc(f"note {i}", tenant, conversation_id=f"c{i % 3}") for i in range(12)])
        assert await store.delete_where({"tenant": tenant, "conversation_id": "c1"}) == 4
        assert await store.delete_where({"tenant": tenant, "conversation_id": "c1"}) == 0
        left = await store.similarity_search("note", top_k=100, where={"tenant": tenant})
        assert sorted(d.metadata["conversation_id"] for d in left) == ["c0"] * 4 + ["c2"] * 4  # type: ignore[type-var]
        assert await store.delete_where({"tenant": tenant}) == 8
        assert await store.similarity_search("note", where={"tenant": tenant}) == []

    # -- concurrency --------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_concurrent_writers_lose_nothing(
        self, store: AsyncVectorStore, tenant: str
    ) -> None:
        async def writer(w: int) -> None:
            for i in range(self.documents_per_writer):
                await store.add([_doc(f"writer {w} item {i}", tenant)])

        await async_run_all(
            [lambda w=w: writer(w) for w in range(self.concurrent_writers)]  # type: ignore[misc]
        )
        found = await store.similarity_search("writer item", top_k=1000, where={"tenant": tenant})
        expected = self.concurrent_writers * self.documents_per_writer
        assert len({d.id for d in found}) == expected
        await self._cleanup(store, tenant)
