"""The SQL repository on SQLAlchemy Core: SQLite, PostgreSQL, MySQL/MariaDB and more.

The repository does the I/O only: it validates arguments, runs the programs of its
dialect's plan (:mod:`chatmem_repositories.sql._plans`) on its engine, retries what may be
retried and maps driver errors. Every SQL decision is in the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from sqlalchemy import Executable
from sqlalchemy import exc as sa_exc

from chatmem._concurrency import AsyncLock, async_api
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._repository_support import check_limit, normalize_ttl
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, MessageType
from chatmem_repositories._options import redact_url
from chatmem_repositories.sql._codec import Batch, as_position, to_stored
from chatmem_repositories.sql._drivers import (
    AsyncConnection,
    AsyncEngine,
    async_create_all,
    async_create_engine,
    engine_arguments,
    prepare_owned_engine,
)
from chatmem_repositories.sql._errors import is_retryable, map_error
from chatmem_repositories.sql._options import SqlOptions, parse_sql_url
from chatmem_repositories.sql._plans import plan_for
from chatmem_repositories.sql._plans.steps import (
    Body,
    InsertOrConflict,
    Program,
    Reply,
    Send,
    Transaction,
)
from chatmem_repositories.sql._schema import build_tables, schema_ddl

__all__ = ["AsyncSqlChatMemoryRepository"]

T = TypeVar("T")

_ATTEMPTS = 5  # a transaction that hit a deadlock or serialization failure runs again
_ERRORS = (sa_exc.SQLAlchemyError, OSError)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _should_retry(exc: BaseException, attempt: int) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        # A pooled connection the server dropped (restart, idle timeout): the pool is now
        # invalidated, so one more try reconnects. Every operation is safe to repeat
        # (appends are idempotent by message id). Cheaper than pinging on every checkout.
        return attempt < 2
    return attempt < _ATTEMPTS and is_retryable(exc)


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
        clock: Returns the current time, timezone-aware in UTC, for every expiry the
            repository sets or checks (it reads the time on the client). ``None``: the
            system clock. Tests pass a manual clock to expire conversations without sleeping.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        ttl: timedelta | float | None = None,
        table_prefix: str = "chatmem_",
        initialize_schema: Literal["embedded", "always", "never"] = "embedded",
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        options = SqlOptions(table_prefix=table_prefix, initialize_schema=initialize_schema)
        self._engine = engine
        # Reads (and PostgreSQL's one-statement append) are single statements: autocommit
        # spares the BEGIN/COMMIT round trips.
        self._autocommit_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._owns_engine = False
        self._ttl = normalize_ttl(ttl)
        self._now = clock or _utc_now
        self._backend = engine.dialect.name
        self._tables = build_tables(options.table_prefix, self._backend)
        self._plan = plan_for(self._tables, engine.dialect)
        self._create_schema = options.initialize_schema == "always" or (
            options.initialize_schema == "embedded" and self._backend == "sqlite"
        )
        self._ready = not self._create_schema
        self._schema_lock = AsyncLock()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Callable[[], datetime] | None = None,
        driver_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> AsyncSqlChatMemoryRepository:
        """Create a repository that owns a new engine for ``url``.

        Every URL query parameter must be one of chatmem's options below or a driver
        parameter the backend passes through (see docs/backends/sql.md); anything else is a
        ``ConfigurationError``. ``postgresql://`` uses psycopg, ``mysql://`` and
        ``mariadb://`` use pymysql (aiomysql when async), ``sqlite://`` uses aiosqlite when
        async.

        Args:
            url: A SQLAlchemy URL, such as ``sqlite:///chat.db`` or
                ``postgresql://user:password@host/db``.
            clock: See the class arguments.
            driver_options: Keyword arguments for the driver's ``connect()``, passed as they
                are (they win over the URL and the repository's own settings).
            **options: ``ttl``, ``table_prefix``, ``initialize_schema``, ``connect_timeout``,
                ``read_timeout``, ``pool_size``, ``max_overflow``, ``pool_pre_ping`` (see
                :class:`SqlOptions`); they win over the URL's query. A declared driver
                parameter (such as ``sslmode``) may be given here too.

        Raises:
            ConfigurationError: For an unknown option or URL parameter, a bad value or a
                missing driver.
        """
        parsed = parse_sql_url(url, options, driver_options)
        settings = parsed.options
        sa_url, kwargs = engine_arguments(
            # SQLAlchemy's own URL handling drops chatmem's options: a URL rebuilt by
            # urllib loses the empty authority of sqlite:///path.
            url,
            drop=list(SqlOptions.model_fields),
            is_async=async_api,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            pool_size=settings.pool_size,
            max_overflow=settings.max_overflow,
            pool_pre_ping=settings.pool_pre_ping,
            driver_options=parsed.driver_options,
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
            engine, read_timeout=settings.read_timeout, connect_timeout=settings.connect_timeout
        )
        repository = cls(
            engine,
            ttl=settings.ttl,
            table_prefix=settings.table_prefix,
            initialize_schema=settings.initialize_schema,
            clock=clock,
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

    @property
    def db_system(self) -> str:
        """OpenTelemetry's ``db.system.name``: ``"postgresql"``, ``"mariadb"``, ``"sqlite"``...

        ``"mariadb"`` and ``"mysql"`` are told apart once a connection has been made.
        """
        return self._plan.db_system

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``"PostgreSQL 15.10 (...)"``.

        One query; the tables need not exist.

        Raises:
            RepositoryError: If the server cannot be reached (a subclass says why).
        """
        return await self._perform(self._plan.server_version(), schema=False)

    def __repr__(self) -> str:
        # SQLAlchemy hides the user-info password only; libpq also takes ?password=.
        url = redact_url(self._engine.url.render_as_string(hide_password=True))
        prefix = self._tables.conversations.name.removesuffix("conversations")
        return f"{type(self).__name__}(url={url!r}, table_prefix={prefix!r})"

    # -- running a plan's programs ---------------------------------------------------------

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

    async def _perform(self, program: Program[T], *, schema: bool = True) -> T:
        """Run a plan's program: each step on the engine, its answer sent back."""
        if schema:
            await self._ensure_schema()
        answer: Any = None
        while True:
            try:
                step = program.send(answer)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, Transaction):
                answer = await self._transaction(step.body)
            else:
                write = isinstance(step, Send)
                answer = await self._autocommit(step.statement, step.params, write=write)

    async def _read(self, statement: Executable) -> list[Any]:
        await self._ensure_schema()
        return await self._autocommit(statement, None, write=False)

    async def _autocommit(
        self, statement: Executable, params: Mapping[str, Any] | None, *, write: bool
    ) -> list[Any]:
        """Run one statement in autocommit; return its rows."""
        attempt = 0
        # A write statement whose connection broke after it was sent may have committed
        # (autocommit); that stays true even if a later attempt fails to connect.
        maybe_applied = False
        while True:
            attempt += 1
            sent = False
            try:
                async with self._autocommit_engine.connect() as connection:
                    sent = write
                    result = await connection.execute(statement, params)
                    return list(result.all())
            except _ERRORS as exc:
                maybe_applied = maybe_applied or sent
                if not _should_retry(exc, attempt):
                    raise map_error(exc, self._backend, unknown=maybe_applied) from exc

    async def _transaction(self, body: Callable[[], Body[T]]) -> T:
        """Run a transaction's body, again from the start on a retryable failure."""
        attempt = 0
        # Only a failure while committing leaves the outcome unknown: before the COMMIT is
        # sent, a broken connection makes the server roll the transaction back.
        maybe_applied = False
        while True:
            attempt += 1
            committing = False
            try:
                async with self._engine.begin() as connection:
                    result = await self._run_body(connection, body())
                    committing = True
                return result
            except _ERRORS as exc:
                maybe_applied = maybe_applied or committing
                if not _should_retry(exc, attempt):
                    raise map_error(exc, self._backend, unknown=maybe_applied) from exc

    async def _run_body(self, connection: AsyncConnection, body: Body[T]) -> T:
        answer: Any = None
        while True:
            try:
                step = body.send(answer)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, InsertOrConflict):
                try:
                    async with connection.begin_nested():
                        await connection.execute(step.statement)
                    answer = True
                except sa_exc.IntegrityError:
                    answer = False
            else:
                executed = await connection.execute(step.statement)
                rows = list(executed.all()) if executed.returns_rows else []
                answer = Reply(rows, executed.rowcount)

    def _expiry(self, now: datetime) -> datetime | None:
        return None if self._ttl is None else now + self._ttl

    # -- Spring AI's four methods -------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        rows = await self._read(self._plan.reads.conversation_ids(self._now()))
        return [row[0] for row in rows]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        rows = await self._read(self._plan.reads.everything(conversation_id, self._now()))
        return [to_stored(row, conversation_id).message for row in rows]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages in one transaction; positions keep increasing."""
        validate_conversation_id(conversation_id)
        batch, now = Batch(messages), self._now()
        await self._perform(self._plan.save_all(conversation_id, batch, now, self._expiry(now)))

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its messages; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        await self._perform(self._plan.delete(conversation_id))

    # -- log capabilities -----------------------------------------------------------------------

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """Append messages in one transaction; ids already stored are skipped."""
        validate_conversation_id(conversation_id)
        batch = Batch(messages)
        if not len(batch):
            return []
        now = self._now()
        return await self._perform(
            self._plan.append(conversation_id, batch, now, self._expiry(now))
        )

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` non-system messages, oldest first (one statement)."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        end = None if before is None else as_position(before)
        if limit == 0:
            return []
        statement = self._plan.reads.window(conversation_id, limit, end, self._now())
        rows = await self._read(statement)
        return [to_stored(row, conversation_id) for row in reversed(rows)]

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` others, in one statement."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        if limit == 0:
            return await self.find_system_message(conversation_id), []
        return await self._perform(self._plan.window(conversation_id, limit, self._now()))

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message through the conversation's reference."""
        validate_conversation_id(conversation_id)
        rows = await self._read(self._plan.reads.system(conversation_id, self._now()))
        return to_stored(rows[0], conversation_id) if rows else None

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        validate_conversation_id(conversation_id)
        if message_type == MessageType.SYSTEM:
            return await self.find_system_message(conversation_id)
        statement = self._plan.reads.latest(conversation_id, message_type, self._now())
        rows = await self._read(statement)
        return to_stored(rows[0], conversation_id) if rows else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of live conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        statement = self._plan.reads.page(self._now(), owner=owner, cursor=cursor, limit=limit)
        ids = [row[0] for row in await self._read(statement)]
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
        statement = self._plan.reads.history(
            conversation_id,
            self._now(),
            since=since,
            until=until,
            types=types,
            text=text,
            after=None if after is None else as_position(after),
            limit=limit,
        )
        return [to_stored(row, conversation_id) for row in await self._read(statement)]

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete non-system messages positioned before ``position``; return how many."""
        validate_conversation_id(conversation_id)
        end = as_position(position)
        return await self._perform(self._plan.delete_before(conversation_id, end, self._now()))

    async def purge_expired(self) -> int:
        """Delete expired conversations; return how many were deleted.

        In batches of 500 per transaction; on MySQL/MariaDB one conversation per
        transaction, in the lock order of every other write.
        """
        return await self._perform(self._plan.purge(self._now()))

    async def aclose(self) -> None:
        """Dispose of the engine if this repository created it."""
        if self._owns_engine:
            await self._engine.dispose()

    async def __aenter__(self) -> AsyncSqlChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
