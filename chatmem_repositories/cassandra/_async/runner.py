"""How the Cassandra vector store runs its statements: rows as lists, bounded writes.

The store is handed a plain session (no execution profiles), so rows come back as the
session makes them and are turned into lists. Writes are idempotent upserts and deletes by
key, sent :data:`VECTOR_WRITES_IN_FLIGHT` at a time and retried when the vector index
refuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cassandra import WriteFailure, WriteTimeout
from cassandra.cluster import Session
from cassandra.query import Statement

from chatmem.backend import AsyncLock, async_run_all, async_sleep
from chatmem.exceptions import RepositoryError, RepositoryTimeoutError
from chatmem_repositories.cassandra._drivers import async_result_rows
from chatmem_repositories.cassandra._errors import mapped_driver_errors

__all__ = ["VECTOR_WRITES_IN_FLIGHT", "execute", "execute_all"]

VECTOR_WRITES_IN_FLIGHT = 2
"""Writes one store keeps in flight. Cassandra 5.0's SAI vector index fails mutations
("outstanding pooled objects has gone beyond the limit") when more concurrent writes reach a
table than the node has processors plus one, so writes are bounded, and retried."""

_RETRIES = 6
_BACKOFF = 0.01


def _retryable(exc: RepositoryError) -> bool:
    # WriteFailure / WriteTimeout from an overloaded vector index: the write may be retried
    # because every write here is an idempotent upsert or delete by key.
    cause = exc.__cause__
    return isinstance(cause, WriteFailure | WriteTimeout) or isinstance(exc, RepositoryTimeoutError)


async def execute(
    session: Session, statement: Statement | str, params: Sequence[Any] = ()
) -> list[list[Any]]:
    """Run one statement and return its rows as lists.

    Args:
        session: The driver session.
        statement: A bound statement or CQL text.
        params: Values for CQL text.
    """
    with mapped_driver_errors():
        future = session.execute_async(statement, params or None)
    return await async_result_rows(future)


async def _write(session: Session, statement: Statement) -> None:
    for attempt in range(_RETRIES + 1):
        try:
            await execute(session, statement)
            return
        except RepositoryError as exc:
            if attempt == _RETRIES or not _retryable(exc):
                raise
        await async_sleep(_BACKOFF * 2**attempt)


async def execute_all(session: Session, statements: Sequence[Statement]) -> None:
    """Run idempotent writes, :data:`VECTOR_WRITES_IN_FLIGHT` at a time, retrying failures.

    Args:
        session: The driver session.
        statements: Bound idempotent statements (upserts, deletes by key).
    """
    pending = iter(statements)
    lock = AsyncLock()  # the sync twin's workers are threads sharing the iterator

    async def take() -> Statement | None:
        async with lock:
            return next(pending, None)

    async def worker() -> None:
        while (statement := await take()) is not None:
            await _write(session, statement)

    await async_run_all([worker] * min(VECTOR_WRITES_IN_FLIGHT, len(statements)))
