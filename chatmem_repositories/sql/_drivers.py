"""SQLAlchemy's sync and async entry points under names the unasync rules map onto each other.

The async source imports ``AsyncEngine``, ``AsyncConnection``, ``async_create_engine`` and
``async_create_all``; its generated sync twin imports ``Engine``, ``Connection``,
``create_engine`` and ``create_all`` from here.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
import sqlite3
import time
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import quote

from sqlalchemy import Connection, Engine, MetaData, create_engine, event, func, select
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.ext.asyncio import create_async_engine as async_create_engine
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.util import greenlet_spawn

from chatmem.backend import redact_url, scrub
from chatmem.exceptions import ConfigurationError
from chatmem_repositories._deadline import Deadline, arm_socket
from chatmem_repositories.sql._errors import StatementTimeoutError

__all__ = [
    "AsyncConnection",
    "AsyncEngine",
    "Connection",
    "Engine",
    "Watch",
    "async_cancelled_or",
    "async_checkin",
    "async_checkout",
    "async_create_all",
    "async_create_engine",
    "async_driver_connection",
    "async_execute",
    "async_execute_list",
    "async_fetch_rows",
    "async_invalidate",
    "async_to_completion",
    "cancelled_or",
    "checkin",
    "checkout",
    "core_engine",
    "create_all",
    "create_engine",
    "deadline_of",
    "driver_connection",
    "engine_arguments",
    "execute",
    "execute_list",
    "fetch_rows",
    "install_deadlines",
    "invalidate",
    "invalidate_pool",
    "prepare_owned_engine",
    "sends_statement_lists",
    "to_completion",
]

T = TypeVar("T")

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
# Default (pool_size, max_overflow). Async: a fixed pool, no overflow churn (an overflow
# connection is closed on return whenever the pool is full, so tasks reopened one per
# checkout). Sync: threads rarely overflow, and a smaller fixed pool made their waits long.
_ASYNC_POOL = (10, 0)
_SYNC_POOL = (5, 20)
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


def _connect_args(url: URL, timeout: timedelta, read_timeout: timedelta) -> dict[str, Any]:
    seconds = max(1, round(timeout.total_seconds()))
    driver = url.get_driver_name()
    args: dict[str, Any]
    if url.get_backend_name() == "sqlite":
        args = {"timeout": 30.0}  # SQLite's busy timeout: writers queue for the file lock
    elif driver in ("psycopg", "psycopg_async"):
        # Server-side prepared statements (psycopg's default after five runs) skip planning
        # once the server keeps one plan for them (see _generic_plans).
        args = {"connect_timeout": seconds}
    elif driver == "pymysql":
        # pymysql bounds every socket read and write itself; the other network drivers
        # get the repository's deadline instead (install_deadlines).
        reply = read_timeout.total_seconds()
        args = {"connect_timeout": seconds, "read_timeout": reply, "write_timeout": reply}
    elif driver == "mysqldb":
        # mysqlclient (libmariadb) takes whole seconds for its socket timeouts.
        reply = max(1, round(read_timeout.total_seconds()))
        args = {"connect_timeout": seconds, "read_timeout": reply, "write_timeout": reply}
    elif driver in ("aiomysql", "asyncmy"):
        args = {"connect_timeout": seconds}
    elif driver == "asyncpg":
        args = {"timeout": seconds}
    else:
        args = {}
    # A value given in the URL's query wins, as SQLAlchemy users expect.
    return {k: v for k, v in args.items() if k not in url.query}


# SQLAlchemy's reading of a URL up to its host list: scheme, then an optional user-info
# whose password runs to the next "@".
_AUTHORITY = re.compile(
    r"(?P<head>[\w+]+://(?:[^:/]*(?::[^@]*)?@)?)(?P<hosts>[^/?]*)(?P<tail>.*)", re.S
)


def _hosts_in_query(url: str) -> str:
    """Rewrite libpq's ``h1:5432,[::1]:5433`` host list into SQLAlchemy's query form.

    SQLAlchemy parses one host per URL; for PostgreSQL it takes several in its ``host`` and
    ``port`` query parameters (``host=h1,::1&port=5432,5433``), which libpq tries in order.

    Raises:
        ConfigurationError: If a URL of another database names several hosts.
    """
    match = _AUTHORITY.fullmatch(url)
    if match is None or "," not in match["hosts"]:
        return url
    if not url.lower().startswith(("postgresql", "postgres")):
        raise ConfigurationError(
            f"only PostgreSQL URLs may name several hosts; got {redact_url(url)!r}"
        )
    pairs = [_host_and_port(item) for item in match["hosts"].split(",")]
    # SQLAlchemy's comma form reaches libpq as "h1,::1" and "5432,5433"; its repeated form
    # (host=h1:5432&host=...) splits each host at every ":", which breaks IPv6 addresses.
    hosts = "host=" + quote(",".join(host for host, _ in pairs), safe=",:")
    if any(port for _, port in pairs):
        hosts += "&port=" + quote(",".join(port for _, port in pairs), safe=",")
    path, mark, query = match["tail"].partition("?")
    query = f"{query}&{hosts}" if mark and query else hosts
    return f"{match['head']}{path}?{query}"


def _host_and_port(item: str) -> tuple[str, str]:
    """``db:5432`` -> ``("db", "5432")``, ``[::1]:5433`` -> ``("::1", "5433")``; no port: ``""``.

    libpq takes an IPv6 address without brackets in its host list, and an empty port as its
    default one.
    """
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = item.partition(":")
    return host, port


_WAL_SWITCH_TRIES = 100  # 10 ms apart; the switch is done after the first opener's


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run while one writer holds the lock; NORMAL sync is safe with WAL.
    cursor = dbapi_connection.cursor()
    for tries_left in reversed(range(_WAL_SWITCH_TRIES)):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            # Connections first opening a new file at once each switch it to WAL, and SQLite
            # tells all but one "database is locked" at once, not after its busy timeout:
            # each holds the read lock the others' switch waits for. Once one has switched,
            # the pragma finds the file in WAL mode.
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or not tries_left:
                raise
            time.sleep(0.01)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def engine_arguments(
    url: str,
    *,
    drop: Collection[str] = (),
    is_async: bool,
    connect_timeout: timedelta,
    read_timeout: timedelta = timedelta(seconds=30),
    pool_size: int | None,
    max_overflow: int | None,
    pool_pre_ping: bool = False,
    driver_options: Mapping[str, Any] | None = None,
) -> tuple[URL, dict[str, Any]]:
    """Return the URL (with a suitable driver) and keyword arguments for ``create_engine``.

    Args:
        url: A SQLAlchemy URL; ``postgresql://``, ``mysql://``, ``sqlite:///x.db`` get a
            driver that is installed with chatmem's extras (psycopg, pymysql/aiomysql,
            aiosqlite).
        drop: Query parameters to remove (chatmem's own options; the rest go to the driver).
        is_async: Whether the engine is for the async repository.
        connect_timeout: Bound on connecting, and on waiting for a pooled connection.
        read_timeout: Bound on each reply, for pymysql (which enforces it itself).
        pool_size: Connections kept open; ``None``: 10 async, 5 sync.
        max_overflow: Extra connections under load; ``None``: 0 async, 20 sync.
        pool_pre_ping: Test each connection on checkout (one more round trip per call).
        driver_options: Keyword arguments for the driver's ``connect()``; they win over the
            URL's query and the settings derived from the timeouts.

    Raises:
        ConfigurationError: If the URL cannot be parsed, has a port out of range, or names
            several hosts for a database other than PostgreSQL.
    """
    single = _hosts_in_query(url)
    try:
        parsed = _with_driver(make_url(single).difference_update_query(drop), is_async)
    except Exception as exc:  # sqlalchemy raises ArgumentError, ValueError, ...
        raise ConfigurationError(
            f"invalid SQL repository URL {redact_url(url)!r}: {scrub(str(exc), url)}"
        ) from None
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConfigurationError(
            f"bad port {parsed.port} in SQL repository URL {redact_url(url)!r}: "
            "a number from 1 to 65535"
        )
    kwargs: dict[str, Any] = {
        "connect_args": {
            **_connect_args(parsed, connect_timeout, read_timeout),
            **(driver_options or {}),
        },
        "pool_pre_ping": pool_pre_ping,
    }
    memory = parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")
    if not memory:
        async_size, async_overflow = _ASYNC_POOL
        sync_size, sync_overflow = _SYNC_POOL
        if pool_size is None:
            pool_size = async_size if is_async else sync_size
        if max_overflow is None:
            max_overflow = async_overflow if is_async else sync_overflow
        kwargs |= {
            "pool_size": pool_size,
            "max_overflow": max_overflow,
            "pool_timeout": max(1.0, connect_timeout.total_seconds()),
        }
    if parsed.get_backend_name() in (*_MYSQL, "sqlite"):
        # The pool's rollback on return is a round trip on MySQL/MariaDB even right after a
        # COMMIT, and a hop to aiosqlite's thread: prepare_owned_engine installs one that
        # asks the driver first.
        kwargs["pool_reset_on_return"] = None
    return parsed, kwargs


_MYSQL = ("mysql", "mariadb")
_IN_TRANSACTION = 1  # MySQL's SERVER_STATUS_IN_TRANS, in the status of every OK/EOF packet


def _rollback_if_in_transaction(dbapi_connection: Any, record: Any, state: Any) -> None:
    """Reset a MySQL/MariaDB or SQLite connection returning to the pool: roll back if needed.

    The engine's own reset (``pool_reset_on_return``) is off: it would roll back after
    every COMMIT (a round trip to MySQL, a hop to aiosqlite's thread). A connection being
    discarded is not touched.
    """
    if state.transaction_was_reset or not state.asyncio_safe or state.terminate_only:
        return
    if _in_transaction(record.driver_connection):
        dbapi_connection.rollback()


def _in_transaction(driver: Any) -> bool:
    """Whether the driver says a transaction is open (``True`` when it cannot say)."""
    # PyMySQL and aiomysql keep the server's status from its last answer.
    status = getattr(driver, "server_status", None)
    if isinstance(status, int):
        return bool(status & _IN_TRANSACTION)
    # sqlite3 asks the library; aiosqlite reads the same flag without a hop to its thread.
    flag = getattr(driver, "in_transaction", None)
    return flag if isinstance(flag, bool) else True


def core_engine(engine: Engine | AsyncEngine) -> Engine:
    """Return the sync engine behind ``engine`` (itself for a sync engine), for events."""
    return engine.sync_engine if isinstance(engine, AsyncEngine) else engine


def prepare_owned_engine(
    engine: Engine | AsyncEngine,
    *,
    read_timeout: timedelta,
    connect_timeout: timedelta = timedelta(seconds=10),
) -> None:
    """Tune an engine the repository created itself (never one it was handed).

    Args:
        engine: The new engine.
        read_timeout: Bound on each statement's and commit's answer (see
            :func:`install_deadlines`).
        connect_timeout: Bound on opening a connection, handshake included.
    """
    sync = core_engine(engine)
    if sync.dialect.name == "sqlite":
        event.listen(sync, "connect", _sqlite_pragmas)
    if sync.dialect.name in (*_MYSQL, "sqlite"):
        event.listen(sync, "reset", _rollback_if_in_transaction)
    if sync.dialect.driver in ("psycopg", "psycopg_async"):
        event.listen(sync, "connect", _generic_plans)
    socket_of = _SOCKETS.get(sync.dialect.driver)
    if socket_of is not None:
        install_deadlines(sync, read_timeout.total_seconds(), socket_of)
    if sync.dialect.driver == "aiomysql":
        _bound_aiomysql_connect(sync, connect_timeout.total_seconds())
    if sync.dialect.driver in _STATEMENT_LIST_DRIVERS:
        _allow_statement_lists(sync)


# Sent once per new connection. set_config, not SET: a server without the setting (before
# PostgreSQL 12, or another server speaking its protocol) skips it instead of failing.
_GENERIC_PLANS = (
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', false)"
    " WHERE current_setting('plan_cache_mode', true) IS NOT NULL"
)


def _generic_plans(dbapi_connection: Any, _record: Any) -> None:
    """Have PostgreSQL keep one plan per prepared statement on this connection.

    Left to itself, PostgreSQL keeps a prepared statement's generic plan only if it is
    estimated to cost no more than planning with each call's values; for a conversation
    smaller than the table's average, it is not, and the memory's read was planned anew
    on every call, a large part of a short read. Every statement of the repository is shaped
    so that its generic plan walks an index: equality on the conversation id leads every
    index, liveness is an uncorrelated ``EXISTS``, the system message is found by its full
    primary key. Only for engines the repository creates; the setting lasts for the
    connection, so it is committed (psycopg opens a transaction for it).
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(_GENERIC_PLANS)
    finally:
        cursor.close()
    dbapi_connection.commit()


# MySQL's CLIENT_MULTI_STATEMENTS capability flag (the same bit in every driver's constants).
_MULTI_STATEMENTS = 1 << 16
_STATEMENT_LIST_DRIVERS = ("pymysql", "mysqldb", "aiomysql")
_STATEMENT_LISTS: weakref.WeakSet[Engine] = weakref.WeakSet()


def _allow_statement_lists(engine: Engine) -> None:
    """Let the engine's MySQL/MariaDB connections send several statements in one packet.

    A read then ends its transaction in the same round trip (``SELECT ...; ROLLBACK``), and
    an append's last insert carries its ``COMMIT``. Only for engines the repository owns:
    every statement it sends binds its values through the driver, so no value is ever
    read as SQL. The flag is added to the driver's own (SQLAlchemy sets ``FOUND_ROWS``).
    """

    def with_flag(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["client_flag"] = int(cparams.get("client_flag", 0)) | _MULTI_STATEMENTS

    event.listen(engine, "do_connect", with_flag)
    _STATEMENT_LISTS.add(engine)


def sends_statement_lists(engine: Engine | AsyncEngine) -> bool:
    """Whether :func:`prepare_owned_engine` let ``engine`` send several statements at once."""
    return core_engine(engine) in _STATEMENT_LISTS


def _bound_aiomysql_connect(engine: Engine, seconds: float) -> None:
    # aiomysql's connect_timeout bounds only the TCP connection; reading the server's
    # greeting and authenticating wait forever on a server that accepts and never answers.
    # SQLAlchemy passes the driver's connect function as async_creator_fn (the mechanism of
    # create_async_engine's async_creator); this one bounds the whole handshake.
    import aiomysql

    async def connect(*args: Any, **kwargs: Any) -> Any:
        # What aiomysql.connect does, but a connection cancelled (or out of time) during its
        # handshake is closed: aiomysql closes a half-open one only on an Exception, so a
        # cancelled caller left its socket open.
        connection = aiomysql.Connection(*args, **kwargs)
        try:
            await asyncio.wait_for(connection._connect(), seconds)
        except BaseException:
            connection.close()
            raise
        return connection

    def bounded(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        cparams.setdefault("async_creator_fn", connect)

    event.listen(engine, "do_connect", bounded)


def _psycopg_socket(driver_connection: Any) -> int | None:
    return int(driver_connection.fileno())


def _aiomysql_socket(driver_connection: Any) -> int | None:
    # aiomysql keeps its stream writer private; without it, no deadline (never a failure).
    writer = getattr(driver_connection, "_writer", None)
    sock = None if writer is None else writer.get_extra_info("socket")
    return None if sock is None else int(sock.fileno())


# The network drivers that wait for an answer forever (pymysql and mysqlclient have their
# own read_timeout).
_SOCKETS: dict[str, Callable[[Any], int | None]] = {
    "psycopg": _psycopg_socket,
    "psycopg_async": _psycopg_socket,
    "aiomysql": _aiomysql_socket,
}
_DEADLINE = "chatmem_deadline"


def _disarm(info: dict[Any, Any]) -> Deadline | None:
    deadline: Deadline | None = info.pop(_DEADLINE, None)
    if deadline is not None:
        deadline.cancel()
    return deadline


Watch = tuple[float, Callable[[Any], int | None]]
"""An engine's deadline: the seconds allowed per answer, and how to find a connection's socket."""

# The deadline installed on each engine, for the statements the runner sends to the driver
# itself (SQLAlchemy's events do not see those).
_WATCHES: weakref.WeakKeyDictionary[Engine, Watch] = weakref.WeakKeyDictionary()


def deadline_of(engine: Engine | AsyncEngine) -> Watch | None:
    """Return the deadline :func:`install_deadlines` put on ``engine``, or ``None``."""
    return _WATCHES.get(core_engine(engine))


def async_cancelled_or(exc: Exception) -> BaseException:
    """What an async call that failed with ``exc`` raises: ``CancelledError`` if cancelled.

    SQLAlchemy's asyncio layer can turn a cancellation that lands in its greenlet (while the
    pool connects and the dialect reads the server's settings, or while a connection is
    closed after it) into another error: a closed connection, ``NotImplementedError``. A
    caller that cancelled the task, and ``asyncio.timeout``, expect ``CancelledError``.

    Args:
        exc: The error the call failed with.

    Returns:
        A ``CancelledError`` caused by ``exc`` when the current task is being cancelled, else
        ``exc``.
    """
    task = asyncio.current_task()
    if task is None or not task.cancelling():
        return exc
    cancelled = asyncio.CancelledError()
    cancelled.__cause__ = exc
    return cancelled


def cancelled_or(exc: Exception) -> BaseException:
    """The sync twin of :func:`async_cancelled_or`: a sync call is never cancelled.

    Args:
        exc: The error the call failed with.

    Returns:
        ``exc``.
    """
    return exc


async def async_to_completion(call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call()`` to its end even if the caller is cancelled meanwhile, then raise that.

    For work that must not stop halfway: the caller returns no sooner than the work, and a
    cancellation is raised (from the work's error, if it failed) once the work has ended.

    Args:
        call: Makes the coroutine to run.

    Returns:
        What the coroutine returned.
    """
    task = asyncio.ensure_future(call())
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        if not task.cancelled():
            cancelled.__cause__ = task.exception()
        raise cancelled
    return task.result()


def to_completion(call: Callable[[], T]) -> T:
    """The sync twin of :func:`async_to_completion`: a sync call is never cancelled.

    Args:
        call: The work.

    Returns:
        What ``call`` returned.
    """
    return call()


async def async_checkout(engine: AsyncEngine) -> PoolProxiedConnection:
    """Take a connection from the engine's pool (pre-pinged if the engine asks for it)."""
    return await engine.raw_connection()


def checkout(engine: Engine) -> PoolProxiedConnection:
    """Take a connection from the engine's pool (pre-pinged if the engine asks for it)."""
    return engine.raw_connection()


async def async_checkin(connection: PoolProxiedConnection) -> None:
    """Give a connection from :func:`async_checkout` back to its pool.

    The pool resets it (a rollback) through SQLAlchemy's adapted driver, which runs in a
    greenlet.
    """
    await greenlet_spawn(connection.close)


def checkin(connection: PoolProxiedConnection) -> None:
    """Give a connection from :func:`checkout` back to its pool."""
    connection.close()


async def async_driver_connection(connection: AsyncConnection) -> Any:
    """The driver's own connection under a connection of :func:`async_checkout`'s engine."""
    raw = await connection.get_raw_connection()
    return raw.driver_connection


def driver_connection(connection: Connection) -> Any:
    """The driver's own connection under an engine's connection."""
    return connection.connection.driver_connection


async def async_execute(
    driver: Any, text: str, bound: Any, *, many: bool = False
) -> tuple[list[Any], int, int | None]:
    """Run one statement on a driver connection: ``(rows, rowcount, lastrowid)``.

    psycopg, sqlite3 and aiosqlite connections execute themselves; PyMySQL, mysqlclient
    and aiomysql need a cursor. ``many`` runs it as an executemany of ``bound``, a list.
    """
    if hasattr(driver, "execute"):
        cursor = await (driver.executemany if many else driver.execute)(text, bound)
        return await _answer_of(cursor)
    cursor = await (
        driver.cursor(_quiet_aiomysql_cursor()) if _aiomysql(driver) else driver.cursor()
    )
    try:
        await (cursor.executemany if many else cursor.execute)(text, bound)
        return await _answer_of(cursor)
    finally:
        await cursor.close()


async def async_fetch_rows(driver: Any, text: str, bound: Any) -> list[Any]:
    """Run one statement on a driver connection and return its rows (no counts).

    aiosqlite runs the statement and reads its rows in one hop to its thread
    (``execute_fetchall``), where executing and fetching took a hop each.
    """
    if hasattr(driver, "execute_fetchall"):
        return list(await driver.execute_fetchall(text, bound))
    rows, _, _ = await async_execute(driver, text, bound)
    return rows


async def async_execute_list(
    driver: Any, text: str, bound: Any
) -> list[tuple[list[Any], int, int | None]]:
    """Send a statement list in one round trip: ``(rows, rowcount, lastrowid)`` per statement.

    For MySQL drivers on a connection that allows statement lists. Every result is read,
    so the connection is ready for the next statement; a failing statement raises when its
    result is read, and the server runs none of the statements after it.
    """
    cursor = await (
        driver.cursor(_quiet_aiomysql_cursor()) if _aiomysql(driver) else driver.cursor()
    )
    try:
        await cursor.execute(text, bound)
        answers = [await _answer_of(cursor)]
        while await cursor.nextset():
            answers.append(await _answer_of(cursor))
        return answers
    finally:
        await cursor.close()


def _aiomysql(driver: Any) -> bool:
    return type(driver).__module__.startswith("aiomysql.")


@functools.cache
def _quiet_aiomysql_cursor() -> type[Any]:
    """The aiomysql cursor, without the warnings check that SQLAlchemy's adapter turns off too.

    aiomysql asks ``SHOW WARNINGS`` after any statement the server warned about (an
    ``INSERT IGNORE`` that skipped a stored id: one more round trip) and re-raises each as
    a Python warning.
    """
    import aiomysql

    class QuietCursor(aiomysql.Cursor):  # type: ignore[misc]
        async def _show_warnings(self, conn: Any) -> None:
            return None

    return QuietCursor


async def _answer_of(cursor: Any) -> tuple[list[Any], int, int | None]:
    rows = list(await cursor.fetchall()) if cursor.description is not None else []
    return rows, cursor.rowcount, getattr(cursor, "lastrowid", None)


def execute(
    driver: Any, text: str, bound: Any, *, many: bool = False
) -> tuple[list[Any], int, int | None]:
    """Run one statement on a driver connection: ``(rows, rowcount, lastrowid)``.

    psycopg, sqlite3 and aiosqlite connections execute themselves; PyMySQL, mysqlclient
    and aiomysql need a cursor. ``many`` runs it as an executemany of ``bound``, a list.
    """
    if hasattr(driver, "execute"):
        cursor = (driver.executemany if many else driver.execute)(text, bound)
        return _answer(cursor)
    cursor = driver.cursor()
    try:
        (cursor.executemany if many else cursor.execute)(text, bound)
        return _answer(cursor)
    finally:
        cursor.close()


def fetch_rows(driver: Any, text: str, bound: Any) -> list[Any]:
    """Run one statement on a driver connection and return its rows (no counts)."""
    rows, _, _ = execute(driver, text, bound)
    return rows


def execute_list(driver: Any, text: str, bound: Any) -> list[tuple[list[Any], int, int | None]]:
    """Send a statement list in one round trip: ``(rows, rowcount, lastrowid)`` per statement.

    The sync twin of :func:`async_execute_list`.
    """
    cursor = driver.cursor()
    try:
        cursor.execute(text, bound)
        answers = [_answer(cursor)]
        while cursor.nextset():
            answers.append(_answer(cursor))
        return answers
    finally:
        cursor.close()


def _answer(cursor: Any) -> tuple[list[Any], int, int | None]:
    rows = list(cursor.fetchall()) if cursor.description is not None else []
    return rows, cursor.rowcount, getattr(cursor, "lastrowid", None)


async def async_invalidate(connection: PoolProxiedConnection, exc: BaseException) -> None:
    """Discard a connection from :func:`async_checkout` (closed in a greenlet)."""
    await greenlet_spawn(connection.invalidate, exc)


def invalidate(connection: PoolProxiedConnection, exc: BaseException) -> None:
    """Discard a connection from :func:`checkout`."""
    connection.invalidate(exc)


def invalidate_pool(engine: Engine | AsyncEngine, connection: PoolProxiedConnection) -> None:
    """Have the pool replace, at their next checkout, the connections opened before this one.

    For a connection the server closed: a server that closed one (it restarted, or a failover
    moved the writes to another server) has closed the others too, and each would fail one
    more call. SQLAlchemy does the same for the statements it runs itself. ``connection`` is
    left to :func:`invalidate` or :func:`async_invalidate`.
    """
    engine.pool._invalidate(connection, _checkin=False)


def install_deadlines(
    engine: Engine, seconds: float, socket_of: Callable[[Any], int | None]
) -> None:
    """Bound every statement, commit and rollback on ``engine`` by ``seconds``.

    A deadline is armed before each one is sent and cancelled when its answer came (after
    the statement; for a commit or rollback, when the connection goes back to the pool).
    If it passes first, the connection's socket is shut down: the driver's wait ends with a
    "connection closed" error, SQLAlchemy discards the connection, and the error is replaced
    by :class:`~chatmem_repositories.sql._errors.StatementTimeoutError`.

    Args:
        engine: The (sync) engine to listen on.
        seconds: The time allowed for each answer.
        socket_of: Returns the socket descriptor of a driver connection, or ``None``.
    """

    def arm(connection: Connection, *_: Any) -> None:
        if connection.invalidated or connection.closed:
            return  # SQLAlchemy sends nothing on such a connection
        info = connection.info
        _disarm(info)
        fd = socket_of(connection.connection.driver_connection)
        if fd is not None:
            info[_DEADLINE] = arm_socket(seconds, fd)

    def answered(connection: Connection, *_: Any) -> None:
        _disarm(connection.info)

    def failed(context: ExceptionContext) -> BaseException | None:
        connection = context.connection
        if connection is None or connection.invalidated or connection.closed:
            return None
        deadline = _disarm(connection.info)
        if deadline is None or not deadline.expired:
            return None
        context.is_disconnect = True  # its socket is shut: never use it again
        return StatementTimeoutError(f"no answer within {seconds:g} s; the connection was closed")

    def returned(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            _disarm(record.info)

    _WATCHES[engine] = (seconds, socket_of)
    event.listen(engine, "before_cursor_execute", arm)
    event.listen(engine, "after_cursor_execute", answered)
    event.listen(engine, "commit", arm)
    event.listen(engine, "rollback", arm)
    event.listen(engine, "handle_error", failed)
    event.listen(engine.pool, "checkin", returned)


async def async_create_all(connection: AsyncConnection, metadata: MetaData) -> None:
    """Create the tables and indexes that are missing (see :func:`create_all`)."""
    await connection.run_sync(create_all, metadata)


def create_all(connection: Connection, metadata: MetaData) -> None:
    """Create the tables and indexes that are missing, safe beside other creators.

    ``create_all`` checks which tables exist, then creates the others: two processes first
    using a new database at once both found them missing, and the later ``CREATE TABLE``
    failed (SQLite's and MySQL's "already exists", a duplicate key in PostgreSQL's
    catalog). So the check and the creation run under a lock of the database: a second
    creator waits, then finds the whole schema made. Taking "already exists" as success
    would not do: a table found made says nothing of its indexes, which its creator may
    still be making (``create_all`` skips the indexes of a table that exists). Nor would
    ``IF NOT EXISTS``: PostgreSQL's still fails in such a race, and MySQL has no ``CREATE
    INDEX IF NOT EXISTS``.

    Args:
        connection: A connection in a transaction (``engine.begin()``).
        metadata: The tables.

    Raises:
        TimeoutError: If MySQL's lock was held by another creator for a minute.
    """
    with _schema_lock(connection, metadata):
        metadata.create_all(connection)


_SCHEMA_LOCK_WAIT = 60  # seconds MySQL waits for another creator (the deadline may end it first)


@contextmanager
def _schema_lock(connection: Connection, metadata: MetaData) -> Iterator[None]:
    """Hold the database's lock on creating these tables (SQL Server and Oracle: none)."""
    # Named after the tables: repositories with other table prefixes do not wait.
    key = hashlib.blake2b(" ".join(sorted(metadata.tables)).encode(), digest_size=4)
    name = connection.dialect.name
    if name == "sqlite":
        # SQLite's DDL is transactional, but sqlite3 begins no transaction for it (each
        # CREATE committed alone): begin one that holds the write lock from the start.
        if not _in_transaction(connection.connection.driver_connection):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        yield
    elif name == "postgresql":
        # Released at the commit that makes the tables visible to the next creator. A 32-bit
        # key: any driver binds it as an integer the bigint parameter takes.
        lock_id = int.from_bytes(key.digest(), "big", signed=True)
        connection.execute(select(func.pg_advisory_xact_lock(lock_id)))
        yield
    elif name in _MYSQL:
        # Each DDL statement commits at once: a lock of the session, released when done
        # (or by the server, if the connection is lost).
        lock_name = f"chatmem_schema_{key.hexdigest()}"
        if connection.scalar(select(func.get_lock(lock_name, _SCHEMA_LOCK_WAIT))) != 1:
            raise TimeoutError(
                f"another process has been creating the tables for {_SCHEMA_LOCK_WAIT} s"
            )
        try:
            yield
        finally:
            if not connection.invalidated:  # a lost connection's lock is the server's to free
                connection.execute(select(func.release_lock(lock_name)))
    else:
        yield
