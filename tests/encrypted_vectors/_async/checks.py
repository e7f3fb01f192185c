"""What every store must show under the encrypted wrapper, and the suite's configuration.

A backend's test module subclasses :class:`AsyncEncryptedVectorChecks` and provides two
fixtures: ``inner_store``, a ready store of its kind, and ``raw_storage``, which returns
what that store holds for some document ids as text, read below the wrapper (rows,
node properties, objects).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository
from chatmem.encryption import (
    AsyncEncryptedLog,
    AsyncEncryptedVectorStore,
    StaticKeyProvider,
    generate_key,
)
from chatmem.exceptions import MessageDecodeError
from chatmem.vector_store import AsyncVectorStore, VectorDocument

__all__ = [
    "CONFORMANCE_CLEAR_METADATA",
    "AsyncEncryptedVectorChecks",
    "RawStorage",
    "conformance_wrapper",
    "new_log",
]

# The conformance suite tags every document with a ``tenant`` and filters on it and on
# these fields: the wrapper it runs against keys documents by tenant and keeps these in clear.
CONFORMANCE_CLEAR_METADATA = ("conversation_id", "s", "n", "version")

RawStorage = Callable[[AsyncVectorStore, list[str]], str]
"""Reads what a store holds for these document ids, below any wrapper, as text."""


def new_log() -> AsyncEncryptedLog:
    """An encrypted in-memory log with a fresh key: it holds the documents' data keys."""
    keys = StaticKeyProvider.from_text(f"k1:{generate_key()}")
    return AsyncEncryptedLog(AsyncInMemoryChatMemoryRepository(), keys)


def conformance_wrapper(store: AsyncVectorStore) -> AsyncEncryptedVectorStore:
    """The wrapper the conformance suite runs against: keyed by tenant, its filters in clear."""
    return AsyncEncryptedVectorStore(
        store, new_log(), key_field="tenant", clear_metadata=CONFORMANCE_CLEAR_METADATA
    )


class AsyncEncryptedVectorChecks:
    """Encryption at rest of one store, read below the wrapper."""

    @pytest.fixture
    async def log(self) -> AsyncIterator[AsyncEncryptedLog]:
        log = new_log()
        yield log
        await log.aclose()

    @pytest.fixture
    def encrypted(
        self, inner_store: AsyncVectorStore, log: AsyncEncryptedLog
    ) -> AsyncEncryptedVectorStore:
        return AsyncEncryptedVectorStore(inner_store, log)

    @pytest.fixture
    def run(self) -> str:
        """A value no other test uses (owners and conversations are named after it)."""
        return uuid.uuid4().hex[:12]

    @pytest.mark.asyncio
    async def test_no_plaintext_below_the_wrapper(
        self,
        inner_store: AsyncVectorStore,
        encrypted: AsyncEncryptedVectorStore,
        raw_storage: RawStorage,
        run: str,
    ) -> None:
        card, diagnosis = f"4111{run}", f"diagnosis{run}"
        conversation = f"conv-{run}"
        document = VectorDocument(
            text=f"my card number is {card}",
            metadata={
                "conversation_id": conversation,
                "owner": f"owner-{run}",
                "note": diagnosis,
                "type": "user",
                "turn": 3,
            },
        )
        await encrypted.add([document])
        sealed = raw_storage(inner_store, [document.id])
        assert document.id in sealed  # the raw read found the document...
        assert conversation in sealed  # ...and its clear metadata
        assert card not in sealed
        assert diagnosis not in sealed
        assert "my card number" not in sealed
        (found,) = await encrypted.similarity_search(
            document.text, top_k=1, where={"conversation_id": conversation}
        )
        assert (found.id, found.text, found.metadata) == (
            document.id,
            document.text,
            document.metadata,
        )

        # The same document written without the wrapper shows both secrets.
        clear = document.model_copy(update={"id": f"clear-{run}"})
        await inner_store.add([clear])
        stored = raw_storage(inner_store, [clear.id])
        assert card in stored
        assert diagnosis in stored
        await inner_store.delete([document.id, clear.id])

    @pytest.mark.asyncio
    async def test_deleting_the_conversation_shreds_its_documents(
        self,
        inner_store: AsyncVectorStore,
        encrypted: AsyncEncryptedVectorStore,
        log: AsyncEncryptedLog,
        raw_storage: RawStorage,
        run: str,
    ) -> None:
        owner = f"owner-{run}"
        doomed, kept = f"doomed-{run}", f"kept-{run}"
        documents = [
            VectorDocument(
                text=f"my dog is called Rex {i}", metadata={"conversation_id": c, "owner": owner}
            )
            for c in (doomed, kept)
            for i in range(3)
        ]
        await encrypted.add(documents)
        where = {"owner": owner}
        assert len(await encrypted.similarity_search("dog Rex", top_k=10, where=where)) == 6

        await log.delete_by_conversation_id(doomed)

        found = await encrypted.similarity_search("dog Rex", top_k=10, where=where)
        assert sorted(d.metadata["conversation_id"] for d in found) == [kept] * 3  # type: ignore[type-var]
        assert await encrypted.similarity_search("dog", where={"conversation_id": doomed}) == []
        # The store still holds the doomed documents: they are unreadable, not deleted.
        ids = [d.id for d in documents[:3]]
        raw = raw_storage(inner_store, ids)
        assert all(i in raw for i in ids)
        # A log that never cached the key (another process) cannot open them either.
        other = AsyncEncryptedVectorStore(inner_store, AsyncEncryptedLog(log.repository, log.keys))
        assert await other.similarity_search("dog", where={"conversation_id": doomed}) == []
        # The conversation written again gets a new key; the old documents stay shredded.
        fresh = VectorDocument(text="my cat is called Tom", metadata={"conversation_id": doomed})
        await encrypted.add([fresh])
        found = await encrypted.similarity_search(
            "dog cat", top_k=10, where={"conversation_id": doomed}
        )
        assert [d.id for d in found] == [fresh.id]
        assert await encrypted.delete_where(where) == 6
        await encrypted.delete([fresh.id])

    @pytest.mark.asyncio
    async def test_a_document_copied_or_given_another_owner_does_not_open(
        self, inner_store: AsyncVectorStore, encrypted: AsyncEncryptedVectorStore, run: str
    ) -> None:
        conversation = f"conv-{run}"
        where = {"conversation_id": conversation}
        secret = VectorDocument(
            text="the vault code is 1234", metadata={"conversation_id": conversation}
        )
        await encrypted.add([secret])
        (stored,) = await inner_store.similarity_search(secret.text, top_k=1, where=where)

        # The stored document written again under another id of the same conversation.
        await inner_store.add([stored.model_copy(update={"id": f"copy-{run}", "score": None})])
        with pytest.raises(MessageDecodeError):
            await encrypted.similarity_search("vault", top_k=10, where=where)
        await inner_store.delete([f"copy-{run}"])
        assert len(await encrypted.similarity_search("vault", top_k=10, where=where)) == 1

        # The stored document given an owner, so that another owner's searches find it.
        metadata = {**stored.metadata, "owner": f"intruder-{run}"}
        await inner_store.add([stored.model_copy(update={"metadata": metadata, "score": None})])
        with pytest.raises(MessageDecodeError):
            await encrypted.similarity_search("vault", where={"owner": f"intruder-{run}"})
        await encrypted.delete_where(where)
