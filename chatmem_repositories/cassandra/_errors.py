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
from cassandra.connection import ConnectionBusy, ConnectionException
from cassandra.policies import WriteType

from chatmem.exceptions import (
    ChatMemError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)
from chatmem_repositories.cassandra._options import BACKEND

__all__ = ["is_paxos_contention", "map_driver_error", "mapped_driver_errors"]

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


# What the driver says about a request it never sent: the connection was already unusable,
# the pool or host was gone, or no connection could be opened.
_NOT_SENT = ("is defunct", "is closed", "already closed", "Pool is shutdown", "marked down")


def _may_have_sent(exc: BaseException) -> bool:
    """Tell whether a failed request may have reached a coordinator."""
    if isinstance(exc, NoHostAvailable):
        return any(_may_have_sent(error) for error in (exc.errors or {}).values())
    if isinstance(exc, OperationTimedOut | WriteTimeout):
        return True  # sent, and no answer (client side) or no quorum in time (server side)
    if isinstance(exc, ConnectionBusy | UnresolvableContactPoints | OSError):
        return False
    # The driver fails the requests in flight on a connection that breaks with the
    # connection's error; one it refuses to send says so (_NOT_SENT).
    return isinstance(exc, ConnectionException) and not any(t in str(exc) for t in _NOT_SENT)


def map_driver_error(exc: BaseException, *, write: bool = False) -> BaseException:
    """Return the chatmem error for a driver error (other exceptions are returned as is).

    Args:
        exc: What the driver raised.
        write: The request was a write. If it may have reached a coordinator before the
            failure, a timeout becomes :class:`~chatmem.exceptions.RepositoryWriteTimeoutError`
            and a lost connection :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError`.
    """
    if isinstance(exc, ChatMemError):
        return exc
    errors = list((exc.errors or {}).values()) if isinstance(exc, NoHostAvailable) else []
    if errors and all(isinstance(error, Unavailable) for error in errors):
        # Every node the driver tried refused for too few live replicas (the default retry
        # policy tries the next node once): say so, not that the cluster is unreachable.
        # Cassandra refuses before writing anything, so the write surely did not apply.
        return RepositoryConnectionError(
            f"not enough Cassandra replicas are up: {errors[-1]}", backend=BACKEND
        )
    for classes, error, text in _TABLE:
        if isinstance(exc, classes):
            message = f"{text}: {type(exc).__name__}: {exc}"
            if write and error is not RepositoryError and _may_have_sent(exc):
                unknown = error is RepositoryTimeoutError or isinstance(exc, WriteTimeout)
                kind = RepositoryWriteTimeoutError if unknown else RepositoryOutcomeUnknownError
                return kind(f"{message}; the write may have been applied", backend=BACKEND)
            return error(message, backend=BACKEND)
    return exc


@contextmanager
def mapped_driver_errors(*, write: bool = False) -> Iterator[None]:
    """Re-raise driver errors raised in the block as chatmem errors (``from`` the original).

    Args:
        write: The block sends a write (see :func:`map_driver_error`).
    """
    try:
        yield
    except Exception as exc:
        mapped = map_driver_error(exc, write=write)
        if mapped is exc:
            raise
        raise mapped from exc
