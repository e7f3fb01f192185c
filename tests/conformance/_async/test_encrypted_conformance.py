"""The conformance suites on every backend with encryption at rest, sync and async.

Each backend's repository is made from its URL with ``encryption=<key provider>``, so every
case runs on the encrypted log over that backend: the repository conformance suite, the
history checker and the summary-store conformance suite, with the backend's own settings
(clock, time to live, prefixes) as its plain conformance module sets them. A corrupt record
is one whose ciphertext was altered in the store (one character of it changed): it must fail
to open with :class:`~chatmem.exceptions.MessageDecodeError` and spare the other records.

Except in memory, the concurrency cases run smaller than in the plain suites (fewer appends
per writer, a smaller history checker and summary run): here they check the encrypted log
under concurrency; the plain suites load the stores themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import pytest
from cassandra.cluster import Cluster, Session
from sqlalchemy import event, select, update
from sqlalchemy.engine import ExceptionContext

from chatmem.backend import Position, StoredMessage
from chatmem.encryption import SEALED, AsyncEncryptedLog, StaticKeyProvider, generate_key
from chatmem.messages import EventMessage, Message, decode_message, encode_message
from chatmem.repository import AsyncOwnedChatMemoryLog
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
    AsyncSummaryConformance,
    CheckerSettings,
)
from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from chatmem_repositories.redis._schema import KeyLayout
from chatmem_repositories.sql._drivers import core_engine
from chatmem_repositories.sql._errors import is_retryable
from tests.support.backends import SQL, async_open_repository
from tests.support.servers import server_url

T = TypeVar("T")

# Named PREFIX for the redis_url fixture, which deletes the keys under it after the module.
PREFIX = f"chatmem-encrypted-{uuid.uuid4().hex[:8]}"
SQL_PREFIX = "chatmem_test_"  # the SQL conformance suite's tables
CASSANDRA_MESSAGES = "chatmem_messages_v2"  # the Cassandra conformance suite's table
KEYS = StaticKeyProvider.from_text(f"k1:{generate_key()}")

Factory = Callable[..., Awaitable[AsyncOwnedChatMemoryLog]]
Edit = Callable[[str], str]


def _encrypted_factory(name: str, tmp_path: Path, **fixed: Any) -> Factory:
    async def factory(**options: Any) -> AsyncOwnedChatMemoryLog:
        return async_open_repository(name, tmp_path, encryption=KEYS, **fixed, **options)

    return factory


def _altered(token: str) -> str:
    """The sealed token with one character of its ciphertext changed (still base64)."""
    head, _, encoded = token.rpartition(".")
    middle = len(encoded) // 2
    swapped = "B" if encoded[middle] == "A" else "A"
    return f"{head}.{encoded[:middle]}{swapped}{encoded[middle + 1 :]}"


def _sealed_token(message: Message) -> str:
    holder = message.payload if isinstance(message, EventMessage) else message.metadata
    token = holder[SEALED]
    assert isinstance(token, str)
    return token


async def _alter_ciphertext(
    log: AsyncEncryptedLog,
    conversation_id: str,
    position: Position,
    rewrite: Callable[[Any, str, Position, Edit], Awaitable[None]],
) -> None:
    """Change one character of the ciphertext stored at ``position``, in the store itself."""
    inner = log.repository
    stored = [
        s for s in await inner.find_history(conversation_id, limit=1000) if s.position == position
    ]
    assert len(stored) == 1, f"no record at {position!r}"
    token = _sealed_token(stored[0].message)
    altered = _altered(token)

    def edit(record: str) -> str:
        assert record.count(token) == 1, "the stored record does not hold the token verbatim"
        return record.replace(token, altered)

    await rewrite(inner, conversation_id, position, edit)


class _Smaller:
    """The concurrency cases, smaller: every writer still starts at once on a new conversation."""

    appends_per_writer: ClassVar[int] = 5
    checker_settings: ClassVar[CheckerSettings] = CheckerSettings(
        workers=3, purgers=1, conversations=6, cycles=2, steps_per_cycle=5
    )


class _SmallerSummaries:
    """The summary suite's concurrency cases, smaller."""

    concurrent_writers: ClassVar[int] = 4
    writes_per_writer: ClassVar[int] = 2
    turns_per_writer: ClassVar[int] = 3


# -- memory ----------------------------------------------------------------------------------


