"""The SQL repository on SQLAlchemy Core: SQLite, PostgreSQL, MySQL/MariaDB and more."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from sqlalchemy import exc as sa_exc

from chatmem._concurrency import AsyncLock, async_api
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._repository_support import check_limit, normalize_ttl
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, MessageType
from chatmem_repositories._options import parse_options, redact_url, split_query
from chatmem_repositories.sql._drivers import (
    AsyncConnection,
    AsyncEngine,
    async_create_all,
    async_create_engine,
    engine_arguments,
    prepare_owned_engine,
)
from chatmem_repositories.sql._errors import is_retryable, map_error
from chatmem_repositories.sql._options import SqlOptions
from chatmem_repositories.sql._schema import build_tables, schema_ddl
from chatmem_repositories.sql._statements import (
    FIRST_POSITION,
    INSERT_CHUNK,
    Batch,
    Statements,
    as_position,
    to_stored,
)

__all__ = ["AsyncSqlChatMemoryRepository"]

T = TypeVar("T")

_ATTEMPTS = 5  # a transaction that hit a deadlock or serialization failure runs again
_PURGE_BATCH = 500
_ERRORS = (sa_exc.SQLAlchemyError, OSError)


def _now() -> datetime:
    return datetime.now(UTC)


def _should_retry(exc: BaseException, attempt: int) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        # A pooled connection the server dropped (restart, idle timeout): the pool is now
        # invalidated, so one more try reconnects. Every operation is safe to repeat
        # (appends are idempotent by message id). Cheaper than pinging on every checkout.
        return attempt < 2
    return attempt < _ATTEMPTS and is_retryable(exc)


def _position_of(stored: StoredMessage) -> int:
    return int(stored.position)


def _text(value: Any) -> str:
    # Ids read through a UNION come back raw: bytes from MySQL's VARBINARY.
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + INSERT_CHUNK] for i in range(0, len(rows), INSERT_CHUNK)]


class AsyncSqlChatMemoryRepository:
    """Stores conversations in two SQL tables through SQLAlchemy Core.

    Appends take a row lock on the conversation to reserve positions, so concurrent writers
    never lose or duplicate a message; reads fetch only the window, through an index.

    Example:
        ```python
        repository = AsyncSqlChatMemoryRepository.from_url("sqlite:///chat.db", ttl=3600)
        async with repository:
            await repository.append("007", [UserMessage("My name is James Bond")])
            recent = await repository.find_recent("007", limit=20)
        ```

    Args:
        engine: The engine to use. The repository does not dispose an engine it is handed;
            one made by :meth:`from_url` is disposed by :meth:`aclose`.
        ttl: Expire a conversation this long after its last write (seconds or a timedelta).
        table_prefix: Prefix of the table names.
        initialize_schema: ``"embedded"`` creates missing tables on SQLite only (the
            default), ``"always"`` on any database, ``"never"`` leaves it to you (see
            :meth:`schema_ddl`).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        ttl: timedelta | float | None = None,
        table_prefix: str = "chatmem_",
        initialize_schema: Literal["embedded", "always", "never"] = "embedded",
    ) -> None:
        options = SqlOptions(table_prefix=table_prefix, initialize_schema=initialize_schema)
        self._engine = engine
        # Reads are single statements: autocommit spares the BEGIN/COMMIT round trips.
        self._read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._owns_engine = False
        self._ttl = normalize_ttl(ttl)
        self._backend = engine.dialect.name
        self._tables = build_tables(options.table_prefix, self._backend)
        self._sql = Statements(self._tables, self._backend)
        self._create_schema = options.initialize_schema == "always" or (
            options.initialize_schema == "embedded" and self._backend == "sqlite"
        )
        self._ready = not self._create_schema
        self._schema_lock = AsyncLock()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncSqlChatMemoryRepository:
        """Create a repository that owns a new engine for ``url``.

        URL query parameters named like an option below are taken as options; the others
        go to the driver. ``postgresql://`` uses psycopg, ``mysql://`` and ``mariadb://``
        use pymysql (aiomysql when async), ``sqlite://`` uses aiosqlite when async.

        Args:
            url: A SQLAlchemy URL, such as ``sqlite:///chat.db`` or
                ``postgresql://user:password@host/db``.
            **options: ``ttl``, ``table_prefix``, ``initialize_schema``, ``connect_timeout``,
                ``read_timeout``, ``pool_size``, ``max_overflow`` (see :class:`SqlOptions`).

        Raises:
            ConfigurationError: For an unknown option, a bad value or a missing driver.
        """
        # Only chatmem's options are taken out; the driver's may repeat (libpq's host).
        _, ours = split_query(url, only=SqlOptions.model_fields)
        parsed = parse_options(SqlOptions, ours, options, backend="sql")
        sa_url, kwargs = engine_arguments(
            url,
            drop=list(ours),
            is_async=async_api,
            connect_timeout=parsed.connect_timeout,
            read_timeout=parsed.read_timeout,
            pool_size=parsed.pool_size,
            max_overflow=parsed.max_overflow,
            pool_pre_ping=parsed.pool_pre_ping,
        )
        try:
            engine = async_create_engine(sa_url, **kwargs)
        except ImportError as exc:
            raise ConfigurationError(
                f"the SQL repository needs the driver {exc.name!r} for "
                f"{sa_url.drivername!r}: pip install the matching chatmem extra, such as "
                f'"chatmem[postgresql]", "chatmem[mysql]" or "chatmem[sqlite]"'
            ) from exc
        prepare_owned_engine(
            engine, read_timeout=parsed.read_timeout, connect_timeout=parsed.connect_timeout
        )
        repository = cls(
            engine,
            ttl=parsed.ttl,
            table_prefix=parsed.table_prefix,
            initialize_schema=parsed.initialize_schema,
        )
        repository._owns_engine = True
        return repository

    @staticmethod
    def schema_ddl(dialect_name: str, table_prefix: str = "chatmem_") -> str:
        """Return the DDL that creates this repository's tables on a dialect.

        Args:
            dialect_name: Such as ``"postgresql"``, ``"mysql"``, ``"mssql"``, ``"oracle"``.
            table_prefix: The configured table-name prefix.
        """
        return schema_ddl(dialect_name, table_prefix)

    def __repr__(self) -> str:
        # SQLAlchemy hides the user-info password only; libpq also takes ?password=.
        url = redact_url(self._engine.url.render_as_string(hide_password=True))
        return f"{type(self).__name__}(url={url!r}, table_prefix={self._tables_prefix()!r})"

    def _tables_prefix(self) -> str:
        return self._tables.conversations.name.removesuffix("conversations")

    # -- plumbing ---------------------------------------------------------------------------

    async def _ensure_schema(self) -> None:
        if self._ready:
            return
        async with self._schema_lock:
            if self._ready:
                return
            try:
                async with self._engine.begin() as connection:
                    await async_create_all(connection, self._tables.metadata)
            except _ERRORS as exc:
                raise map_error(exc, self._backend) from exc
            self._ready = True

    async def _fetch(
        self, statement: Any, params: dict[str, Any] | None = None, *, write: bool = False
    ) -> list[Any]:
        await self._ensure_schema()
        attempt = 0
        # A write statement whose connection broke after it was sent may have committed
        # (autocommit); that stays true even if a later attempt fails to connect.
        maybe_applied = False
        while True:
            attempt += 1
            sent = False
            try:
                async with self._read_engine.connect() as connection:
                    sent = write
                    result = await connection.execute(statement, params)
                    return list(result.all())
            except _ERRORS as exc:
                maybe_applied = maybe_applied or sent
                if not _should_retry(exc, attempt):
                    raise map_error(exc, self._backend, unknown=maybe_applied) from exc

    async def _write(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        await self._ensure_schema()
        attempt = 0
        # Only a failure while committing leaves the outcome unknown: before the COMMIT is
        # sent, a broken connection makes the server roll the transaction back.
        maybe_applied = False
        while True:
            attempt += 1
            committing = False
            try:
                async with self._engine.begin() as connection:
                    result = await work(connection)
                    committing = True
                return result
            except _ERRORS as exc:
                maybe_applied = maybe_applied or committing
                if not _should_retry(exc, attempt):
                    raise map_error(exc, self._backend, unknown=maybe_applied) from exc

    def _expiry(self, now: datetime) -> datetime | None:
        return None if self._ttl is None else now + self._ttl

    async def _reserve(
        self,
        connection: AsyncConnection,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        *,
        replace: bool = False,
    ) -> tuple[int, set[str] | None]:
        """Lock (or create) the conversation row and reserve positions.

        Returns:
            The first reserved position, and the batch's ids already stored where this
            dialect reads them in the same round trip (else ``None``).
        """
        sql, expires_at = self._sql, self._expiry(now)
        existing: set[str] | None = None
        if sql.reservation == "returning":
            statement = sql.reserve(conversation_id, batch, now, expires_at, replace=replace)
            row = (await connection.execute(statement)).one()
        elif sql.reservation == "mysql":
            statement = sql.reserve(conversation_id, batch, now, expires_at, replace=replace)
            await connection.execute(statement)
            ids = [m.id for m in batch.messages[:INSERT_CHUNK]]
            rows = (await connection.execute(sql.counter_and_ids(conversation_id, ids))).all()
            row = next(r for r in rows if r[0] is not None)
            existing = {_text(r[2]) for r in rows if r[0] is None}
            if len(batch.messages) > INSERT_CHUNK:
                existing = None  # big batch: _insert looks the ids up chunk by chunk
        else:
            await self._reserve_generic(connection, conversation_id, batch, now, replace)
            row = (await connection.execute(sql.counter(conversation_id))).one()
        start = int(row[0]) - len(batch.messages)
        if int(row[1]) == start:
            # This write revived an expired conversation: its old messages go. They are all
            # of its messages: every one is below the old next position, `start`.
            await connection.execute(sql.delete_messages(conversation_id))
            existing = set()
        return start, existing

    async def _reserve_generic(
        self,
        connection: AsyncConnection,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        replace: bool,
    ) -> None:
        sql, expires_at = self._sql, self._expiry(now)
        bump = sql.bump(conversation_id, batch, now, expires_at, replace=replace)
        if (await connection.execute(bump)).rowcount:
            return
        try:
            async with connection.begin_nested():
                await connection.execute(sql.create(conversation_id, batch, now, expires_at))
        except sa_exc.IntegrityError:
            await connection.execute(bump)  # another writer created it first

    async def _insert(
        self,
        connection: AsyncConnection,
        conversation_id: str,
        rows: list[dict[str, Any]],
        existing: set[str] | None,
    ) -> set[int]:
        """Insert rows whose message id is not stored yet; return the positions stored."""
        sql = self._sql
        stored: set[int] = set()
        if existing is None and sql.skip_conflicts:
            for chunk in _chunks(rows):
                result = await connection.execute(sql.insert_messages(chunk, skip_conflicts=True))
                stored.update(int(r[0]) for r in result.all())
            return stored
        # We hold the conversation's row lock, so no other writer can add these ids meanwhile.
        if existing is None:
            existing = set()
            for chunk in _chunks(rows):
                ids = [r["message_id"] for r in chunk]
                result = await connection.execute(sql.existing_ids(conversation_id, ids))
                existing.update(r[0] for r in result.all())
        fresh = [r for r in rows if r["message_id"] not in existing]
        for chunk in _chunks(fresh):
            await connection.execute(sql.insert_messages(chunk, skip_conflicts=False))
        return {r["position"] for r in fresh}

    # -- Spring AI's four methods -------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        return [row[0] for row in await self._fetch(self._sql.conversation_ids(_now()))]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        rows = await self._fetch(self._sql.everything(conversation_id, _now()))
        return [to_stored(row, conversation_id).message for row in rows]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages in one transaction; positions keep increasing."""
        validate_conversation_id(conversation_id)
        batch = Batch(messages)
        if not batch.messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        now = _now()

        async def work(connection: AsyncConnection) -> None:
            start, _ = await self._reserve(connection, conversation_id, batch, now, replace=True)
            if start != FIRST_POSITION:
                # A conversation this reservation created has no messages. Skipping the
                # delete matters on InnoDB: deleting nothing still locks the gap before the
                # next conversation's first message, and a neighbour that deleted its own
                # messages and inserts into that same gap would deadlock with our insert.
                await connection.execute(self._sql.delete_messages(conversation_id))
            for chunk in _chunks(batch.rows(conversation_id, start)):
                await connection.execute(self._sql.insert_messages(chunk, skip_conflicts=False))

        await self._write(work)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its messages; unknown ids are ignored."""
        validate_conversation_id(conversation_id)

        async def work(connection: AsyncConnection) -> None:
            # The conversation row first: the same lock order as appends, so no deadlock.
            await connection.execute(self._sql.delete_conversation(conversation_id))
            await connection.execute(self._sql.delete_messages(conversation_id))

        await self._write(work)

    # -- log capabilities -----------------------------------------------------------------------

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """Append messages in one transaction; ids already stored are skipped."""
        validate_conversation_id(conversation_id)
        batch = Batch(messages)
        if not batch.messages:
            return []
        now = _now()
        if (
            self._sql.one_statement_append
            and batch.system_offset is None
            and len(batch.messages) <= INSERT_CHUNK
        ):
            statement, params = self._sql.append_in_one_statement(
                conversation_id, batch.rows(conversation_id, 0), now, self._expiry(now)
            )
            # Autocommit: one round trip in all.
            rows = await self._fetch(statement, params, write=True)
            if rows:
                start = int(rows[0][0]) - len(batch.messages)
                stored_positions = {int(r[1]) for r in rows if r[1] is not None}
                return [
                    StoredMessage(start + i, message)
                    for i, message in enumerate(batch.messages)
                    if start + i in stored_positions
                ]
            # No row: the conversation had expired; the full path below starts it anew.

        async def work(connection: AsyncConnection) -> list[StoredMessage]:
            start, existing = await self._reserve(connection, conversation_id, batch, now)
            rows = batch.rows(conversation_id, start)
            stored = await self._insert(connection, conversation_id, rows, existing)
            offset = batch.system_offset
            if offset is not None and start + offset not in stored:
                # The reserved system position went to a duplicate: point at the real one.
                await connection.execute(self._sql.fix_system(conversation_id))
            return [
                StoredMessage(start + i, message)
                for i, message in enumerate(batch.messages)
                if start + i in stored
            ]

        return await self._write(work)

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` non-system messages, oldest first (one statement)."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        end = None if before is None else as_position(before)
        if limit == 0:
            return []
        rows = await self._fetch(self._sql.window(conversation_id, limit, end, _now()))
        return [to_stored(row, conversation_id) for row in reversed(rows)]

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` others, in one statement."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        if limit == 0:
            return await self.find_system_message(conversation_id), []
        statement, params = self._sql.window_and_system(conversation_id, limit, _now())
        system: StoredMessage | None = None
        recent: list[StoredMessage] = []
        for kind, position, body in await self._fetch(statement, params):
            stored = to_stored((position, body), conversation_id)
            if kind == 1:
                system = stored
            else:
                recent.append(stored)
        recent.sort(key=_position_of)
        return system, recent

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message through the conversation's reference."""
        validate_conversation_id(conversation_id)
        rows = await self._fetch(self._sql.system(conversation_id, _now()))
        return to_stored(rows[0], conversation_id) if rows else None

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        validate_conversation_id(conversation_id)
        if message_type == MessageType.SYSTEM:
            return await self.find_system_message(conversation_id)
        rows = await self._fetch(self._sql.latest(conversation_id, message_type, _now()))
        return to_stored(rows[0], conversation_id) if rows else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of live conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        statement = self._sql.page(_now(), owner=owner, cursor=cursor, limit=limit)
        ids = [row[0] for row in await self._fetch(statement)]
        page = ids[:limit]
        return ConversationPage(page, page[-1] if len(ids) > limit and page else None)

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every given filter, oldest first."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        statement = self._sql.history(
            conversation_id,
            _now(),
            since=since,
            until=until,
            types=types,
            text=text,
            after=None if after is None else as_position(after),
            limit=limit,
        )
        return [to_stored(row, conversation_id) for row in await self._fetch(statement)]

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete non-system messages positioned before ``position``; return how many."""
        validate_conversation_id(conversation_id)
        end = as_position(position)
        now = _now()

        async def work(connection: AsyncConnection) -> int:
            row = (await connection.execute(self._sql.lock(conversation_id))).first()
            if row is None or (row[0] is not None and row[0] <= now):
                return 0
            result = await connection.execute(self._sql.delete_chat_before(conversation_id, end))
            return int(result.rowcount)

        return await self._write(work)

    async def purge_expired(self) -> int:
        """Delete expired conversations in batches; return how many were deleted.

        On MySQL/MariaDB each conversation is deleted in a transaction of its own, in the
        lock order of every other write (see :meth:`_purge_one_by_one`).
        """
        now = _now()
        if self._sql.innodb:
            return await self._purge_one_by_one(now)

        async def work(connection: AsyncConnection) -> tuple[int, int]:
            expired = self._sql.expired(now, _PURGE_BATCH, lock=True)
            ids = [r[0] for r in (await connection.execute(expired))]
            if not ids:
                return 0, 0
            await connection.execute(self._sql.purge_messages(ids, now))
            result = await connection.execute(self._sql.purge_conversations(ids, now))
            return len(ids), int(result.rowcount)

        total = 0
        while True:
            seen, deleted = await self._write(work)
            total += deleted
            if seen < _PURGE_BATCH:
                return total

    async def _purge_one_by_one(self, now: datetime) -> int:
        # InnoDB locks what a statement scans, gaps included. Every other write locks the
        # conversation row first, then its messages; a purge that locked a batch of rows
        # through the expiry index, or deleted by a list of ids (which MariaDB may run as a
        # table scan), locked rows of live conversations and index entries before their
        # rows, and deadlocked with appends and deletes. So the expired ids are read without
        # locks, and each conversation is then deleted like delete_by_conversation_id: its
        # row by primary key (if still expired), then its messages, and committed before
        # the next one, so the purge never holds one conversation while waiting for another.
        sql = self._sql

        async def purge(connection: AsyncConnection, conversation_id: str) -> int:
            if not (await connection.execute(sql.purge_one(conversation_id, now))).rowcount:
                return 0  # revived meanwhile, or purged by another caller
            await connection.execute(sql.delete_messages(conversation_id))
            return 1

        total = 0
        while True:
            rows = await self._fetch(sql.expired(now, _PURGE_BATCH, lock=False))
            for (conversation_id,) in rows:
                total += await self._write(partial(purge, conversation_id=conversation_id))
            if len(rows) < _PURGE_BATCH:
                return total

    async def aclose(self) -> None:
        """Dispose of the engine if this repository created it."""
        if self._owns_engine:
            await self._engine.dispose()

    async def __aenter__(self) -> AsyncSqlChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
