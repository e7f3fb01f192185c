"""Runs a plan's statements on an engine: the SQL repository's only I/O.

A statement in autocommit runs on its own connection (a read, or PostgreSQL's one-statement
append); a transaction runs its body's statements on one connection and commits. The statements
of a turn (statements built once, with parameters) are compiled once into SQL text and run
on the pooled driver connection (reads and PostgreSQL's append on psycopg, SQLite and the
MySQL drivers; the statements of a transaction on SQLite and the sync MySQL drivers):
SQLAlchemy's execution of them cost more than the database's work. Such a statement keeps
everything the engine gives the others: the pool, the deadline on its answer, errors wrapped as
SQLAlchemy's (so they are retried and mapped alike), a dropped connection discarded. A
deadlock, a serialization failure or a pooled connection the server dropped runs the statement
again from its start; anything else is mapped to chatmem's errors, with the outcome of a
write that may have been applied reported as unknown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Executable, MetaData
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import PoolProxiedConnection

from chatmem.backend import AsyncLock, AsyncSemaphore
from chatmem_repositories._deadline import Deadline, arm_socket
from chatmem_repositories.sql._compiled import (
    DriverList,
    DriverSql,
    compile_for_driver,
    compile_with_values,
    statement_list,
)
from chatmem_repositories.sql._drivers import (
    AsyncConnection,
    AsyncEngine,
    async_cancelled_or,
    async_checkin,
    async_checkout,
    async_create_all,
    async_driver_connection,
    async_execute,
    async_execute_list,
    async_fetch_rows,
    async_invalidate,
    async_to_completion,
    deadline_of,
    invalidate_pool,
    sends_statement_lists,
)
from chatmem_repositories.sql._errors import StatementTimeoutError, is_retryable, map_driver_error

__all__ = ["AsyncRunner", "AsyncTransaction"]

T = TypeVar("T")

_ATTEMPTS = 5  # a transaction that hit a deadlock or serialization failure runs again
_ERRORS = (sa_exc.SQLAlchemyError, OSError)
# Drivers whose pooled connections run a turn's statements directly (see the module's text):
# psycopg's connections switch to autocommit for them; SQLite's run a read outside any
# transaction anyway.
_PSYCOPG = ("psycopg", "psycopg_async")
_SQLITE = ("pysqlite", "aiosqlite")
_DIRECT_DRIVERS = (*_PSYCOPG, *_SQLITE)
# MySQL/MariaDB drivers run the reads directly: in the connection's own transaction, as
# through SQLAlchemy (no autocommit switching), rolled back right after.
_DIRECT_READ_DRIVERS = ("pymysql", "mysqldb", "aiomysql")
_DIRECT_TRANSACTION_DRIVERS = (*_SQLITE, "pymysql", "mysqldb", "aiomysql")


def _pool_capacity(engine: AsyncEngine) -> int | None:
    """How many connections the engine's pool can hand out at once; ``None``: unbounded."""
    pool = engine.pool
    size = getattr(pool, "size", None)
    overflow = getattr(pool, "_max_overflow", None)
    if not callable(size) or not isinstance(overflow, int) or overflow < 0:
        return None  # not a bounded queue pool (NullPool, StaticPool, unlimited overflow)
    capacity: int = size() + overflow
    return capacity if capacity > 0 else None


def _should_retry(exc: BaseException, attempt: int) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        # A pooled connection the server dropped (restart, idle timeout): the pool is now
        # invalidated, so one more try reconnects. Every operation is safe to repeat
        # (appends are idempotent by message id). Cheaper than pinging on every checkout.
        return attempt < 2
    return attempt < _ATTEMPTS and is_retryable(exc)


def _cancelled_expired(deadline: Deadline) -> bool:
    """Cancel the deadline; return whether it had already fired (the socket is shut)."""
    deadline.cancel()
    return deadline.expired


