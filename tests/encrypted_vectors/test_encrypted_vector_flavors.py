"""The encrypted vector store refuses collaborators of the other flavor, and bad names."""

from __future__ import annotations

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.encryption import (
    AsyncEncryptedLog,
    AsyncEncryptedVectorStore,
    EncryptedLog,
    EncryptedVectorStore,
    StaticKeyProvider,
    generate_key,
)
from chatmem.exceptions import ConfigurationError
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, HashingEmbeddingModel
from chatmem.vector_store import AsyncInMemoryVectorStore, InMemoryVectorStore

KEYS = StaticKeyProvider.from_text(f"k1:{generate_key()}")


def test_a_store_of_the_other_flavor_is_refused() -> None:
    sync_store = InMemoryVectorStore(HashingEmbeddingModel())
    async_store = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())
    async_log = AsyncEncryptedLog(AsyncInMemoryChatMemoryRepository(), KEYS)
    sync_log = EncryptedLog(InMemoryChatMemoryRepository(), KEYS)
    with pytest.raises(ConfigurationError, match="async vector store"):
        AsyncEncryptedVectorStore(sync_store, async_log)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="sync vector store"):
        EncryptedVectorStore(async_store, sync_log)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="AsyncEncryptedLog"):
        AsyncEncryptedVectorStore(async_store, sync_log)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="EncryptedLog"):
        EncryptedVectorStore(sync_store, async_log)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="sync embedding model"):
        EncryptedVectorStore(
            sync_store,
            sync_log,
            embedding_model=AsyncHashingEmbeddingModel(),  # type: ignore[arg-type]
        )


def test_a_store_without_an_embedding_model_needs_one() -> None:
    class Bare:
        def __init__(self) -> None:
            self.inner = InMemoryVectorStore(HashingEmbeddingModel())

        def add(self, documents):  # type: ignore[no-untyped-def]
            return self.inner.add(documents)

    log = EncryptedLog(InMemoryChatMemoryRepository(), KEYS)
    with pytest.raises(ConfigurationError, match="embedding_model="):
        EncryptedVectorStore(Bare(), log)  # type: ignore[arg-type]
    store = EncryptedVectorStore(Bare(), log, embedding_model=HashingEmbeddingModel())  # type: ignore[arg-type]
    assert isinstance(store.embedding_model, HashingEmbeddingModel)


@pytest.mark.parametrize("bad", ["", "a b", "x.y", "é"])
def test_field_names_must_be_identifiers(bad: str) -> None:
    log = EncryptedLog(InMemoryChatMemoryRepository(), KEYS)
    store = InMemoryVectorStore(HashingEmbeddingModel())
    with pytest.raises(ConfigurationError):
        EncryptedVectorStore(store, log, key_field=bad)
    with pytest.raises(ConfigurationError):
        EncryptedVectorStore(store, log, clear_metadata=["owner", bad])
