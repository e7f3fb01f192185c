"""The one place where redis-py errors become chatmem errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis import exceptions as redis_errors

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
)

__all__ = ["BACKEND", "translate_errors"]

BACKEND = "redis"


@contextmanager
def translate_errors(server: str, action: str) -> Iterator[None]:
    """Re-raise driver errors inside the block as chatmem repository errors.

    Args:
        server: Where the server is, without credentials, for the message.
        action: What was being done, such as ``"appending"``.
    """
    try:
        yield
    except (redis_errors.TimeoutError, TimeoutError) as exc:
        raise RepositoryTimeoutError(
            f"redis at {server} did not answer in time while {action}: {exc}", backend=BACKEND
        ) from exc
    except (redis_errors.ConnectionError, OSError) as exc:
        raise RepositoryConnectionError(
            f"cannot reach redis at {server} while {action}: {exc}", backend=BACKEND
        ) from exc
    except redis_errors.RedisError as exc:
        raise RepositoryError(
            f"redis at {server} failed while {action}: {exc}", backend=BACKEND
        ) from exc