def _refused_by_server(exc: Exception) -> bool:
    """Whether a MySQL driver error is the server's answer (not a client-side failure).

    MySQL's client errors (a lost or refused connection) are numbered 2000 to 2999.
    """
    code = exc.args[0] if exc.args else None
    return isinstance(code, int) and not 2000 <= code < 3000


@dataclass(frozen=True, slots=True)
class Reply:
    """What a statement of a transaction answered.

    Attributes:
        rows: The rows it returned (none for a statement without ``RETURNING``).
        rowcount: The rows it changed, as the driver reports it.
        lastrowid: The driver's ``lastrowid`` (MySQL: the value of ``LAST_INSERT_ID()``
            the statement set), or ``None``.
    """

    rows: list[Any]
    rowcount: int
    lastrowid: int | None = None

    def one(self) -> Any:
        """Return the only row.

        Raises:
            LookupError: If there is not exactly one row.
        """
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def first(self) -> Any | None:
        """Return the first row, or ``None``."""
        return self.rows[0] if self.rows else None


class AsyncTransaction:
    """The open transaction a body runs its statements in, on SQLAlchemy's connection.

    Args:
        runner: The runner that opened it.
        connection: Its connection.
    """

    def __init__(self, runner: AsyncRunner, connection: AsyncConnection) -> None:
        self._runner = runner
        self._connection = connection

    async def execute(
        self,
        statement: Executable,
        params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        lastrowid: bool = False,
    ) -> Reply:
        """Run one statement in the transaction.

        Args:
            statement: The statement.
            params: Its bound parameters, if built with ``bindparam`` (a statement built
                once); a list of them runs it as an executemany.
            lastrowid: Answer with the driver's ``lastrowid`` too (MySQL/MariaDB).
        """
        runner, connection = self._runner, self._connection
        if (sql := runner._in_transaction_sql(statement, params)) is not None:
            driver = await async_driver_connection(connection)
            return await runner._execute_direct(
                driver, sql, params, lastrowid, connection.invalidate
            )
        executed = await connection.execute(statement, params)
        rows = list(executed.all()) if executed.returns_rows else []
        return Reply(rows, executed.rowcount, executed.lastrowid if lastrowid else None)

    async def insert_or_conflict(self, statement: Executable) -> bool:
        """Run an ``INSERT`` in a savepoint: ``False`` if a unique key refused it."""
        try:
            async with self._connection.begin_nested():
                await self._connection.execute(statement)
        except sa_exc.IntegrityError:
            return False
        return True

    async def script(
        self, statements: tuple[Executable, ...], params: Mapping[str, Any]
    ) -> list[Reply]:
        """Run statements in order as the last thing of the body; a :class:`Reply` each.

        Where the connection sends statement lists (MySQL/MariaDB on an engine the
        repository made, in a direct transaction), the statements and the transaction's
        COMMIT go in one round trip; elsewhere they run one by one and the transaction
        commits as usual. Either way they run on one connection, in order, so they may pass
        values on in the session (MySQL user variables). A list stops at a failing
        statement, before the COMMIT: the transaction is then rolled back as usual.

        Args:
            statements: The statements, each built once with bound parameters.
            params: The parameters of all of them (a name two statements use has one value).
        """
        return [await self.execute(s, params, lastrowid=True) for s in statements]


