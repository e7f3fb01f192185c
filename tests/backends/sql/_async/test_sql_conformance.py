"""The conformance suite on SQLite (a file), PostgreSQL and MariaDB, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from sqlalchemy import event, update
from sqlalchemy.engine import ExceptionContext

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository
from chatmem_repositories.sql._drivers import core_engine
from chatmem_repositories.sql._errors import is_retryable
from tests.support.backends import SQL
from tests.support.servers import server_url

T = TypeVar("T")

PREFIX = "chatmem_test_"


@pytest.fixture(params=SQL)
def sql_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        # One file per test class and backend, like a real embedded database.
        path = tmp_path_factory.mktemp("sqlite") / "chat.db"
        return f"sqlite:///{path}"
    return server_url(request.param)


# Deadlocks and serialization failures seen by any repository of this module. The
# repository retries them, which would hide them; the suite's 16 concurrent writers must
# cause none, so every test checks this stays empty.
RETRYABLE_ERRORS: list[str] = []


def _record_retryable(context: ExceptionContext) -> None:
    if is_retryable(context.sqlalchemy_exception or context.original_exception):
        RETRYABLE_ERRORS.append(str(context.original_exception))


def _watch(repository: T) -> T:
    event.listen(core_engine(repository._engine), "handle_error", _record_retryable)  # type: ignore[attr-defined]
    return repository


@pytest.fixture(autouse=True)
def no_deadlocks() -> Iterator[None]:
    RETRYABLE_ERRORS.clear()
    yield
    assert RETRYABLE_ERRORS == [], f"{len(RETRYABLE_ERRORS)} deadlock/serialization errors"


def _corrupt_statement(repository: Any, conversation_id: str, position: Position) -> Any:
    messages = repository._tables.messages
    return (
        update(messages)
        .where(messages.c.conversation_id == conversation_id, messages.c.position == position)
        .values(body='{"v": 1, "type": "user", "text": ')
    )


class TestSqlAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    supports_clock = True  # expiry is decided on the client, with the repository's clock

    @pytest.fixture
    def repository_factory(
        self, sql_url: str
    ) -> Callable[..., Awaitable[AsyncSqlChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncSqlChatMemoryRepository:
            return _watch(
                AsyncSqlChatMemoryRepository.from_url(
                    sql_url, table_prefix=PREFIX, initialize_schema="always", **options
                )
            )

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        async with repository._engine.begin() as connection:
            await connection.execute(_corrupt_statement(repository, conversation_id, position))
