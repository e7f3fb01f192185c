"""Runs a plan's programs on an engine: the SQL repository's only I/O.

Steps in autocommit run on their own connection (a read, or PostgreSQL's one-statement
append); a transaction runs its body's statements on one connection and commits. A
deadlock, a serialization failure or a pooled connection the server dropped runs the step
again from its start; anything else is mapped to chatmem's errors, with the outcome of a
write that may have been applied reported as unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Executable, MetaData
from sqlalchemy import exc as sa_exc

from chatmem.backend import AsyncLock
from chatmem_repositories.sql._drivers import AsyncConnection, AsyncEngine, async_create_all
from chatmem_repositories.sql._errors import is_retryable, map_error
from chatmem_repositories.sql._plans.steps import (
    Body,
    InsertOrConflict,
    Program,
    Reply,
    Send,
    Transaction,
)

__all__ = ["AsyncRunner"]

T = TypeVar("T")

_ATTEMPTS = 5  # a transaction that hit a deadlock or serialization failure runs again
_ERRORS = (sa_exc.SQLAlchemyError, OSError)


def _should_retry(exc: BaseException, attempt: int) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        # A pooled connection the server dropped (restart, idle timeout): the pool is now
        # invalidated, so one more try reconnects. Every operation is safe to repeat
        # (appends are idempotent by message id). Cheaper than pinging on every checkout.
        return attempt < 2
    return attempt < _ATTEMPTS and is_retryable(exc)


class AsyncRunner:
    """Runs programs (see :mod:`~chatmem_repositories.sql._plans.steps`) on one engine.

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
        self._backend = engine.dialect.name
        self._metadata = metadata
        self._ready = not create_schema
        self._schema_lock = AsyncLock()

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
            try:
                async with self._engine.begin() as connection:
                    await async_create_all(connection, self._metadata)
            except _ERRORS as exc:
                raise map_error(exc, self._backend) from exc
            self._ready = True

    async def perform(self, program: Program[T], *, schema: bool = True) -> T:
        """Run a plan's program: each step on the engine, its answer sent back.

        Args:
            program: The operation, from the repository's plan.
            schema: Make sure the tables exist first (not for ``server_version``).

        Returns:
            What the program returned.

        Raises:
            RepositoryError: A driver error, mapped (a subclass says why).
        """
        if schema:
            await self.ensure_schema()
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

    async def read(self, statement: Executable) -> list[Any]:
        """Run one read statement in autocommit and return its rows.

        Raises:
            RepositoryError: A driver error, mapped (a subclass says why).
        """
        await self.ensure_schema()
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
                executed = await connection.execute(step.statement, step.params)
                rows = list(executed.all()) if executed.returns_rows else []
                lastrowid = executed.lastrowid if step.lastrowid else None
                answer = Reply(rows, executed.rowcount, lastrowid)
