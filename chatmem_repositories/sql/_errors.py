"""Driver errors mapped to chatmem's, in one place for every dialect and driver."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryTimeoutError,
)

__all__ = ["is_retryable", "map_error"]

# PostgreSQL SQLSTATEs: 08xxx connection exceptions; 57P01-57P03 admin/crash shutdown or
# "cannot connect now"; 57014 statement cancelled (statement_timeout).
_PG_CONNECTION_PREFIXES = ("08", "57P0")
_PG_TIMEOUT = {"57014", "55P03"}
_PG_RETRY = {"40001", "40P01"}
# MySQL/MariaDB client and server error codes.
_MYSQL_CONNECTION = {1040, 1053, 2002, 2003, 2005, 2006, 2013, 2055, 1927}
_MYSQL_TIMEOUT = {1205, 3024, 1969}
_MYSQL_RETRY = {1213}


def _mysql_code(orig: BaseException) -> int | None:
    code = orig.args[0] if orig.args else None
    return code if isinstance(code, int) else None


def _sqlstate(orig: BaseException) -> str | None:
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state if isinstance(state, str) else None


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed transaction may simply be run again (deadlock, serialization)."""
    orig = getattr(exc, "orig", None)
    if orig is None:
        return False
    return _sqlstate(orig) in _PG_RETRY or _mysql_code(orig) in _MYSQL_RETRY


def _classify(exc: BaseException) -> type[RepositoryError]:
    if isinstance(exc, sa_exc.TimeoutError | TimeoutError):
        return RepositoryTimeoutError  # pool checkout or socket timeout
    if isinstance(exc, ConnectionError):
        return RepositoryConnectionError
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return RepositoryConnectionError
    orig = getattr(exc, "orig", None) or exc
    state = _sqlstate(orig)
    if state is not None:
        if state in _PG_TIMEOUT:
            return RepositoryTimeoutError
        if state.startswith(_PG_CONNECTION_PREFIXES):
            return RepositoryConnectionError
    code = _mysql_code(orig)
    if code in _MYSQL_TIMEOUT:
        return RepositoryTimeoutError
    if code in _MYSQL_CONNECTION:
        return RepositoryConnectionError
    text = str(orig).lower()
    if "database is locked" in text or "timeout" in text or "timed out" in text:
        return RepositoryTimeoutError
    # Client-side failures to reach the server carry no SQLSTATE (psycopg) or are plain
    # OperationalErrors from the driver (sqlite: "unable to open database file").
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError) and state is None:
        return RepositoryConnectionError
    if isinstance(exc, OSError):
        return RepositoryConnectionError
    return RepositoryError


def map_error(exc: BaseException, backend: str) -> RepositoryError:
    """Return the chatmem error for a driver or SQLAlchemy error; raise it ``from exc``.

    Args:
        exc: What SQLAlchemy or the driver raised.
        backend: The dialect name, such as ``"postgresql"``, named in the message.
    """
    orig = getattr(exc, "orig", None) or exc
    # str(orig), not str(exc): SQLAlchemy's message repeats the SQL and its parameters,
    # which may hold message content.
    detail = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    cls = _classify(exc)
    return cls(f"{backend} repository: {type(orig).__name__}: {detail}", backend=backend)
