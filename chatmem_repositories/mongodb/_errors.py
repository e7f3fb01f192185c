"""Map pymongo's errors to chatmem's, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pymongo import errors, monitoring

from chatmem.exceptions import (
    ConfigurationError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)

__all__ = [
    "BACKEND",
    "NOT_IMPLEMENTED",
    "SENT_COMMANDS",
    "is_duplicate_key",
    "map_driver_error",
    "mapped_driver_errors",
    "tracks_sent_commands",
]

BACKEND = "mongodb"
"""The backend name carried by every error."""
NOT_IMPLEMENTED = 238
"""Server error code for a feature the server lacks (FerretDB: TTL indexes, transactions)."""
_DUPLICATE_KEY = 11000
_AGAIN = "; the write may have been applied: send it again"

# Commands started by the current write (a list so the listener can count in place);
# None outside a write.
_started: ContextVar[list[int] | None] = ContextVar("chatmem_mongodb_started", default=None)


class _SentCommands(monitoring.CommandListener):
    """Counts the commands a write sends, so its failure can tell whether any reached the server.

    pymongo publishes "started" just before it sends a command on a checked-out connection:
    a write that fails with a count of zero sent nothing (no server, no connection).
    """

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        count = _started.get()
        if count is not None:
            count[0] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Nothing to do."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Nothing to do."""


SENT_COMMANDS = _SentCommands()
"""The command listener every client made by ``from_url`` carries (``event_listeners``)."""


def tracks_sent_commands(client: Any) -> bool:
    """Tell whether a pymongo client carries :data:`SENT_COMMANDS`."""
    # pymongo annotates event_listeners with its internal container type, but it returns
    # the listeners themselves.
    return any(listener is SENT_COMMANDS for listener in client.options.event_listeners)


def map_driver_error(exc: errors.PyMongoError, *, unknown: bool = False) -> Exception:
    """Return the chatmem error for a pymongo error (the caller raises it ``from exc``).

    Args:
        exc: What pymongo raised.
        unknown: Whether a write may have been applied: a lost connection or a timeout then
            raises :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError` or
            :class:`~chatmem.exceptions.RepositoryWriteTimeoutError`.
    """
    if isinstance(exc, errors.ConfigurationError):
        return ConfigurationError(f"invalid MongoDB configuration: {exc}")
    # NetworkTimeout is an AutoReconnect too: test it before the connection branch. The
    # server aborted an operation that hit its maxTimeMS (ExecutionTimeout): nothing applied.
    if isinstance(exc, errors.NetworkTimeout | errors.WTimeoutError) and unknown:
        return RepositoryWriteTimeoutError(
            f"MongoDB did not answer in time: {exc}{_AGAIN}", backend=BACKEND
        )
    if isinstance(exc, errors.NetworkTimeout | errors.ExecutionTimeout | errors.WTimeoutError):
        return RepositoryTimeoutError(f"MongoDB did not answer in time: {exc}", backend=BACKEND)
    if isinstance(exc, errors.ConnectionFailure) and unknown:
        return RepositoryOutcomeUnknownError(
            f"lost the connection to the MongoDB server: {exc}{_AGAIN}", backend=BACKEND
        )
    if isinstance(exc, errors.ConnectionFailure):
        return RepositoryConnectionError(f"cannot reach the MongoDB server: {exc}", backend=BACKEND)
    return RepositoryError(f"MongoDB operation failed: {exc}", backend=BACKEND)


@contextmanager
def mapped_driver_errors(*, write: bool = False, tracked: bool = False) -> Iterator[None]:
    """Re-raise pymongo errors raised inside the block as chatmem errors.

    Args:
        write: The block writes (one or more commands). If it fails after any of its
            commands was sent, the outcome is unknown.
        tracked: The client carries :data:`SENT_COMMANDS`, so "nothing was sent" can be
            known. Without it, every lost connection or timeout of a write counts as
            possibly applied.
    """
    started = [0] if write else None
    token = _started.set(started)
    try:
        yield
    except errors.PyMongoError as exc:
        unknown = started is not None and (started[0] > 0 or not tracked)
        raise map_driver_error(exc, unknown=unknown) from exc
    finally:
        _started.reset(token)


def is_duplicate_key(error: dict[str, object]) -> bool:
    """Tell whether one write error of a bulk write is a duplicate-key violation.

    Args:
        error: An entry of ``BulkWriteError.details["writeErrors"]``.
    """
    return error.get("code") == _DUPLICATE_KEY
