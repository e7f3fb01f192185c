"""Summaries on the SQL backend: the shipped conformance suite on SQLite (a file), PostgreSQL
and MariaDB, sync and async, and what is SQL's own (the table, its life, its text).

Nothing is skipped on SQLite: it allows one writer at a time, and every summary write is a
transaction that starts with a write, so concurrent writers queue for the lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import ExceptionContext

from chatmem.exceptions import ConfigurationError, RepositoryError
from chatmem.messages import UserMessage
from chatmem.testing import AsyncSummaryConformance, ManualClock, SummaryConformance
from chatmem_repositories.sql import (
    AsyncSqlChatMemoryRepository,
    SqlChatMemoryRepository,
    schema_ddl,
)
from chatmem_repositories.sql._drivers import core_engine
from chatmem_repositories.sql._errors import is_retryable
from tests.support.backends import SQL
from tests.support.servers import server_url

T = TypeVar("T")

PREFIX = f"chatmem_sum{uuid.uuid4().hex[:8]}_"
TABLES = ("summaries", "messages", "conversations")


def _drop_tables(url: str, prefix: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            for name in TABLES:
                connection.execute(text(f"DROP TABLE IF EXISTS {prefix}{name}"))
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def server_urls() -> Iterator[dict[str, str]]:
    """The servers' URLs, looked up lazily; this module's tables are dropped at the end."""
    used: dict[str, str] = {}
    yield used
    for url in used.values():
        _drop_tables(url, PREFIX)


@pytest.fixture(params=SQL)
def sql_url(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    server_urls: dict[str, str],
) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'chat.db'}"
    url = server_urls.get(request.param) or server_url(request.param)
    server_urls[request.param] = url
    return url


# Deadlocks and serialization failures: the repository retries them, which would hide them;
# the suite's concurrent writers must cause none (as in tests/backends/sql/test_sql_conformance.py).
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


class TestSqlSummariesAsync(AsyncSummaryConformance):
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


class TestSqlSummariesSync(SummaryConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(self, sql_url: str) -> Callable[..., SqlChatMemoryRepository]:
        def factory(**options: Any) -> SqlChatMemoryRepository:
            return _watch(
                SqlChatMemoryRepository.from_url(
                    sql_url, table_prefix=PREFIX, initialize_schema="always", **options
                )
            )

        return factory


# -- what is SQL's own ------------------------------------------------------------------------


@pytest.fixture
def repository(sql_url: str) -> Iterator[SqlChatMemoryRepository]:
    with _watch(
        SqlChatMemoryRepository.from_url(sql_url, table_prefix=PREFIX, initialize_schema="always")
    ) as repository:
        yield repository


@pytest.fixture
def cid() -> str:
    return f"sql-summary-{uuid.uuid4()}"


def _summary_rows(repository: SqlChatMemoryRepository, conversation_id: str) -> int:
    summaries = repository._tables.summaries
    with repository._engine.connect() as connection:
        statement = (
            select(func.count())
            .select_from(summaries)
            .where(summaries.c.conversation_id == conversation_id)
        )
        return int(connection.execute(statement).scalar_one())


@pytest.mark.parametrize(
    "summary",
    [
        "nul \x00 in the middle\x00",
        "emoji 🎉👩‍👩‍👧 and CJK 你好 and RTL שלום",
        "lone surrogates \ud800 \udfff survive",
        '"quotes" \\backslashes\\ \\u0000 as text, and a JSON-looking {"summary": 1}',
        "",
        "large " + "0123456789abcdef" * 65_536,  # 1 MiB: past MySQL TEXT's 64 KB
    ],
    ids=["nul", "emoji", "surrogates", "json-like", "empty", "1MiB"],
)
def test_summary_text_is_stored_losslessly(
    repository: SqlChatMemoryRepository, cid: str, summary: str
) -> None:
    stored = repository.append(cid, [UserMessage("a")])
    assert repository.save_summary(cid, summary, stored[0].position, expected_version=0)
    found = repository.find_summary(cid)
    assert found is not None
    assert found.text == summary
    repository.delete_by_conversation_id(cid)


def test_bad_arguments_are_refused_and_write_nothing(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    stored = repository.append(cid, [UserMessage("a")])
    position = stored[0].position
    for version in (-1, True, 1.0, "0"):
        with pytest.raises(ConfigurationError, match="expected_version"):
            repository.save_summary(cid, "x", position, expected_version=version)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="position"):
        repository.save_summary(cid, "x", "first", expected_version=0)
    with pytest.raises(ConfigurationError, match="string"):
        repository.save_summary(cid, b"bytes", position, expected_version=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        repository.save_summary("", "x", position, expected_version=0)
    assert repository.find_summary(cid) is None
    assert _summary_rows(repository, cid) == 0
    repository.delete_by_conversation_id(cid)


def test_no_summary_without_a_live_conversation(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    assert not repository.save_summary(cid, "orphan", 1, expected_version=0)
    assert repository.find_summary(cid) is None
    assert _summary_rows(repository, cid) == 0


def test_save_all_keeps_the_summary_and_an_empty_one_deletes_it(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    stored = repository.append(cid, [UserMessage("a"), UserMessage("b")])
    assert repository.save_summary(cid, "kept", stored[1].position, expected_version=0)
    repository.save_all(cid, [UserMessage("c")])
    found = repository.find_summary(cid)
    assert found is not None
    assert (found.text, found.version) == ("kept", 1)
    repository.save_all(cid, [])
    assert repository.find_summary(cid) is None
    assert _summary_rows(repository, cid) == 0


def test_deleted_and_recreated_in_the_same_instant_starts_without_a_summary(
    sql_url: str, cid: str
) -> None:
    # A conversation made again at the same created_at has the same life as the deleted
    # one: only deleting the summary with the conversation keeps it from coming back.
    clock = ManualClock()
    with SqlChatMemoryRepository.from_url(
        sql_url, table_prefix=PREFIX, initialize_schema="always", ttl=60, clock=clock
    ) as repository:
        stored = repository.append(cid, [UserMessage("a")])
        assert repository.save_summary(cid, "old", stored[0].position, expected_version=0)
        repository.delete_by_conversation_id(cid)
        assert _summary_rows(repository, cid) == 0
        stored = repository.append(cid, [UserMessage("b")])
        assert repository.find_summary(cid) is None
        assert not repository.save_summary(cid, "stale", stored[0].position, expected_version=1)
        assert repository.save_summary(cid, "new", stored[0].position, expected_version=0)
        repository.delete_by_conversation_id(cid)


def test_purge_deletes_the_summaries_of_ended_lives(sql_url: str, cid: str) -> None:
    clock = ManualClock()
    with SqlChatMemoryRepository.from_url(
        sql_url, table_prefix=PREFIX, initialize_schema="always", ttl=60, clock=clock
    ) as repository:
        purged, revived, live = cid, f"{cid}-revived", f"{cid}-live"
        for conversation_id in (purged, revived):
            stored = repository.append(conversation_id, [UserMessage("old life")])
            assert repository.save_summary(
                conversation_id, "old", stored[0].position, expected_version=0
            )
        clock.advance(120)
        repository.append(revived, [UserMessage("new life")])  # its old summary is stale
        stored = repository.append(live, [UserMessage("live")])
        assert repository.save_summary(live, "live", stored[0].position, expected_version=0)
        assert repository.purge_expired() >= 1
        assert _summary_rows(repository, purged) == 0
        assert _summary_rows(repository, revived) == 0
        found = repository.find_summary(live)
        assert found is not None
        assert found.text == "live"
        # A purged conversation started again has no summary and starts at version 1.
        stored = repository.append(purged, [UserMessage("again")])
        assert repository.find_summary(purged) is None
        assert repository.save_summary(purged, "again", stored[0].position, expected_version=0)
        for conversation_id in (purged, revived, live):
            repository.delete_by_conversation_id(conversation_id)


def test_a_database_of_the_previous_schema_gets_the_summaries_table(sql_url: str, cid: str) -> None:
    prefix = f"chatmem_old{uuid.uuid4().hex[:8]}_"
    try:
        with SqlChatMemoryRepository.from_url(
            sql_url, table_prefix=prefix, initialize_schema="always"
        ) as repository:
            repository.append(cid, [UserMessage("before the upgrade")])
        # What an earlier version created: the same two tables, no summaries table.
        engine = create_engine(sql_url)
        try:
            with engine.begin() as connection:
                connection.execute(text(f"DROP TABLE {prefix}summaries"))
            assert f"{prefix}summaries" not in inspect(engine).get_table_names()
        finally:
            engine.dispose()
        # Without the table (and not allowed to create it) the error names it.
        with (
            SqlChatMemoryRepository.from_url(
                sql_url, table_prefix=prefix, initialize_schema="never"
            ) as repository,
            pytest.raises(RepositoryError, match=f"{prefix}summaries"),
        ):
            repository.find_summary(cid)
        with SqlChatMemoryRepository.from_url(
            sql_url, table_prefix=prefix, initialize_schema="always"
        ) as repository:
            [message] = repository.find_by_conversation_id(cid)
            assert isinstance(message, UserMessage)
            assert message.text == "before the upgrade"
            assert repository.find_summary(cid) is None
            stored = repository.find_recent(cid, 1)
            assert repository.save_summary(cid, "after", stored[0].position, expected_version=0)
            found = repository.find_summary(cid)
            assert found is not None
            assert found.text == "after"
    finally:
        _drop_tables(sql_url, prefix)


def test_sqlite_embedded_schema_adds_the_table_to_an_existing_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with SqlChatMemoryRepository.from_url(url) as repository:
        repository.append("c", [UserMessage("kept")])
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE chatmem_summaries"))
    engine.dispose()
    with SqlChatMemoryRepository.from_url(url) as repository:  # initialize_schema="embedded"
        stored = repository.find_recent("c", 1)
        assert repository.save_summary("c", "s", stored[0].position, expected_version=0)
        [message] = repository.find_by_conversation_id("c")
        assert isinstance(message, UserMessage)
        assert message.text == "kept"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "mariadb", "mssql", "oracle"])
def test_ddl_creates_the_summaries_table(dialect: str) -> None:
    ddl = schema_ddl(dialect, "app_")
    assert "CREATE TABLE app_summaries" in ddl
    for column in ("life_created_at", "life_first_position", "version", "covers"):
        assert column in ddl.split("CREATE TABLE app_summaries", 1)[1]