class AsyncDirectTransaction(AsyncTransaction):
    """A direct transaction (see :meth:`AsyncRunner.transaction`), on the driver's connection.

    Args:
        runner: The runner that opened it.
        driver: The pooled driver connection.
        discard: Drops the connection when its state is unknown.

    Attributes:
        committing: Its COMMIT was sent (by a statement list).
        committed: Its COMMIT ran (the statement list's).
    """

    def __init__(
        self, runner: AsyncRunner, driver: Any, discard: Callable[[BaseException], Awaitable[None]]
    ) -> None:
        self._runner = runner
        self._driver = driver
        self._discard = discard
        self.committing = False
        self.committed = False

    async def execute(
        self,
        statement: Executable,
        params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        lastrowid: bool = False,
    ) -> Reply:
        """Run one statement, compiled for the driver (see :meth:`AsyncTransaction.execute`)."""
        runner = self._runner
        sql = runner._in_transaction_sql(statement, params)
        if sql is None:  # a statement built with its values: compiled for this use
            sql = compile_with_values(statement, runner._engine.dialect)
        if sql is None:
            raise TypeError(f"a direct transaction cannot run {statement}")
        return await runner._execute_direct(self._driver, sql, params, lastrowid, self._discard)

    async def insert_or_conflict(self, statement: Executable) -> bool:
        """Not in a direct transaction: raises ``TypeError``."""
        raise TypeError("a direct transaction runs statements only, not savepoints")

    async def script(
        self, statements: tuple[Executable, ...], params: Mapping[str, Any]
    ) -> list[Reply]:
        """Run the closing statements: with the COMMIT in one round trip where lists go."""
        runner, driver, discard = self._runner, self._driver, self._discard
        script = runner._script(statements)
        if not runner._statement_lists:
            return [
                await runner._execute_direct(driver, sql, params, True, discard)
                for sql in script.parts
            ]
        bound = script.bind(params)
        self.committing = True  # until the server says which statement it refused
        deadline = runner._arm(driver)
        try:
            answers = await async_execute_list(driver, script.text, bound)
            if deadline is not None:
                deadline.cancel()
        except runner._dbapi_error as exc:
            if deadline is not None and _cancelled_expired(deadline):
                await discard(exc)
                raise runner._timeout() from exc
            if _refused_by_server(exc):
                # The list stopped at the refused statement, before its COMMIT.
                self.committing = False
                raise runner._wrap(exc, invalidated=False) from exc
            # A client error (a lost connection): the COMMIT's fate and the connection's
            # state are unknown, so the pool opens a new one.
            await discard(exc)
            raise runner._wrap(exc, invalidated=True) from exc
        except BaseException as exc:
            await runner._interrupted(deadline, discard, exc)
            raise
        self.committed = True
        return [Reply(*answer) for answer in answers[: len(script.parts)]]


