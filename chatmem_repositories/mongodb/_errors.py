"""Map pymongo's errors to chatmem's, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pymongo import errors

from chatmem.exceptions import (
    ConfigurationError,
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
)

__all__ = ["BACKEND", "NOT_IMPLEMENTED", "is_duplicate_key", "map_error", "mapped_errors"]

BACKEND = "mongodb"
"""The backend name carried by every error."""
NOT_IMPLEMENTED = 238
"""Server error code for a feature the server lacks (FerretDB: TTL indexes, transactions)."""
_DUPLICATE_KEY = 11000


def map_error(exc: errors.PyMongoError) -> Exception:
    """Return the chatmem error for a pymongo error (the caller raises it ``from exc``).

    Args:
        exc: What pymongo raised.
    """
    if isinstance(exc, errors.ConfigurationError):
        return ConfigurationError(f"invalid MongoDB configuration: {exc}")
    # NetworkTimeout is an AutoReconnect too: test it before the connection branch.
    if isinstance(exc, errors.NetworkTimeout | errors.ExecutionTimeout | errors.WTimeoutError):
        return RepositoryTimeoutError(f"MongoDB did not answer in time: {exc}", backend=BACKEND)
    if isinstance(exc, errors.ConnectionFailure):
        return RepositoryConnectionError(f"cannot reach the MongoDB server: {exc}", backend=BACKEND)
    return RepositoryError(f"MongoDB operation failed: {exc}", backend=BACKEND)


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Re-raise pymongo errors raised inside the block as chatmem errors."""
    try:
        yield
    except errors.PyMongoError as exc:
        raise map_error(exc) from exc


def is_duplicate_key(error: dict[str, object]) -> bool:
    """Tell whether one write error of a bulk write is a duplicate-key violation.

    Args:
        error: An entry of ``BulkWriteError.details["writeErrors"]``.
    """
    return error.get("code") == _DUPLICATE_KEY
