"""The one place where Neo4j driver errors become chatmem errors."""

from __future__ import annotations

import random
import time

from neo4j.exceptions import (
    AuthError,
    ConnectionAcquisitionTimeoutError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)
from chatmem_repositories.neo4j._options import BACKEND

__all__ = [
    "DRIVER_ERRORS",
    "RetryDelays",
    "lost_race",
    "map_driver_error",
    "may_have_sent",
    "should_retry",
]

DRIVER_ERRORS = (Neo4jError, DriverError, OSError)
"""What the driver raises; catch these and raise :func:`map_driver_error`'s result."""

_ENTITY_NOT_FOUND = "Neo.ClientError.Statement.EntityNotFound"

_TIMED_OUT_CODES = (
    "Neo.ClientError.Transaction.TransactionTimedOut",
    "Neo.TransientError.Transaction.LockClientStopped",
)


def lost_race(exc: BaseException) -> bool:
    """Tell whether a write failed because another transaction deleted its node meanwhile.

    A MERGE that found a conversation node and then waited for its lock while a concurrent
    delete or purge removed it fails with ``EntityNotFound``. The transaction was rolled
    back, so running it again (which then creates a fresh conversation) is safe.
    """
    return isinstance(exc, Neo4jError) and exc.code == _ENTITY_NOT_FOUND


def may_have_sent(exc: BaseException) -> bool:
    """Tell whether a failed statement may have reached the server before the failure.

    False for what happens before anything is sent: no pooled connection in time, a
    connection that could not be opened (the driver says "Couldn't connect to ..."), refused
    credentials, and an error the server answered with (its transaction was rolled back).
    True for a connection lost or timed out while the statement was under way.
    """
    if isinstance(exc, ConnectionAcquisitionTimeoutError | AuthError | Neo4jError):
        return False
    if isinstance(exc, ServiceUnavailable) and str(exc).startswith("Couldn't connect to"):
        return False
    return isinstance(exc, DriverError | OSError)


def should_retry(exc: BaseException) -> bool:
    """Tell whether running the failed statement again may succeed.

    True for what the driver itself retries in managed transactions (transient errors such
    as deadlocks, a lost or unavailable server) and for :func:`lost_race`.
    """
    if lost_race(exc):
        return True
    return isinstance(exc, Neo4jError | DriverError) and exc.is_retryable()


class RetryDelays:
    """Exponential backoff with jitter, within a time budget that starts at the first failure.

    Args:
        budget: Seconds during which failures are retried.
    """

    def __init__(self, budget: float) -> None:
        self._budget = budget
        self._deadline: float | None = None
        self._delay = 0.05

    def next_delay(self) -> float | None:
        """Return how long to wait before the next try, or ``None`` when the budget is spent."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self._budget
        if now >= self._deadline:
            return None
        delay = min(self._delay * random.uniform(0.8, 1.2), self._deadline - now)
        self._delay = min(self._delay * 2, 1.0)
        return delay


def _server_error(exc: Neo4jError, action: str) -> RepositoryError:
    code = exc.code or ""
    if isinstance(exc, AuthError):
        return RepositoryConnectionError(
            f"neo4j {action} failed: authentication refused ({code})", backend=BACKEND
        )
    if code.startswith(_TIMED_OUT_CODES):
        return RepositoryTimeoutError(
            f"neo4j {action} failed: transaction timed out ({code})", backend=BACKEND
        )
    kind = "transient error after retries" if isinstance(exc, TransientError) else "error"
    return RepositoryError(f"neo4j {action} failed: {kind} {code}: {exc.message}", backend=BACKEND)


def map_driver_error(
    exc: BaseException, action: str, *, unknown: bool = False, timeout: float | None = None
) -> RepositoryError:
    """Return the chatmem error for a driver error; raise it ``from`` the original.

    Args:
        exc: What the driver raised (one of :data:`DRIVER_ERRORS`).
        action: What was being done, such as ``"append"``, for the message.
        unknown: Whether a write may have been applied: a lost connection or a timeout then
            raises :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError` or
            :class:`~chatmem.exceptions.RepositoryWriteTimeoutError`.
        timeout: Set when the repository's ``read_timeout`` (these seconds) closed the
            connection, which is what made the driver fail.

    Returns:
        :class:`~chatmem.exceptions.RepositoryConnectionError` when the server cannot be
        reached, went away or refused the credentials (after the driver's retries ran out);
        :class:`~chatmem.exceptions.RepositoryTimeoutError` when no pooled connection came
        in time, the transaction timed out or no answer came within ``read_timeout``;
        :class:`~chatmem.exceptions.RepositoryError` otherwise.
    """
    again = "; the write may have been applied: send it again" if unknown else ""
    if timeout is not None:
        late = RepositoryWriteTimeoutError if unknown else RepositoryTimeoutError
        return late(
            f"neo4j {action} failed: no answer within {timeout:g} s, connection closed{again}",
            backend=BACKEND,
        )
    error = _map_by_kind(exc, action)
    if unknown and type(error) is RepositoryTimeoutError and isinstance(exc, TimeoutError):
        return RepositoryWriteTimeoutError(f"{error}{again}", backend=BACKEND)
    if unknown and type(error) is RepositoryConnectionError and not isinstance(exc, AuthError):
        return RepositoryOutcomeUnknownError(f"{error}{again}", backend=BACKEND)
    return error


def _map_by_kind(exc: BaseException, action: str) -> RepositoryError:
    if isinstance(exc, ServiceUnavailable | SessionExpired):
        return RepositoryConnectionError(
            f"neo4j {action} failed: server unavailable ({exc})", backend=BACKEND
        )
    if isinstance(exc, ConnectionAcquisitionTimeoutError):
        return RepositoryTimeoutError(
            f"neo4j {action} failed: no connection available in time ({exc})", backend=BACKEND
        )
    if isinstance(exc, Neo4jError):
        return _server_error(exc, action)
    if isinstance(exc, TimeoutError):
        return RepositoryTimeoutError(f"neo4j {action} failed: timed out ({exc})", backend=BACKEND)
    if isinstance(exc, OSError):
        return RepositoryConnectionError(
            f"neo4j {action} failed: connection error ({exc})", backend=BACKEND
        )
    return RepositoryError(f"neo4j {action} failed: {exc}", backend=BACKEND)
