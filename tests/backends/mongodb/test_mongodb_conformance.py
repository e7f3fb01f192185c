"""The conformance suite against a MongoDB wire-protocol server (FerretDB 1.24 in the tests)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from pymongo import MongoClient

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
    HistoryCheckerConformance,
    RepositoryConformance,
)
from chatmem_repositories.mongodb import AsyncMongoChatMemoryRepository, MongoChatMemoryRepository
from tests.conftest import server_url

pytestmark = pytest.mark.backend("mongodb")


@pytest.fixture(scope="module")
def mongodb_url() -> str:
    return server_url("mongodb")


@pytest.fixture
def prefix(mongodb_url: str) -> Iterator[str]:
    # Collections of one test, dropped after it. FerretDB 1.24 (SQLite) scans a whole
    # collection for every query but _id lookups, so sharing collections across tests would
    # make each test slower than the last (see docs/backends/mongodb.md).
    name = f"conf{uuid.uuid4().hex[:8]}_"
    yield name
    client: MongoClient[dict[str, Any]] = MongoClient(mongodb_url)
    try:
        database = client.get_default_database()
        for collection in database.list_collection_names():
            if collection.startswith(name):
                database.drop_collection(collection)
    finally:
        client.close()


def _corrupt(repository: Any, conversation_id: str, position: Position) -> Any:
    return repository._messages.update_one(
        {"conversation_id": conversation_id, "position": position},
        {"$set": {"data": "{not json"}},
    )


class TestMongoAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    supports_clock = True  # FerretDB has no TTL index: chatmem's stored expiry decides

    @pytest.fixture
    async def repository_factory(
        self, mongodb_url: str, prefix: str
    ) -> Callable[..., Awaitable[AsyncMongoChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncMongoChatMemoryRepository:
            return AsyncMongoChatMemoryRepository.from_url(
                mongodb_url, collection_prefix=prefix, **options
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        result = await _corrupt(repository, conversation_id, position)
        assert result.modified_count == 1


class TestMongoSync(RepositoryConformance, HistoryCheckerConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(
        self, mongodb_url: str, prefix: str
    ) -> Callable[..., MongoChatMemoryRepository]:
        def factory(**options: Any) -> MongoChatMemoryRepository:
            return MongoChatMemoryRepository.from_url(
                mongodb_url, collection_prefix=prefix, **options
            )

        return factory

    def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        assert _corrupt(repository, conversation_id, position).modified_count == 1
