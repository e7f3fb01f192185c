"""SQLAlchemy's sync and async entry points under names the unasync rules map onto each other.

The async source imports ``AsyncEngine``, ``AsyncConnection``, ``async_create_engine`` and
``async_create_all``; its generated sync twin imports ``Engine``, ``Connection``,
``create_engine`` and ``create_all`` from here.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, MetaData, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.ext.asyncio import create_async_engine as async_create_engine

from chatmem.exceptions import ConfigurationError

__all__ = [
    "AsyncConnection",
    "AsyncEngine",
    "Connection",
    "Engine",
    "async_create_all",
    "async_create_engine",
    "core_engine",
    "create_all",
    "create_engine",
    "engine_arguments",
    "prepare_owned_engine",
]

# Driver chosen when a URL names none (or a sync-only one for the async repository).
_SYNC_DRIVERS = {"postgresql": "psycopg", "mysql": "pymysql", "mariadb": "pymysql"}
_ASYNC_DRIVERS = {
    "sqlite": "aiosqlite",
    "postgresql": "psycopg",
    "mysql": "aiomysql",
    "mariadb": "aiomysql",
    "mssql": "aioodbc",
    "oracle": "oracledb_async",
}
_ASYNC_CAPABLE = {"aiosqlite", "psycopg", "psycopg_async", "asyncpg", "aiomysql", "asyncmy"}
_ASYNC_CAPABLE |= {"aioodbc", "oracledb_async"}


def _with_driver(url: URL, is_async: bool) -> URL:
    backend, _, driver = url.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if is_async:
        if driver not in _ASYNC_CAPABLE:
            driver = _ASYNC_DRIVERS.get(backend, driver)
    elif not driver:
        driver = _SYNC_DRIVERS.get(backend, "")
    return url.set(drivername=f"{backend}+{driver}" if driver else backend)


def _connect_args(url: URL, timeout: timedelta) -> dict[str, Any]:
    seconds = max(1, round(timeout.total_seconds()))
    driver = url.get_driver_name()
    args: dict[str, Any]
    if url.get_backend_name() == "sqlite":
        args = {"timeout": 30.0}  # SQLite's busy timeout: writers queue for the file lock
    elif driver in ("psycopg", "psycopg_async"):
        # Server-side prepared statements (psycopg's default after five runs) skip planning,
        # which is most of a window read's cost. The per-turn statements are shaped so a
        # generic plan is still an index walk: liveness is an uncorrelated EXISTS and the
        # system message is found by its full primary key.
        args = {"connect_timeout": seconds}
    elif driver == "pymysql":
        args = {"connect_timeout": seconds, "read_timeout": 60, "write_timeout": 60}
    elif driver in ("aiomysql", "asyncmy"):
        args = {"connect_timeout": seconds}
    elif driver == "asyncpg":
        args = {"timeout": seconds}
    else:
        args = {}
    # A value given in the URL's query wins, as SQLAlchemy users expect.
    return {k: v for k, v in args.items() if k not in url.query}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run while one writer holds the lock; NORMAL sync is safe with WAL.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def engine_arguments(
    url: str,
    *,
    drop: Collection[str] = (),
    is_async: bool,
    connect_timeout: timedelta,
    pool_size: int,
    max_overflow: int,
    pool_pre_ping: bool = False,
) -> tuple[URL, dict[str, Any]]:
    """Return the URL (with a suitable driver) and keyword arguments for ``create_engine``.

    Args:
        url: A SQLAlchemy URL; ``postgresql://``, ``mysql://``, ``sqlite:///x.db`` get a
            driver that is installed with chatmem's extras (psycopg, pymysql/aiomysql,
            aiosqlite).
        drop: Query parameters to remove (chatmem's own options; the rest go to the driver).
        is_async: Whether the engine is for the async repository.
        connect_timeout: Bound on connecting (and on replies where the driver allows it).
        pool_size: Connections kept open.
        max_overflow: Extra connections under load.
        pool_pre_ping: Test each connection on checkout (one more round trip per call).

    Raises:
        ConfigurationError: If the URL cannot be parsed.
    """
    try:
        parsed = _with_driver(make_url(url).difference_update_query(drop), is_async)
    except Exception as exc:  # sqlalchemy raises ArgumentError, ValueError, ...
        raise ConfigurationError(f"invalid SQL repository URL: {exc}") from None
    kwargs: dict[str, Any] = {
        "connect_args": _connect_args(parsed, connect_timeout),
        "pool_pre_ping": pool_pre_ping,
    }
    memory = parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")
    if not memory:
        kwargs |= {
            "pool_size": pool_size,
            "max_overflow": max_overflow,
            "pool_timeout": max(1.0, connect_timeout.total_seconds()),
        }
    return parsed, kwargs


def core_engine(engine: Engine | AsyncEngine) -> Engine:
    """Return the sync engine behind ``engine`` (itself for a sync engine), for events."""
    return engine.sync_engine if isinstance(engine, AsyncEngine) else engine


def prepare_owned_engine(engine: Engine | AsyncEngine) -> None:
    """Tune an engine the repository created itself (never one it was handed)."""
    sync = core_engine(engine)
    if sync.dialect.name == "sqlite":
        event.listen(sync, "connect", _sqlite_pragmas)


async def async_create_all(connection: AsyncConnection, metadata: MetaData) -> None:
    """Create the tables and indexes that are missing."""
    await connection.run_sync(metadata.create_all)


def create_all(connection: Connection, metadata: MetaData) -> None:
    """Create the tables and indexes that are missing."""
    metadata.create_all(connection)
