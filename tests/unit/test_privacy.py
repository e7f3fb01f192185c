"""chatmem.privacy in memory: what it refuses, forks of other owners, stopped rotations.

Every backend, plain and encrypted, is in tests/conformance/_async/test_owner_data.py.
"""

from __future__ import annotations

import io
import json
import os

import pytest

from chatmem import InMemoryChatMemoryRepository, UserMessage, scoped_conversation_id
from chatmem.encryption import (
    EncryptedLog,
    EncryptedVectorStore,
    KeyUnavailableError,
    StaticKeyProvider,
)
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.privacy import (
    ErasureReport,
    RotationReport,
    erase_owner,
    export_owner,
    rotate_keys,
)
from chatmem.sessions import Sessions
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, HashingEmbeddingModel
from chatmem.vector_store import AsyncInMemoryVectorStore, InMemoryVectorStore, VectorDocument
from chatmem_cli._transfer_engine import check_lines

ANN_TRIP = scoped_conversation_id("ann", "trip")
BOB_COPY = scoped_conversation_id("bob", "copy")


def test_an_owner_must_be_named() -> None:
    repository = InMemoryChatMemoryRepository()
    with pytest.raises(ConfigurationError, match="owner must be a non-empty string"):
        erase_owner(repository, "")
    with pytest.raises(ConfigurationError, match="owner must be a non-empty string"):
        export_owner(repository, None, io.StringIO())  # type: ignore[arg-type]


def test_erase_refuses_a_vector_store_of_the_other_flavor() -> None:
    store = AsyncInMemoryVectorStore(AsyncHashingEmbeddingModel())
    with pytest.raises(ConfigurationError, match="not a sync vector store"):
        erase_owner(InMemoryChatMemoryRepository(), "ann", vector_store=store)  # type: ignore[arg-type]


@pytest.mark.parametrize("concurrency", [0, -1, True, 1.5])
def test_concurrency_must_be_a_positive_integer(concurrency: object) -> None:
    repository = InMemoryChatMemoryRepository()
    with pytest.raises(ConfigurationError, match="concurrency must be a positive integer"):
        erase_owner(repository, "ann", concurrency=concurrency)  # type: ignore[arg-type]
    log = EncryptedLog(repository, StaticKeyProvider({"k1": os.urandom(32)}))
    with pytest.raises(ConfigurationError, match="concurrency must be a positive integer"):
        rotate_keys(log, concurrency=concurrency)  # type: ignore[arg-type]


def test_rotation_needs_an_encrypted_log() -> None:
    with pytest.raises(ConfigurationError, match="rotating keys needs an encrypted log"):
        rotate_keys(InMemoryChatMemoryRepository())  # type: ignore[arg-type]


def test_a_fork_under_another_owners_id_goes_with_the_owner() -> None:
    # It holds copies of the owner's messages: erased with them, entries included.
    repository = InMemoryChatMemoryRepository()
    repository.append(ANN_TRIP, [UserMessage("I live in Paris")])
    Sessions(repository).fork(ANN_TRIP, BOB_COPY)
    store = InMemoryVectorStore(HashingEmbeddingModel())
    store.add(
        [
            VectorDocument(text="Paris", metadata={"conversation_id": BOB_COPY, "owner": "bob"}),
            VectorDocument(text="Rome", metadata={"conversation_id": "bob:own", "owner": "bob"}),
        ]
    )
    out = io.StringIO()
    exported = export_owner(repository, "ann", out)
    assert (exported.conversations, exported.forks) == (1, 1)
    assert {json.loads(line)["conversation_id"] for line in out.getvalue().splitlines()} == {
        ANN_TRIP,
        BOB_COPY,
    }
    report = erase_owner(repository, "ann", vector_store=store)
    assert report == ErasureReport(conversations=1, forks=1, messages=4, vector_entries=1)
    assert repository.find_by_conversation_id(BOB_COPY) == []
    assert [d.text for d in store.similarity_search("Rome Paris", where={"owner": "bob"})] == [
        "Rome"
    ]


def test_erase_through_an_encrypted_vector_store() -> None:
    log = EncryptedLog(InMemoryChatMemoryRepository(), StaticKeyProvider({"k1": os.urandom(32)}))
    store = EncryptedVectorStore(InMemoryVectorStore(HashingEmbeddingModel()), log)
    log.append(ANN_TRIP, [UserMessage("I live in Paris")])
    Sessions(log).fork(ANN_TRIP, "retry-1")
    store.add(
        [
            VectorDocument(text="Paris", metadata={"conversation_id": ANN_TRIP, "owner": "ann"}),
            VectorDocument(text="again", metadata={"conversation_id": "retry-1"}),
            VectorDocument(text="Rome", metadata={"conversation_id": BOB_COPY, "owner": "bob"}),
        ]
    )
    report = erase_owner(log, "ann", vector_store=store)
    assert (report.conversations, report.forks, report.vector_entries) == (1, 1, 2)
    assert [d.text for d in store.similarity_search("Rome Paris again", top_k=10)] == ["Rome"]


class StoppingEncryptedLog(EncryptedLog):
    """An encrypted log whose rotation stops after a number of conversations."""

    def __init__(self, log: EncryptedLog, conversations: int) -> None:
        super().__init__(log.repository, log.keys)
        self.left = conversations

    def rewrap(self, conversation_id: str) -> int:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().rewrap(conversation_id)


def test_a_stopped_rotation_is_finished_by_running_it_again() -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    repository = InMemoryChatMemoryRepository()
    log = EncryptedLog(repository, StaticKeyProvider({"k1": k1}))
    for n in range(5):
        log.append(f"chat-{n}", [UserMessage(f"message {n}")])
    rotating = EncryptedLog(repository, StaticKeyProvider({"k2": k2, "k1": k1}))
    with pytest.raises(KeyboardInterrupt):
        rotate_keys(StoppingEncryptedLog(rotating, 2))
    assert rotate_keys(rotating) == RotationReport(conversations=5, rewrapped=3)
    assert rotate_keys(rotating) == RotationReport(conversations=5, rewrapped=0)
    new_only = EncryptedLog(repository, StaticKeyProvider({"k2": k2}))
    assert [new_only.find_by_conversation_id(f"chat-{n}")[0].text for n in range(5)] == [
        f"message {n}" for n in range(5)
    ]
    # Without the key that wrapped them, a rotation says which key it needs.
    log.append("chat-late", [UserMessage("written by a process still on k1 alone")])
    with pytest.raises(KeyUnavailableError, match="configure the retired key again"):
        rotate_keys(new_only)


def test_an_owner_export_is_checked_by_import_summaries_aside() -> None:
    repository = InMemoryChatMemoryRepository()
    repository.append(ANN_TRIP, [UserMessage("one"), UserMessage("two")])
    covers = repository.find_history(ANN_TRIP, limit=1)[0].position
    assert repository.save_summary(ANN_TRIP, "said one", covers, expected_version=0)
    out = io.StringIO()
    export_owner(repository, "ann", out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert check_lines(lines) == 2
    broken = [*lines, lines[-1].replace('"summary":{', '"summary":{oops')]
    with pytest.raises(MessageDecodeError, match="line 4 is not an exported message"):
        check_lines(broken)