async def _rewrite_memory(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
    conversation = inner._conversations[conversation_id]
    for records in (conversation.log, conversation.chat):
        for index, stored in enumerate(records):
            if stored.position == position:
                message = decode_message(edit(encode_message(stored.message)))
                records[index] = StoredMessage(position, message)


class _Memory:
    supports_clock: ClassVar[bool] = True

    @pytest.fixture
    def repository_factory(self, tmp_path: Path) -> Factory:
        return _encrypted_factory("memory", tmp_path)

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await _alter_ciphertext(repository, conversation_id, position, _rewrite_memory)


class TestEncryptedMemoryAsync(_Memory, AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    pass


class TestEncryptedMemorySummariesAsync(_Memory, AsyncSummaryConformance):
    pass


# -- SQL: SQLite (a file), PostgreSQL, MariaDB -----------------------------------------------

# Deadlocks and serialization failures, which the repository retries and so would hide: the
# suites' concurrent writers must cause none (as in the SQL conformance module).
RETRYABLE_ERRORS: list[str] = []


def _record_retryable(context: ExceptionContext) -> None:
    if is_retryable(context.sqlalchemy_exception or context.original_exception):
        RETRYABLE_ERRORS.append(str(context.original_exception))


def _watch(log: T) -> T:
    engine = log.repository._engine  # type: ignore[attr-defined]
    event.listen(core_engine(engine), "handle_error", _record_retryable)
    return log


async def _rewrite_sql(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
    messages = inner._tables.messages
    where = (messages.c.conversation_id == conversation_id, messages.c.position == position)
    async with inner._engine.begin() as connection:
        body = (await connection.execute(select(messages.c.body).where(*where))).scalar_one()
        await connection.execute(update(messages).where(*where).values(body=edit(body)))


class _Sql:
    supports_clock: ClassVar[bool] = (
        True  # expiry is decided on the client, with the repository's clock
    )

    @pytest.fixture(params=SQL)
    def repository_factory(self, request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
        make = _encrypted_factory(request.param, tmp_path, table_prefix=SQL_PREFIX)

        async def factory(**options: Any) -> AsyncOwnedChatMemoryLog:
            return _watch(await make(**options))

        return factory

    @pytest.fixture(autouse=True)
    def no_deadlocks(self) -> Iterator[None]:
        RETRYABLE_ERRORS.clear()
        yield
        assert RETRYABLE_ERRORS == [], f"{len(RETRYABLE_ERRORS)} deadlock/serialization errors"

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await _alter_ciphertext(repository, conversation_id, position, _rewrite_sql)


class TestEncryptedSqlAsync(
    _Sql, _Smaller, AsyncRepositoryConformance, AsyncHistoryCheckerConformance
):
    pass


class TestEncryptedSqlSummariesAsync(_Sql, _SmallerSummaries, AsyncSummaryConformance):
    pass


# -- Redis -----------------------------------------------------------------------------------


async def _rewrite_redis(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
    key = KeyLayout(PREFIX).conversation(conversation_id)[1]
    record = await inner._client.hget(key, str(position))
    await inner._client.hset(key, str(position), edit(record.decode("utf-8")))


class _Redis:
    @pytest.fixture
    def repository_factory(self, redis_url: str, tmp_path: Path) -> Factory:
        return _encrypted_factory("redis", tmp_path, key_prefix=PREFIX)

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await _alter_ciphertext(repository, conversation_id, position, _rewrite_redis)


@pytest.mark.backend("redis")
class TestEncryptedRedisAsync(
    _Redis, _Smaller, AsyncRepositoryConformance, AsyncHistoryCheckerConformance
):
    pass


@pytest.mark.backend("redis")
class TestEncryptedRedisSummariesAsync(_Redis, _SmallerSummaries, AsyncSummaryConformance):
    pass


# -- MongoDB (FerretDB) ----------------------------------------------------------------------


async def _rewrite_mongo(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
    where = {"conversation_id": conversation_id, "position": position}
    document = await inner._messages.find_one(where)
    result = await inner._messages.update_one(where, {"$set": {"data": edit(document["data"])}})
    assert result.modified_count == 1


class _Mongo:
    supports_clock: ClassVar[bool] = (
        True  # FerretDB has no TTL index: chatmem's stored expiry decides
    )

    @pytest.fixture
    def repository_factory(self, mongodb_prefix: str, tmp_path: Path) -> Factory:
        return _encrypted_factory("mongodb", tmp_path, collection_prefix=mongodb_prefix)

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await _alter_ciphertext(repository, conversation_id, position, _rewrite_mongo)


@pytest.mark.backend("mongodb")
class TestEncryptedMongoAsync(
    _Mongo, _Smaller, AsyncRepositoryConformance, AsyncHistoryCheckerConformance
):
    pass


@pytest.mark.backend("mongodb")
class TestEncryptedMongoSummariesAsync(_Mongo, _SmallerSummaries, AsyncSummaryConformance):
    pass


# -- Cassandra -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cassandra_session() -> Iterator[Session]:
    """A separate session for raw writes, as another client would make them."""
    url = server_url("cassandra")
    with CassandraChatMemoryRepository.from_url(url, create_keyspace=True) as repository:
        repository.find_conversation_ids()  # creates the keyspace and tables
    parts = urlsplit(url)
    cluster = Cluster([parts.hostname or "127.0.0.1"], port=parts.port or 9042)
    try:
        yield cluster.connect(parts.path.strip("/"))
    finally:
        cluster.shutdown()


def _cassandra_rewriter(
    session: Session,
) -> Callable[[Any, str, Position, Edit], Awaitable[None]]:
    async def rewrite(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
        where = "conversation_id = %s AND section = 'c' AND position = %s"
        key = (conversation_id, int(position))
        row = session.execute(
            f"SELECT message_id, data FROM {CASSANDRA_MESSAGES} WHERE {where}", key
        ).one()
        session.execute(
            f"UPDATE {CASSANDRA_MESSAGES} SET data = %s WHERE {where} AND message_id = %s",
            (edit(row.data), *key, row.message_id),
        )

    return rewrite


class _Cassandra:
    # Cassandra expires whole seconds: with a 1 s ttl a conversation lives 1 to 2 s after its
    # last append, so the history checker idles longer between cycles to see every one expire.
    checker_expiry_pause: ClassVar[float | None] = 2.1

    @pytest.fixture
    def repository_factory(self, cassandra_session: Session, tmp_path: Path) -> Factory:
        self._raw = cassandra_session
        return _encrypted_factory("cassandra", tmp_path)

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        rewrite = _cassandra_rewriter(self._raw)
        await _alter_ciphertext(repository, conversation_id, position, rewrite)


@pytest.mark.backend("cassandra")
class TestEncryptedCassandraAsync(
    _Cassandra, _Smaller, AsyncRepositoryConformance, AsyncHistoryCheckerConformance
):
    pass


@pytest.mark.backend("cassandra")
class TestEncryptedCassandraSummariesAsync(_Cassandra, _SmallerSummaries, AsyncSummaryConformance):
    pass


# -- Neo4j -----------------------------------------------------------------------------------

_READ = "MATCH (m:Message {conversation_id: $cid, position: $position}) RETURN m.data AS data"
_WRITE = "MATCH (m:Message {conversation_id: $cid, position: $position}) SET m.data = $data"


async def _rewrite_neo4j(inner: Any, conversation_id: str, position: Position, edit: Edit) -> None:
    found = await inner._driver.execute_query(_READ, cid=conversation_id, position=position)
    data = edit(found.records[0]["data"])
    written = await inner._driver.execute_query(
        _WRITE, cid=conversation_id, position=position, data=data
    )
    assert written.summary.counters.properties_set == 1


class _Neo4j:
    # The expiry tests step a ManualClock over the TTL (supports_clock), so the TTL costs no
    # waiting; 2 s keeps the repository's "now" and the clock's apart from rounding.
    ttl_seconds: ClassVar[float] = 2.0
    supports_clock: ClassVar[bool] = True

    @pytest.fixture
    def repository_factory(self, tmp_path: Path) -> Factory:
        return _encrypted_factory("neo4j", tmp_path)

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        await _alter_ciphertext(repository, conversation_id, position, _rewrite_neo4j)


@pytest.mark.backend("neo4j")
class TestEncryptedNeo4jAsync(
    _Neo4j, _Smaller, AsyncRepositoryConformance, AsyncHistoryCheckerConformance
):
    pass


@pytest.mark.backend("neo4j")
class TestEncryptedNeo4jSummariesAsync(_Neo4j, _SmallerSummaries, AsyncSummaryConformance):
    pass
