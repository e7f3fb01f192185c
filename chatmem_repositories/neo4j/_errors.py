"""The one place where Neo4j driver errors become chatmem errors."""

from __future__ import annotations

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
    RepositoryTimeoutError,
)
from chatmem_repositories.neo4j._config import BACKEND

__all__ = ["DRIVER_ERRORS", "lost_race", "translate_error"]

DRIVER_ERRORS = (Neo4jError, DriverError, OSError)
"""What the driver raises; catch these and raise :func:`translate_error`'s result."""

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


def translate_error(exc: BaseException, action: str) -> RepositoryError:
    """Return the chatmem error for a driver error; raise it ``from`` the original.

    Args:
        exc: What the driver raised (one of :data:`DRIVER_ERRORS`).
        action: What was being done, such as ``"append"``, for the message.

    Returns:
        :class:`~chatmem.exceptions.RepositoryConnectionError` when the server cannot be
        reached, went away or refused the credentials (after the driver's retries ran out);
        :class:`~chatmem.exceptions.RepositoryTimeoutError` when no pooled connection came
        in time or the transaction timed out; :class:`~chatmem.exceptions.RepositoryError`
        otherwise.
    """
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