class AsyncRunner:
    """Runs a plan's statements and transactions on one engine.

    Args:
        engine: The repository's engine.
        metadata: The tables to create before the first statement, if ``create_schema``.
        create_schema: Create missing tables first (once).
    """

    def __init__(self, engine: AsyncEngine, metadata: MetaData, *, create_schema: bool) -> None:
        self._engine = engine
        # Reads (and PostgreSQL's one-statement append) are single statements: autocommit
        # spares the BEGIN/COMMIT round trips.
        self._autocommit_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        # MySQL/MariaDB drivers switch autocommit with a statement, and SQLAlchemy switches
        # it back (with the isolation level and a COMMIT) when the connection returns: six
        # round trips for a read. A read in the connection's own transaction takes two: the
        # SELECT and the ROLLBACK that ends it.
        mysql = engine.dialect.name in ("mysql", "mariadb")
        self._read_engine = engine if mysql else self._autocommit_engine
        self._backend = engine.dialect.name
        self._metadata = metadata
        self._ready = not create_schema
        self._schema_lock = AsyncLock()
        dialect = engine.dialect
        self._direct = dialect.driver in _DIRECT_DRIVERS
        self._mysql_reads = dialect.driver in _DIRECT_READ_DRIVERS
        self._direct_reads = self._direct or self._mysql_reads
        # On an engine the repository made, MySQL/MariaDB connections send statement lists: a
        # read sends its ROLLBACK in the same packet, and a script its COMMIT.
        self._statement_lists = self._mysql_reads and sends_statement_lists(engine)
        self._scripts: dict[int, tuple[tuple[Executable, ...], DriverList]] = {}
        self._ending: dict[int, DriverSql] = {}
        self._psycopg = dialect.driver in _PSYCOPG
        # SQLite's and the MySQL drivers' transactions run their compiled statements on the
        # driver connection too (aiomysql's under the engine's deadline, armed per statement as
        # for the reads; the others have no socket or their own read_timeout), and the driver
        # begins the transaction itself, whichever cursor sends the first statement.
        self._direct_in_transaction = dialect.driver in _DIRECT_TRANSACTION_DRIVERS
        self._in_process = dialect.driver in _SQLITE
        self._dbapi_error: type[Exception] = getattr(dialect.loaded_dbapi, "Error", Exception)
        self._watch = deadline_of(engine)
        # Statements built once per plan, compiled once: id -> (statement, its SQL or None).
        self._compiled: dict[int, tuple[Executable, DriverSql | None]] = {}
        # Operations wait for a connection here, first come first served, one slot per pooled
        # connection. The pool's own queue lets a caller that just returned a connection take
        # it straight back, so under more concurrent callers than connections some waited
        # for seconds while others ran turn after turn (benchmarks/load.py measures it).
        capacity = _pool_capacity(engine)
        self._gate = None if capacity is None else AsyncSemaphore(capacity)

    async def ensure_schema(self) -> None:
        """Create the missing tables, once, if this runner was asked to.

        Raises:
            RepositoryError: If the DDL fails (a subclass says why).
        """
        if self._ready:
            return
        async with self._schema_lock:
            if self._ready:
                return
            # Run to its end even if the caller is cancelled (CancelledError follows): a
            # connection SQLAlchemy closed on a cancellation inside the schema's transaction
            # stayed open in SQLite while its statement was still referenced, and kept the
            # database locked (the next call waited out its whole busy timeout).
            await async_to_completion(self._create_schema)
            self._ready = True

    async def _create_schema(self) -> None:
        try:
            async with self._engine.begin() as connection:
                await async_create_all(connection, self._metadata)
        except _ERRORS as exc:
            raise map_driver_error(exc, self._backend) from exc

    async def perform(self, operation: Callable[[], Awaitable[T]], *, schema: bool = True) -> T:
        """Run an operation of the plan: its statements and transactions through this runner.

        Args:
            operation: The operation, from the repository's plan.
            schema: Make sure the tables exist first (not for ``server_version``).

        Returns:
            What the operation returned.

        Raises:
            RepositoryError: A driver error, mapped (a subclass says why).
        """
        try:
            if schema:
                await self.ensure_schema()
            if self._gate is None:
                return await operation()
            async with self._gate:
                return await operation()
        except Exception as exc:
            raise async_cancelled_or(exc)  # noqa: B904 (exc itself, or caused by it)

    async def read(self, statement: Executable) -> list[Any]:
        """Run one read statement in autocommit, as an operation of its own; return its rows.

        Raises:
            RepositoryError: A driver error, mapped (a subclass says why).
        """
        return await self.perform(partial(self._autocommit, statement, None, write=False))

    async def query(
        self, statement: Executable, params: Mapping[str, Any] | None = None
    ) -> list[Any]:
        """Run one read statement in autocommit (within an operation); return its rows.

        Args:
            statement: The statement.
            params: Its bound parameters, if built with ``bindparam``.
        """
        direct = None if params is None else self._driver_sql(statement, write=False)
        if direct is not None and params is not None:
            return await self._direct_autocommit(direct, params, write=False)
        return await self._autocommit(statement, params, write=False)

    async def send(self, statement: Executable, params: Mapping[str, Any]) -> list[Any]:
        """Run one write statement in autocommit (within an operation); return its rows.

        A connection lost after it was sent leaves the write's outcome unknown.
        """
        direct = self._driver_sql(statement, write=True)
        if direct is not None:
            return await self._direct_autocommit(direct, params, write=True)
        return await self._autocommit(statement, params, write=True)

    async def transaction(
        self, body: Callable[[AsyncTransaction], Awaitable[T]], *, direct: bool = False
    ) -> T:
        """Run ``body`` in a transaction (within an operation); return what it returned.

        Args:
            body: Runs the transaction's statements; called again for every attempt (a
                deadlock or a dropped pooled connection runs the whole transaction again).
            direct: The body runs only :meth:`AsyncTransaction.execute` and
                :meth:`AsyncTransaction.script`, and reads only integers from the rows it
                gets back, so the runner may run it on the driver's connection, its own
                BEGIN and COMMIT included: the rows are then the driver's, not converted by
                column type.
        """
        if direct and self._direct_in_transaction:
            return await self._direct_transaction(body)
        return await self._transaction(body)

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
                engine = self._autocommit_engine if write else self._read_engine
                async with engine.connect() as connection:
                    sent = write
                    result = await connection.execute(statement, params)
                    return list(result.all())
            except _ERRORS as exc:
                maybe_applied = maybe_applied or sent
                if not _should_retry(exc, attempt):
                    raise map_driver_error(exc, self._backend, unknown=maybe_applied) from exc

    def _driver_sql(self, statement: Executable, *, write: bool) -> DriverSql | None:
        """The SQL for the driver of a step in autocommit; ``None``: not run directly."""
        if not (self._direct if write else self._direct_reads):
            return None
        sql = self._compiled_sql(statement)
        if sql is None or write or not self._statement_lists:
            return sql
        ending = self._ending.get(id(sql))
        if ending is None:
            ending = replace(sql, text=f"{sql.text}; ROLLBACK")
            self._ending[id(sql)] = ending
        return ending

    def _compiled_sql(self, statement: Executable) -> DriverSql | None:
        """The statement's SQL for the driver, compiled on first use; ``None``: it cannot be."""
        cached = self._compiled.get(id(statement))
        if cached is None or cached[0] is not statement:
            cached = (statement, compile_for_driver(statement, self._engine.dialect))
            self._compiled[id(statement)] = cached
        return cached[1]

    async def _checkout(self) -> PoolProxiedConnection:
        """A pooled connection for a direct step; a driver error raised as SQLAlchemy's."""
        try:
            return await async_checkout(self._engine)
        except self._dbapi_error as exc:
            raise self._wrap(exc, invalidated=False) from exc

    async def _direct_autocommit(
        self, sql: DriverSql, params: Mapping[str, Any], *, write: bool
    ) -> list[Any]:
        """Run one compiled statement in autocommit on a pooled driver connection."""
        bound = sql.bind(params)
        attempt = 0
        maybe_applied = False  # as in _autocommit
        while True:
            attempt += 1
            sent = False
            try:
                connection = await self._checkout()
                try:
                    sent = write
                    rows: list[Any] = await self._run_direct(connection, sql.text, bound)
                    return rows
                finally:
                    await async_checkin(connection)
            except _ERRORS as exc:
                maybe_applied = maybe_applied or sent
                if not _should_retry(exc, attempt):
                    raise map_driver_error(exc, self._backend, unknown=maybe_applied) from exc

    async def _run_direct(self, connection: PoolProxiedConnection, text: str, bound: Any) -> Any:
        """Execute on the driver connection in autocommit, under the engine's deadline."""
        driver: Any = connection.driver_connection
        deadline: Deadline | None = None
        try:
            if self._psycopg:
                await driver.set_autocommit(True)
            deadline = self._arm(driver)
            rows = await async_fetch_rows(driver, text, bound)
            if self._mysql_reads and not self._statement_lists:
                # The read began a transaction; ending it here starts the next read on this
                # connection from a fresh snapshot (InnoDB keeps a read view until the
                # transaction ends, and the server's status does not flag a read-only one).
                await driver.rollback()
            if deadline is not None:
                deadline.cancel()
            if self._psycopg:
                await driver.set_autocommit(False)
            return rows
        except self._dbapi_error as exc:
            raise await self._direct_failure(connection, exc, deadline) from exc
        except BaseException as exc:
            # Cancelled or interrupted mid-statement: the connection's state is unknown.
            if deadline is not None:
                deadline.cancel()
            await async_invalidate(connection, exc)
            raise

    async def _direct_failure(
        self, connection: PoolProxiedConnection, exc: Exception, deadline: Deadline | None
    ) -> BaseException:
        """What a failed direct statement raises; the connection is cleaned up or discarded."""
        driver: Any = connection.driver_connection
        expired = deadline is not None and _cancelled_expired(deadline)
        broken = getattr(driver, "closed", False) or getattr(driver, "broken", False)
        invalidated = expired or bool(broken)
        if self._mysql_reads and not invalidated:
            # A failed read may have begun a transaction (a statement list stops at the
            # failed statement, before its ROLLBACK): end it, or the connection goes.
            try:
                await driver.rollback()
            except self._dbapi_error:
                invalidated = True
        if invalidated:
            if broken and not expired:
                # The server closed it: the pool's other connections to it are as dead, and
                # the retry must not take one of them.
                invalidate_pool(self._engine, connection)
            await async_invalidate(connection, exc)
        if expired:
            return self._timeout()
        return self._wrap(exc, invalidated=invalidated)

    def _arm(self, driver: Any) -> Deadline | None:
        """Start the engine's deadline on the driver connection's socket, if it has one."""
        if self._watch is None:
            return None
        seconds, socket_of = self._watch
        fd = socket_of(driver)
        return None if fd is None else arm_socket(seconds, fd)

    def _timeout(self) -> StatementTimeoutError:
        """The error of a statement whose deadline passed (its connection was closed)."""
        seconds = 0.0 if self._watch is None else self._watch[0]
        return StatementTimeoutError(f"no answer within {seconds:g} s; the connection was closed")

    def _wrap(self, exc: Exception, *, invalidated: bool) -> BaseException:
        """The driver's error as SQLAlchemy raises it, for retrying and mapping alike."""
        return sa_exc.DBAPIError.instance(
            None,
            None,
            exc,
            self._dbapi_error,
            hide_parameters=True,
            connection_invalidated=invalidated,
            dialect=self._engine.dialect,
        )

    async def _transaction(self, body: Callable[[AsyncTransaction], Awaitable[T]]) -> T:
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
                    result = await body(AsyncTransaction(self, connection))
                    committing = True
                return result
            except _ERRORS as exc:
                maybe_applied = maybe_applied or committing
                if not _should_retry(exc, attempt):
                    raise map_driver_error(exc, self._backend, unknown=maybe_applied) from exc

    def _in_transaction_sql(self, statement: Executable, params: Any) -> DriverSql | None:
        """The statement's SQL for the driver, if a transaction runs it there (see __init__)."""
        if not self._direct_in_transaction or params is None:
            return None
        return self._compiled_sql(statement)

    async def _execute_direct(
        self,
        driver: Any,
        sql: DriverSql,
        params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
        lastrowid: bool,
        discard: Callable[[BaseException], Awaitable[None]],
    ) -> Reply:
        """Run a compiled statement on a transaction's driver connection, under the deadline.

        A list of parameters runs it as an executemany. Driver errors are raised as
        SQLAlchemy wraps them, so the transaction retries and maps them alike; ``discard``
        drops the connection when its state is unknown.
        """
        deadline = self._arm(driver)
        try:
            if params is None or isinstance(params, Mapping):
                answer = await async_execute(driver, sql.text, sql.bind(params or {}))
            else:
                rows = [sql.bind(p) for p in params]
                answer = await async_execute(driver, sql.text, rows, many=True)
            if deadline is not None:
                deadline.cancel()
            rows, rowcount, last = answer
            return Reply(rows, rowcount, last if lastrowid else None)
        except self._dbapi_error as exc:
            if deadline is not None and _cancelled_expired(deadline):
                # The deadline shut the socket: the transaction is gone with the connection.
                await discard(exc)
                raise self._timeout() from exc
            raise self._wrap(exc, invalidated=False) from exc
        except BaseException as exc:
            await self._interrupted(deadline, discard, exc)
            raise

    async def _interrupted(
        self,
        deadline: Deadline | None,
        discard: Callable[[BaseException], Awaitable[None]],
        exc: BaseException,
    ) -> None:
        """Clean up after a statement or commit cancelled or interrupted midway."""
        if deadline is not None:
            deadline.cancel()
        # A network connection's state is unknown (its reply may still come). SQLite's
        # statement finishes in its own time (aiosqlite's thread) and the transaction's
        # rollback waits for it; a discarded connection would keep its write lock until
        # collected.
        if not self._in_process:
            await discard(exc)

    async def _direct_transaction(self, body: Callable[[AsyncTransaction], Awaitable[T]]) -> T:
        """Run a direct transaction (see :meth:`transaction`) on a pooled driver connection.

        Spares SQLAlchemy's connection and transaction objects (and, async, their hops
        into a greenlet): the driver begins the transaction with the first statement, and
        the commit goes from here, under the same deadline as each statement.
        """
        attempt = 0
        maybe_applied = False  # as in _transaction
        while True:
            attempt += 1
            committing = False
            try:
                connection = await self._checkout()
                try:
                    driver: Any = connection.driver_connection
                    discard = partial(async_invalidate, connection)
                    tx = AsyncDirectTransaction(self, driver, discard)
                    try:
                        result = await body(tx)
                        committing = True
                        if not tx.committed:
                            await self._end_direct(driver, discard, commit=True)
                    except BaseException:
                        committing = committing or tx.committing
                        if not committing and connection.is_valid:
                            # The body's error is the one to report; a rollback that failed
                            # has discarded the connection.
                            with suppress(*_ERRORS):
                                await self._end_direct(driver, discard, commit=False)
                        raise
                    return result
                finally:
                    await async_checkin(connection)
            except _ERRORS as exc:
                maybe_applied = maybe_applied or committing
                if not _should_retry(exc, attempt):
                    raise map_driver_error(exc, self._backend, unknown=maybe_applied) from exc

    def _script(self, statements: tuple[Executable, ...]) -> DriverList:
        """The statements' SQL as one list ending in COMMIT, compiled on first use."""
        cached = self._scripts.get(id(statements))
        if cached is not None and cached[0] is statements:
            return cached[1]
        parts = []
        for statement in statements:
            sql = self._compiled_sql(statement)
            if sql is None:
                raise TypeError(f"a script cannot run {statement}")
            parts.append(sql)
        script = statement_list(parts, ending="COMMIT")
        self._scripts[id(statements)] = (statements, script)
        return script

    async def _end_direct(
        self, driver: Any, discard: Callable[[BaseException], Awaitable[None]], *, commit: bool
    ) -> None:
        """Commit or roll back a direct transaction, under the deadline."""
        deadline = self._arm(driver)
        try:
            await (driver.commit() if commit else driver.rollback())
            if deadline is not None:
                deadline.cancel()
        except self._dbapi_error as exc:
            expired = deadline is not None and _cancelled_expired(deadline)
            if self._in_process and commit:
                # SQLite keeps the transaction (and its write lock) after a failed commit.
                with suppress(self._dbapi_error):
                    await driver.rollback()
                raise self._wrap(exc, invalidated=False) from exc
            await discard(exc)  # its state is unknown: the pool opens a new one
            if expired:
                raise self._timeout() from exc
            raise self._wrap(exc, invalidated=True) from exc
        except BaseException as exc:
            await self._interrupted(deadline, discard, exc)
            raise
