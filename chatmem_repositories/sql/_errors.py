"""Driver errors mapped to chatmem's, in one place for every dialect and driver."""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa_exc

from chatmem.exceptions import (
    RepositoryConnectionError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
)

__all__ = ["StatementTimeoutError", "is_retryable", "map_driver_error"]


class StatementTimeoutError(TimeoutError):
    """The server did not answer a statement (or commit) in time; its connection was closed.

    Raised (through SQLAlchemy's ``handle_error`` event) in place of the driver's
    "connection closed" error when the repository's own deadline, ``read_timeout``, closed
    the connection.
    """


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


def _by_code(orig: BaseException, state: str | None) -> type[RepositoryError] | None:
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
    return None


def _classify(exc: BaseException) -> type[RepositoryError]:
    if isinstance(exc, sa_exc.TimeoutError | TimeoutError):
        return RepositoryTimeoutError  # pool checkout or socket timeout
    orig = getattr(exc, "orig", None) or exc
    # A driver error raised while handling a socket timeout, such as pymysql's read_timeout
    # ("Lost connection to MySQL server during query (timed out)").
    if isinstance(orig.__cause__ or orig.__context__, TimeoutError):
        return RepositoryTimeoutError
    if isinstance(exc, ConnectionError):
        return RepositoryConnectionError
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return RepositoryConnectionError
    state = _sqlstate(orig)
    by_code = _by_code(orig, state)
    if by_code is not None:
        return by_code
    text = str(orig).lower()
    if "database is locked" in text or "timeout" in text or "timed out" in text:
        return RepositoryTimeoutError
    # SQLite's generic error code is its answer to a statement it refused ("table ... already
    # exists", "no such table"), not a failure to reach the file.
    if getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_ERROR:
        return RepositoryError
    # Client-side failures to reach the server carry no SQLSTATE (psycopg) or are plain
    # OperationalErrors from the driver (sqlite: "unable to open database file").
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError) and state is None:
        return RepositoryConnectionError
    if isinstance(exc, OSError):
        return RepositoryConnectionError
    return RepositoryError


def map_driver_error(exc: BaseException, backend: str, *, unknown: bool = False) -> RepositoryError:
    """Return the chatmem error for a driver or SQLAlchemy error; raise it ``from exc``.

    Args:
        exc: What SQLAlchemy or the driver raised.
        backend: The dialect name, such as ``"postgresql"``, named in the message.
        unknown: Whether a write may have been applied (its statement, or its COMMIT, was
            sent before the failure). A lost connection or a timeout then raises
            :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError` or
            :class:`~chatmem.exceptions.RepositoryWriteTimeoutError`; an error the server
            answered with means nothing was applied.
    """
    orig = getattr(exc, "orig", None) or exc
    # str(orig), not str(exc): SQLAlchemy's message repeats the SQL and its parameters,
    # which may hold message content.
    detail = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    cls = _classify(exc)
    message = f"{backend} repository: {type(orig).__name__}: {detail}"
    # SQLite runs in-process: when it fails, it has said so, and nothing was applied.
    unknown = unknown and backend != "sqlite"
    if unknown and cls is RepositoryTimeoutError:
        cls = RepositoryWriteTimeoutError
        message += "; the write may have been applied: send it again"
    elif unknown and cls is RepositoryConnectionError:
        cls = RepositoryOutcomeUnknownError
        message += "; the write may have been applied: send it again"
    return cls(message, backend=backend)
