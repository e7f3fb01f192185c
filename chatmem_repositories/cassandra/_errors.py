"""Map cassandra-driver errors to chatmem's, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cassandra import (
    AuthenticationFailed,
    DriverException,
    OperationTimedOut,
    Timeout,
    Unavailable,
    UnresolvableContactPoints,
    WriteTimeout,
)
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException
from cassandra.policies import WriteType

from chatmem.exceptions import (
    ChatMemError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
)

__all__ = ["BACKEND", "driver_errors", "is_paxos_contention", "translate"]

BACKEND = "cassandra"

# Order matters: the first matching class wins.
_TABLE: tuple[tuple[tuple[type[BaseException], ...], type[RepositoryError], str], ...] = (
    (
        (NoHostAvailable, ConnectionException, UnresolvableContactPoints, OSError),
        RepositoryConnectionError,
        "cannot reach the Cassandra cluster",
    ),
    ((Unavailable,), RepositoryConnectionError, "not enough Cassandra replicas are up"),
    ((AuthenticationFailed,), RepositoryConnectionError, "Cassandra refused the credentials"),
    ((OperationTimedOut, Timeout), RepositoryTimeoutError, "Cassandra did not answer in time"),
    ((DriverException,), RepositoryError, "Cassandra request failed"),
)


def is_paxos_contention(exc: BaseException) -> bool:
    """Tell whether an error is a conditional write that timed out in its Paxos round.

    Many writers racing on one partition make Paxos rounds time out. Whether the write
    applied is unknown, but appends are idempotent by message id, so they can be re-sent.
    """
    cause = exc.__cause__ if isinstance(exc, RepositoryTimeoutError) else exc
    return isinstance(cause, WriteTimeout) and cause.write_type == WriteType.CAS


def translate(exc: BaseException) -> BaseException:
    """Return the chatmem error for a driver error (other exceptions are returned as is)."""
    if isinstance(exc, ChatMemError):
        return exc
    for classes, error, text in _TABLE:
        if isinstance(exc, classes):
            return error(f"{text}: {type(exc).__name__}: {exc}", backend=BACKEND)
    return exc


@contextmanager
def driver_errors() -> Iterator[None]:
    """Re-raise driver errors raised in the block as chatmem errors (``from`` the original)."""
    try:
        yield
    except Exception as exc:
        mapped = translate(exc)
        if mapped is exc:
            raise
        raise mapped from exc
