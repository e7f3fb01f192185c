"""The SQL repository on SQLAlchemy Core: SQLite, PostgreSQL, MySQL/MariaDB and more.

The repository checks arguments and runs each operation of its dialect's plan
(:mod:`chatmem_repositories.sql._async.plans`) through its runner
(:mod:`~chatmem_repositories.sql._async.runner`). Every SQL decision is in the plan; all the
I/O is in the runner.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal

from chatmem.backend import (
    AsyncTwin,
    Clock,
    ConversationPage,
    Position,
    StoredMessage,
    check_clock,
    check_limit,
    conversation_page,
    normalize_ttl,
    redact_url,
)
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import Message, MessageType
from chatmem.repository import ConversationSummary
from chatmem_repositories.sql._async.plans import plan_for
from chatmem_repositories.sql._async.runner import AsyncRunner
from chatmem_repositories.sql._async.summaries import AsyncSummaries
from chatmem_repositories.sql._codec import FIRST_POSITION, Batch, as_position, to_stored
from chatmem_repositories.sql._drivers import (
    AsyncEngine,
    async_create_engine,
    engine_arguments,
    prepare_owned_engine,
)
from chatmem_repositories.sql._options import SqlOptions, parse_url
from chatmem_repositories.sql._schema import build_tables, schema_ddl

__all__ = ["AsyncSqlChatMemoryRepository"]


class AsyncSqlChatMemoryRepository:
    """Stores conversations in SQL tables through SQLAlchemy Core.

    Appends take a row lock on the conversation to reserve positions, so concurrent writers
    never lose or duplicate a message; reads fetch only the window, through an index.
    Summaries (:class:`~chatmem.repository.AsyncSummaryStore`) live in a third table,
    ``<prefix>summaries``, one row per conversation: the write is a compare-and-set on its
    version, and a summary is deleted with its conversation and never read once the
    conversation has expired (a new life starts without one).

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
            :meth:`schema_ddl`). Only missing tables are created, so a database made by an
            earlier version gets the summaries table and keeps its data.
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
        clock: Clock | None = None,
    ) -> None:
        options = SqlOptions(table_prefix=table_prefix, initialize_schema=initialize_schema)
        self._engine = engine
        self._owns_engine = False
        self._ttl = normalize_ttl(ttl)
        self._now = check_clock(clock)
        self._backend = engine.dialect.name
        self._tables = build_tables(options.table_prefix, self._backend)
        create = options.initialize_schema == "always" or (
            options.initialize_schema == "embedded" and self._backend == "sqlite"
        )
        self._runner = AsyncRunner(engine, self._tables.metadata, create_schema=create)
        self._plan = plan_for(self._tables, engine.dialect, self._runner)
        self._summaries = AsyncSummaries(self._runner, self._tables, self._backend)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
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
        parsed = parse_url(url, options, driver_options)
        settings = parsed.options
        sa_url, kwargs = engine_arguments(
            # SQLAlchemy's own URL handling drops chatmem's options: a URL rebuilt by
            # urllib loses the empty authority of sqlite:///path.
            url,
            drop=list(SqlOptions.model_fields),
            is_async=AsyncTwin.IS_ASYNC,
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
        return await self._runner.perform(self._plan.server_version, schema=False)

    def __repr__(self) -> str:
        # SQLAlchemy hides the user-info password only; libpq also takes ?password=.
        url = redact_url(self._engine.url.render_as_string(hide_password=True))
        prefix = self._tables.conversations.name.removesuffix("conversations")
        return f"{type(self).__name__}(url={url!r}, table_prefix={prefix!r})"

    def _expiry(self, now: datetime) -> datetime | None:
        return None if self._ttl is None else now + self._ttl

    # -- Spring AI's four methods -------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        rows = await self._runner.read(self._plan.reads.conversation_ids(self._now()))
        return [row[0] for row in rows]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        return await self._runner.perform(
            partial(self._plan.everything, conversation_id, self._now())
        )

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages in one transaction; positions keep increasing.

        The summary stays (it covers positions, which are never reused); an empty
        ``messages`` deletes the conversation with its summary.
        """
        validate_conversation_id(conversation_id)
        batch, now = Batch(messages), self._now()
        if not len(batch):
            await self._delete(conversation_id)
            return
        await self._runner.perform(
            partial(self._plan.save_all, conversation_id, batch, now, self._expiry(now))
        )

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation, its messages and its summary; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        await self._delete(conversation_id)

    async def _delete(self, conversation_id: str) -> None:
        summary = self._summaries.deletion(conversation_id)
        await self._runner.perform(partial(self._plan.delete, conversation_id, summary))

    # -- log capabilities -----------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages in one transaction; ids already stored are skipped.

        With ``expected_version``, the reservation of positions (the first statement, which
        locks the conversation row) also says the version; a mismatch rolls it back.

        Raises:
            VersionConflictError: ``expected_version`` is given and is not the conversation's.
        """
        validate_conversation_id(conversation_id)
        batch = Batch(messages)
        if not len(batch):
            if expected_version is not None:
                actual = await self.find_version(conversation_id)
                if actual != expected_version:
                    raise VersionConflictError(conversation_id, expected_version, actual)
            return []
        now = self._now()
        return await self._runner.perform(
            partial(
                self._plan.append,
                conversation_id,
                batch,
                now,
                self._expiry(now),
                expected_version,
            )
        )

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: 0 if it holds nothing (or expired).

        The last position handed out (the row's counter minus one), read by primary key.
        """
        validate_conversation_id(conversation_id)
        return await self._runner.perform(partial(self._plan.version, conversation_id, self._now()))

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        end = None if before is None else as_position(before)
        if limit == 0:
            return []
        return await self._runner.perform(
            partial(self._plan.recent, conversation_id, limit, end, self._now())
        )

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` chat messages (one read)."""
        check_limit(limit)
        validate_conversation_id(conversation_id)
        if limit == 0:
            return await self.find_system_message(conversation_id), []
        return await self._runner.perform(
            partial(self._plan.window, conversation_id, limit, self._now())
        )

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message through the conversation's reference."""
        validate_conversation_id(conversation_id)
        rows = await self._runner.read(self._plan.reads.system(conversation_id, self._now()))
        return to_stored(rows[0], conversation_id) if rows else None

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired)."""
        validate_conversation_id(conversation_id)
        return await self._runner.perform(partial(self._plan.count, conversation_id, self._now()))

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        validate_conversation_id(conversation_id)
        if message_type == MessageType.SYSTEM:
            return await self.find_system_message(conversation_id)
        statement = self._plan.reads.latest(conversation_id, message_type, self._now())
        rows = await self._runner.read(statement)
        return to_stored(rows[0], conversation_id) if rows else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of live conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        statement = self._plan.reads.page(self._now(), owner=owner, cursor=cursor, limit=limit)
        return conversation_page([row[0] for row in await self._runner.read(statement)], limit)

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
        start = FIRST_POSITION - 1 if after is None else as_position(after)
        if since is None and until is None and types is None and text is None:
            # The page every copy and export reads: a statement compiled once.
            return await self._runner.perform(
                partial(self._plan.page, conversation_id, start, limit, self._now())
            )
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
        return [to_stored(row, conversation_id) for row in await self._runner.read(statement)]

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages before ``position``; return how many."""
        validate_conversation_id(conversation_id)
        end = as_position(position)
        return await self._runner.perform(
            partial(self._plan.delete_before, conversation_id, end, self._now())
        )

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete user, assistant and tool messages in ``(after, through]``; return how many.

        System messages and events are kept (one ``DELETE`` after the row lock).
        """
        validate_conversation_id(conversation_id)
        start = None if after is None else as_position(after)
        end = as_position(through)
        return await self._runner.perform(
            partial(self._plan.delete_between, conversation_id, start, end, self._now())
        )

    async def purge_expired(self) -> int:
        """Delete expired conversations; return how many were deleted.

        In batches of 500 per transaction; on MySQL/MariaDB one conversation per
        transaction, in the lock order of every other write. Then the summaries of
        conversations that are gone or started a new life are deleted, one per transaction.
        """
        purged = await self._runner.perform(partial(self._plan.purge, self._now()))
        await self._summaries.delete_stale()
        return purged

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the live conversation's summary, or ``None`` (one statement).

        Raises:
            MessageDecodeError: If the stored summary is corrupt.
        """
        validate_conversation_id(conversation_id)
        return await self._summaries.find(conversation_id, self._now())

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version`` (one transaction).

        Returns False, writing nothing, if another writer got there first or the
        conversation is not live.

        Raises:
            ConfigurationError: If ``covers`` is not a position of this backend, ``text`` is
                not a string or ``expected_version`` is not a whole number from 0.
        """
        validate_conversation_id(conversation_id)
        position = as_position(covers)
        return await self._summaries.save(
            conversation_id, text, position, expected_version, self._now()
        )

    async def aclose(self) -> None:
        """Dispose of the engine if this repository created it."""
        if self._owns_engine:
            await self._engine.dispose()

    async def __aenter__(self) -> AsyncSqlChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
