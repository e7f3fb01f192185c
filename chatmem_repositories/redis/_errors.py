"""The one place where redis-py errors become chatmem errors."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redis import exceptions as redis_errors
from redis.asyncio.sentinel import MasterNotFoundError as AsyncMasterNotFoundError
from redis.sentinel import MasterNotFoundError

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)

__all__ = [
    "BACKEND",
    "CLUSTER_UNAVAILABLE",
    "DRIVER_ERRORS",
    "NO_MASTER",
    "RETRYABLE",
    "closed_while_in_use",
    "map_driver_error",
    "mapped_driver_errors",
    "never_sent",
]

BACKEND = "redis"

CLUSTER_UNAVAILABLE = (
    redis_errors.ClusterError,  # CLUSTERDOWN, MASTERDOWN, or redirections without end
    redis_errors.TryAgainError,  # a multi-key script while its slot is being migrated
    redis_errors.SlotNotCoveredError,  # the client's slot table has a hole (failover)
)
"""Redis Cluster refused the command without running it: failover, resharding, no quorum."""

NO_MASTER = (MasterNotFoundError, AsyncMasterNotFoundError)
"""No sentinel names a master that is up (a failover in progress, or no sentinel answers):
nothing was sent to a server."""

# redis-py's Sentinel connection turns a READONLY reply (a write sent to a master that has
# been demoted to a replica) into a ConnectionError with this text, after disconnecting so
# that the next connection asks the sentinels again. The replica refused the write.
_DEMOTED = "previous master is now a"

RETRYABLE = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    OSError,
    *CLUSTER_UNAVAILABLE,
)
"""Connection failures, timeouts and a cluster that refused: the call may succeed if made
again."""

DRIVER_ERRORS = (redis_errors.RedisError, redis_errors.RedisClusterException, OSError)
"""Everything redis-py raises for a failed call (its cluster errors have a base of their own)."""


_CONNECTION_MODULES = (
    str(Path(redis_errors.__file__).with_name("connection.py")),
    str(Path(redis_errors.__file__).parent / "asyncio" / "connection.py"),
)


def closed_while_in_use(exc: BaseException) -> redis_errors.ConnectionError | None:
    """The connection failure that an AttributeError or TypeError inside redis-py stands for.

    When a cluster reshards or fails over, redis-py can close a connection (its reader and
    writer become None) while another call is still using it; that call then fails inside
    redis-py's connection module with ``'NoneType' object has no attribute ...`` or
    ``'NoneType' object is not callable`` instead of a ConnectionError. It is a lost
    connection like any other: the command may have been sent. Any other AttributeError or
    TypeError (one raised outside redis-py's connection code) is a bug and returns None.
    """
    if not isinstance(exc, AttributeError | TypeError) or "'NoneType' object" not in str(exc):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    if not any(frame.filename in _CONNECTION_MODULES for frame in frames):
        return None
    return redis_errors.ConnectionError(f"connection closed while in use: {exc}")


def never_sent(exc: BaseException) -> bool:
    """Tell whether a failed call cannot have reached the server.

    True when no connection could be made (redis-py says "... connecting to ..."), none
    was free in the pool, no sentinel named a master, or a master demoted to a replica
    refused the write (READONLY). Anything else (a reset, a closed connection, no answer in time)
    may have come after the command was sent.
    """
    if isinstance(exc, (redis_errors.MaxConnectionsError, *CLUSTER_UNAVAILABLE, *NO_MASTER)):
        return True
    if isinstance(exc, redis_errors.ReadOnlyError) or _DEMOTED in str(exc):
        return True  # a replica refused it: not applied
    return isinstance(exc, RETRYABLE) and "connecting to" in str(exc)


def map_driver_error(
    exc: BaseException, server: str, action: str, *, unknown: bool = False
) -> RepositoryError:
    """Return the chatmem error for a redis-py error; raise it ``from exc``.

    Args:
        exc: What redis-py raised.
        server: Where the server is, without credentials, for the message.
        action: What was being done, such as ``"appending"``.
        unknown: Whether a write may have been applied: then a connection failure or a
            timeout raises :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError` or
            :class:`~chatmem.exceptions.RepositoryWriteTimeoutError`.
    """
    again = "; the write may have been applied: send it again" if unknown else ""
    if isinstance(exc, CLUSTER_UNAVAILABLE) or (
        isinstance(exc, redis_errors.RedisClusterException) and "cannot be connected" in str(exc)
    ):
        return RepositoryConnectionError(
            f"redis cluster at {server} is unavailable while {action}: {exc}", backend=BACKEND
        )
    if isinstance(exc, NO_MASTER):
        return RepositoryConnectionError(
            f"no redis master available for {server} while {action} (the sentinels name "
            f"none that is up: a failover may be in progress): {exc}{again}",
            backend=BACKEND,
        )
    if isinstance(exc, redis_errors.ReadOnlyError) or _DEMOTED in str(exc):
        return RepositoryConnectionError(
            f"redis at {server} is a read-only replica while {action} (a master demoted by a "
            f"failover?); nothing was written: {exc}{again}",
            backend=BACKEND,
        )
    if isinstance(exc, redis_errors.TimeoutError | TimeoutError):
        timeout = RepositoryWriteTimeoutError if unknown else RepositoryTimeoutError
        return timeout(
            f"redis at {server} did not answer in time while {action}: {exc}{again}",
            backend=BACKEND,
        )
    if isinstance(exc, redis_errors.ConnectionError | OSError):
        lost = RepositoryOutcomeUnknownError if unknown else RepositoryConnectionError
        return lost(f"cannot reach redis at {server} while {action}: {exc}{again}", backend=BACKEND)
    return RepositoryError(f"redis at {server} failed while {action}: {exc}", backend=BACKEND)


@contextmanager
def mapped_driver_errors(server: str, action: str) -> Iterator[None]:
    """Re-raise driver errors inside the block as chatmem repository errors.

    Args:
        server: Where the server is, without credentials, for the message.
        action: What was being done, such as ``"closing"``.
    """
    try:
        yield
    except DRIVER_ERRORS as exc:
        raise map_driver_error(exc, server, action) from exc
