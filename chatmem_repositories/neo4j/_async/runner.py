"""How the Neo4j repository runs its statements: sessions, schema, retries, deadlines.

Every statement is one auto-commit transaction, retried after transient failures as the
driver's managed transactions would be, and bounded by ``read_timeout`` (the driver has no
read timeout of its own; see ``_drivers``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, LiteralString

from neo4j import READ_ACCESS, WRITE_ACCESS, AsyncDriver, AsyncManagedTransaction, AsyncSession
from neo4j.exceptions import ClientError

from chatmem.backend import AsyncLock, Clock, async_sleep, epoch_micros
from chatmem.exceptions import RepositoryError
from chatmem_repositories._deadline import Deadline, arm
from chatmem_repositories.neo4j._drivers import closer_of
from chatmem_repositories.neo4j._errors import (
    DRIVER_ERRORS,
    RetryDelays,
    map_driver_error,
    may_have_sent,
    should_retry,
)

__all__ = ["AsyncStatementRunner", "create_rules", "seconds"]

_LOST_NODE_ATTEMPTS = 10

Rows = list[list[Any]]


async def _create_rule(tx: AsyncManagedTransaction, statement: LiteralString) -> None:
    await (await tx.run(statement)).consume()


async def create_rules(session: AsyncSession, statements: Iterable[LiteralString]) -> None:
    """Run ``CREATE ... IF NOT EXISTS`` statements, then wait for the indexes to be online.

    Each runs in a managed transaction, which the driver runs again after a transient
    error: creators of the same rules at once deadlock on Neo4j's schema locks, and the
    one run again finds the rule made (or makes it).

    Args:
        session: A session on the database.
        statements: The constraint and index statements.
    """
    for statement in statements:
        try:
            await session.execute_write(_create_rule, statement)
        except ClientError as exc:
            # Another process created the same rule a moment earlier (IF NOT EXISTS races).
            if "AlreadyExists" not in (exc.code or ""):
                raise
    await (await session.run("CALL db.awaitIndexes(60)")).consume()


def seconds(value: timedelta | float | None) -> float | None:
    """Return a duration given as a timedelta or seconds in seconds (``None`` stays)."""
    return value.total_seconds() if isinstance(value, timedelta) else value


class AsyncStatementRunner:
    """Runs the repository's (and the vector store's) statements on a driver.

    Args:
        driver: The driver.
        database: Database name; ``None`` uses the server's home database.
        schema: The constraint and index statements.
        initialize: Whether to create them on first use.
        retry_seconds: How long transient failures are retried.
        read_timeout: Seconds a statement may wait for its answer, or ``None``.
        clock: Where expiry reads "now"; ``None`` lets the statements read the server's.
    """

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str | None,
        schema: Sequence[LiteralString],
        initialize: bool,
        retry_seconds: float,
        read_timeout: float | None,
        clock: Clock | None,
    ) -> None:
        self._driver = driver
        self._database = database
        self._schema = schema
        self.schema_ready = not initialize
        """Whether the schema exists (or is left to the operator)."""
        self._lock = AsyncLock()
        self._retry_seconds = retry_seconds
        self.read_timeout = read_timeout
        """Seconds a statement may wait for its answer, or ``None``."""
        self._clock = clock

    def session_config(self, write: bool = True) -> dict[str, Any]:
        """Return the session arguments of a read or a write."""
        return {
            "database": self._database,
            "default_access_mode": WRITE_ACCESS if write else READ_ACCESS,
            # Handed-in drivers may have notifications on; the statements are fixed anyway.
            "notifications_min_severity": "OFF",
            # Read-your-writes across sessions (and cluster members), as execute_query does.
            "bookmark_manager": self._driver.execute_query_bookmark_manager,
        }

    async def ensure_schema(self) -> None:
        """Create the constraints and indexes once, unless ``initialize_schema`` is never."""
        if self.schema_ready:
            return
        async with self._lock:
            if self.schema_ready:
                return
            try:
                async with self._driver.session(**self.session_config()) as session:
                    await create_rules(session, self._schema)
            except DRIVER_ERRORS as exc:
                raise map_driver_error(exc, "schema creation") from exc
            self.schema_ready = True

    async def execute(
        self, action: str, query: LiteralString, params: dict[str, Any], *, write: bool
    ) -> Rows:
        """Run one auto-commit statement, retrying transient failures, and return its rows.

        Raises:
            RepositoryError: The translated driver error (a timeout past ``read_timeout``,
                an outcome that may be unknown for a write).
        """
        # An auto-commit statement is one network round trip (RUN and PULL go together); a
        # managed transaction would add BEGIN and COMMIT. Every statement here is a single
        # atomic transaction anyway, and every write is safe to run again (appends skip
        # stored ids), so transient failures are retried here as execute_write would.
        await self.ensure_schema()
        # "now" for expiry: the injected clock's, else null and the statement reads the server's.
        now = None if self._clock is None else epoch_micros(self._clock()) // 1000
        params = {**params, "now": now}
        retry = RetryDelays(self._retry_seconds)
        # A write whose connection failed after it was sent may have committed; that stays
        # true even if a later attempt cannot connect at all.
        maybe_applied = False
        while True:
            deadline: Deadline | None = None
            try:
                async with self._driver.session(**self.session_config(write)) as session:
                    if self.read_timeout is not None:
                        deadline = arm(self.read_timeout, closer_of(session))
                    try:
                        result = await session.run(query, params)
                        return [list(record.values()) async for record in result]
                    finally:
                        if deadline is not None:
                            deadline.cancel()
            except DRIVER_ERRORS as exc:
                timed_out = deadline is not None and deadline.expired
                maybe_applied = maybe_applied or (write and (timed_out or may_have_sent(exc)))
                # No answer in time: another attempt would most likely wait as long again.
                delay = retry.next_delay() if should_retry(exc) and not timed_out else None
                if delay is None:
                    raise map_driver_error(
                        exc,
                        action,
                        unknown=maybe_applied,
                        timeout=self.read_timeout if timed_out else None,
                    ) from exc
            await async_sleep(delay)

    async def write(self, action: str, query: LiteralString, params: dict[str, Any]) -> Rows:
        """Run a write statement (see :meth:`execute`)."""
        return await self.execute(action, query, params, write=True)

    async def write_messages(
        self, action: str, query: LiteralString, params: dict[str, Any]
    ) -> tuple[list[list[Any]], bool]:
        """Run an append or a replace; return its stored rows and whether it retired some.

        Raises:
            RepositoryError: If the conversation kept being deleted under it.
        """
        stored, retired = await self.write_merging(action, query, params)
        return stored, bool(retired)

    async def write_merging(
        self, action: str, query: LiteralString, params: dict[str, Any]
    ) -> list[Any]:
        """Run a statement that merges its conversation node and locks it; return its row.

        Raises:
            RepositoryError: If the conversation kept being deleted under it.
        """
        # A statement whose conversation node was removed by a finished deletion while it
        # waited for the node's lock wrote nothing and returned no row (see _cypher):
        # running it again creates the conversation anew. Each lost race means a deletion
        # completed in between, so a few attempts are plenty.
        for _ in range(_LOST_NODE_ATTEMPTS):
            rows = await self.write(action, query, params)
            if rows:
                return rows[0]
        raise RepositoryError(
            f"Neo4j {action} failed: the conversation was deleted concurrently "
            f"{_LOST_NODE_ATTEMPTS} times in a row; nothing was written"
        )

    async def read(self, action: str, query: LiteralString, params: dict[str, Any]) -> Rows:
        """Run a read statement (see :meth:`execute`)."""
        return await self.execute(action, query, params, write=False)
