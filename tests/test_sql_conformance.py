"""The conformance suite on SQLite (a file), PostgreSQL and MariaDB, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import update

from chatmem._records import Position
from chatmem.testing import AsyncRepositoryConformance, RepositoryConformance
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository, SqlChatMemoryRepository
from tests.conftest import server_url

PREFIX = "chatmem_test_"
BACKENDS = ["sqlite", "postgresql", "mariadb"]


@pytest.fixture(params=BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        # One file per test class and backend, like a real embedded database.
        path = tmp_path_factory.mktemp("sqlite") / "chat.db"
        return f"sqlite:///{path}"
    return server_url(request.param)


def _corrupt_statement(repository: Any, conversation_id: str, position: Position) -> Any:
    messages = repository._tables.messages
    return (
        update(messages)
        .where(messages.c.conversation_id == conversation_id, messages.c.position == position)
        .values(body='{"v": 1, "type": "user", "text": ')
    )


class TestSqlAsync(AsyncRepositoryConformance):
    @pytest.fixture
    def repository_factory(
        self, sql_url: str
    ) -> Callable[..., Awaitable[AsyncSqlChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncSqlChatMemoryRepository:
            return AsyncSqlChatMemoryRepository.from_url(
                sql_url, table_prefix=PREFIX, initialize_schema="always", **options
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        async with repository._engine.begin() as connection:
            await connection.execute(_corrupt_statement(repository, conversation_id, position))


class TestSqlSync(RepositoryConformance):
    @pytest.fixture
    def repository_factory(self, sql_url: str) -> Callable[..., SqlChatMemoryRepository]:
        def factory(**options: Any) -> SqlChatMemoryRepository:
            return SqlChatMemoryRepository.from_url(
                sql_url, table_prefix=PREFIX, initialize_schema="always", **options
            )

        return factory

    def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        with repository._engine.begin() as connection:
            connection.execute(_corrupt_statement(repository, conversation_id, position))
