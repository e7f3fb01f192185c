"""How the vector store talks to a driver session, blocking and async (the twins' helpers).

``scripts/unasync.py`` turns ``async_x`` into ``x``, so the async store calling these names
becomes the sync store calling their blocking twins. The async ones bridge the driver's
``ResponseFuture`` callbacks (run on its I/O thread) to asyncio with
``loop.call_soon_threadsafe``: no executor, nothing blocks the loop. Preparing statements
has no non-blocking driver API, so the async store does it once, on a short-lived thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cassandra import WriteFailure, WriteTimeout
from cassandra.cluster import Session
from cassandra.query import Statement

from chatmem.exceptions import RepositoryError, RepositoryTimeoutError
from chatmem_repositories.cassandra._errors import driver_errors, translate

__all__ = [
    "VECTOR_WRITES_IN_FLIGHT",
    "AsyncSemaphore",
    "Semaphore",
    "async_execute",
    "async_execute_all",
    "async_on_thread",
    "async_sleep",
    "execute",
    "execute_all",
    "on_thread",
    "sleep",
]

T = TypeVar("T")
Row = list[Any]

VECTOR_WRITES_IN_FLIGHT = 2
"""Writes one store keeps in flight. Cassandra 5.0's SAI vector index fails mutations
("outstanding pooled objects has gone beyond the limit") when more concurrent writes reach a
table than the node has processors plus one, so writes are bounded, and retried."""

AsyncSemaphore = asyncio.Semaphore
Semaphore = threading.Semaphore
async_sleep = asyncio.sleep
sleep = time.sleep

_RETRIES = 6
_BACKOFF = 0.01


def _retryable(exc: RepositoryError) -> bool:
    # WriteFailure / WriteTimeout from an overloaded vector index: the write may be retried
    # because every write here is an idempotent upsert or delete by key.
    cause = exc.__cause__
    return isinstance(cause, WriteFailure | WriteTimeout) or isinstance(exc, RepositoryTimeoutError)


def _plain(rows: Any) -> list[Row]:
    return [list(r.values()) if isinstance(r, dict) else list(r) for r in rows or ()]


def execute(session: Session, statement: Statement | str, params: Sequence[Any] = ()) -> list[Row]:
    """Run one statement and return its rows as lists.

    Args:
        session: The driver session.
        statement: A bound statement or CQL text.
        params: Values for CQL text.
    """
    with driver_errors():
        return _plain(session.execute(statement, params or None))


def execute_all(session: Session, statements: Sequence[Statement], gate: Semaphore) -> None:
    """Run idempotent writes, as many at once as ``gate`` allows, retrying write failures.

    Args:
        session: The driver session.
        statements: Bound idempotent statements (upserts, deletes by key).
        gate: Bounds the writes in flight (see :data:`VECTOR_WRITES_IN_FLIGHT`).
    """
    for statement in statements:
        with gate:
            for attempt in range(_RETRIES + 1):
                try:
                    execute(session, statement)
                    break
                except RepositoryError as exc:
                    if attempt == _RETRIES or not _retryable(exc):
                        raise
                sleep(_BACKOFF * 2**attempt)


def on_thread(function: Callable[[], T]) -> T:
    """Run a blocking set-up step (here: right away).

    Args:
        function: The step.
    """
    return function()


async def async_execute(
    session: Session, statement: Statement | str, params: Sequence[Any] = ()
) -> list[Row]:
    """Run one statement without blocking the loop and return its rows as lists.

    Args:
        session: The driver session.
        statement: A bound statement or CQL text.
        params: Values for CQL text.
    """
    with driver_errors():
        future = session.execute_async(statement, params or None)
    return await _bridge(future)


async def async_execute_all(
    session: Session, statements: Sequence[Statement], gate: AsyncSemaphore
) -> None:
    """Run idempotent writes, as many at once as ``gate`` allows, retrying write failures.

    Args:
        session: The driver session.
        statements: Bound idempotent statements (upserts, deletes by key).
        gate: Bounds the writes in flight (see :data:`VECTOR_WRITES_IN_FLIGHT`).
    """

    async def one(statement: Statement) -> None:
        async with gate:
            for attempt in range(_RETRIES + 1):
                try:
                    await async_execute(session, statement)
                    return
                except RepositoryError as exc:
                    if attempt == _RETRIES or not _retryable(exc):
                        raise
                await async_sleep(_BACKOFF * 2**attempt)

    await asyncio.gather(*(one(s) for s in statements))


async def async_on_thread(function: Callable[[], T]) -> T:
    """Run a blocking set-up step on a thread of its own and await its result.

    Args:
        function: The step.
    """
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if waiter.done():
            return
        if exc is None:
            waiter.set_result(value)
        else:
            waiter.set_exception(exc)

    def run() -> None:
        try:
            value, error = function(), None
        except BaseException as exc:
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is gone; nobody waits
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="chatmem-cassandra-vector-setup", daemon=True).start()
    return await waiter


def _bridge(response_future: Any) -> asyncio.Future[list[Row]]:
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[list[Row]] = loop.create_future()

    def settle(rows: Any, exc: BaseException | None) -> None:
        if waiter.done():  # cancelled by the caller
            return
        if exc is None:
            waiter.set_result(_plain(rows))
            return
        mapped = translate(exc)
        if mapped is not exc:
            mapped.__cause__ = exc
        waiter.set_exception(mapped)

    def call(rows: Any, exc: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while in flight
            loop.call_soon_threadsafe(settle, rows, exc)

    response_future.add_callbacks(lambda rows: call(rows, None), lambda exc: call(None, exc))
    return waiter
