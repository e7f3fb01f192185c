"""The session adapters: one blocking, one async over the driver's own futures.

cassandra-driver has a single ``Session`` class for both worlds: ``execute`` blocks and
``execute_async`` returns a ``ResponseFuture`` whose callbacks run on the driver's I/O
thread. :class:`AsyncSessionAdapter` turns those callbacks into awaitables with
``loop.call_soon_threadsafe``, so a request never blocks the event loop and no executor is
involved. :class:`SessionAdapter` has the same methods and blocks; the generated sync
repository uses it.

The driver has no non-blocking way to connect a ``Cluster``, prepare a statement or shut a
cluster down. The async adapter therefore does those once-per-repository steps (connect,
create the schema, prepare every statement; and shutdown) on a short-lived thread of its
own and awaits its result: a bounded set-up cost, never a per-request one.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import BatchStatement, BatchType, PreparedStatement, Statement, dict_factory

from chatmem._concurrency import AsyncLock, Lock
from chatmem_repositories.cassandra._errors import driver_errors, translate
from chatmem_repositories.cassandra._schema import Cql, create_keyspace_cql
from chatmem_repositories.cassandra._settings import (
    CassandraOptions,
    ConnectionSettings,
    replication_map,
)

__all__ = ["AsyncSessionAdapter", "Row", "SessionAdapter"]

T = TypeVar("T")
Row = dict[str, Any]
"""A result row, as ``dict_factory`` makes it."""

# CREATE statements wait for schema agreement, which takes longer than a query.
_DDL_TIMEOUT = 60.0


class _Connection:
    """What both adapters share: set-up, prepared statements and statement building."""

    def __init__(
        self,
        cql: Cql,
        options: CassandraOptions,
        *,
        settings: ConnectionSettings | None = None,
        session: Session | None = None,
    ) -> None:
        self.cql = cql
        self.options = options
        self.settings = settings
        self.owns_session = session is None
        self.session: Session | None = session
        self.cluster: Cluster | None = None if session is None else session.cluster
        self.prepared: dict[str, PreparedStatement] = {}
        self.read_profile: ExecutionProfile | None = None
        self.write_profile: ExecutionProfile | None = None
        self.ready = False
        self.closed = False

    def setup_blocking(self) -> None:
        """Connect (if this adapter owns the session), create the schema, prepare statements."""
        with driver_errors():
            if self.session is None:
                self.cluster = _new_cluster(self.settings, self.options)
                self.session = self.cluster.connect()
            session = self.session
            opts = self.options
            if opts.create_keyspace:
                replication = replication_map(opts.replication) if opts.replication else None
                ddl = create_keyspace_cql(self.cql.keyspace, replication, opts.replication_factor)
                session.execute(ddl, timeout=_DDL_TIMEOUT)
            if opts.initialize_schema:
                for ddl in self.cql.tables():
                    session.execute(ddl, timeout=_DDL_TIMEOUT)
            self.prepared = {
                name: session.prepare(text) for name, text in self.cql.statements().items()
            }
            timeout = opts.request_timeout.total_seconds()
            self.read_profile = session.execution_profile_clone_update(
                EXEC_PROFILE_DEFAULT,
                row_factory=dict_factory,
                request_timeout=timeout,
                consistency_level=_level(opts.read_consistency),
            )
            self.write_profile = session.execution_profile_clone_update(
                EXEC_PROFILE_DEFAULT,
                row_factory=dict_factory,
                request_timeout=timeout,
                consistency_level=_level(opts.write_consistency),
                serial_consistency_level=_level(opts.serial_consistency),
            )
            self.ready = True

    def shutdown_blocking(self) -> None:
        """Shut the cluster down if this adapter created it."""
        if self.owns_session and self.cluster is not None:
            self.cluster.shutdown()

    def bind(self, name: str, parameters: Sequence[Any]) -> Statement:
        """Bind a prepared statement."""
        return self.prepared[name].bind(parameters)

    def batch(
        self, items: Sequence[tuple[str, Sequence[Any]]], *, logged: bool = True
    ) -> Statement:
        """Build a batch of prepared statements."""
        batch = BatchStatement(batch_type=BatchType.LOGGED if logged else BatchType.UNLOGGED)
        for name, parameters in items:
            batch.add(self.prepared[name], parameters)
        return batch

    def timestamp(self) -> int:
        """Return a write timestamp from the driver's own monotonic generator."""
        assert self.cluster is not None
        return int(self.cluster.timestamp_generator())

    def _profile(self, write: bool) -> ExecutionProfile:
        profile = self.write_profile if write else self.read_profile
        assert profile is not None
        return profile


def _level(name: str) -> int:
    return int(getattr(ConsistencyLevel, name))


def _new_cluster(settings: ConnectionSettings | None, options: CassandraOptions) -> Cluster:
    assert settings is not None
    auth = None
    if settings.username is not None:
        auth = PlainTextAuthProvider(username=settings.username, password=settings.password)
    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=options.local_datacenter))
    connect = options.connect_timeout.total_seconds()
    profile = ExecutionProfile(
        load_balancing_policy=policy,
        request_timeout=options.request_timeout.total_seconds(),
        row_factory=dict_factory,
    )
    return Cluster(
        list(settings.hosts),
        port=settings.port,
        auth_provider=auth,
        connect_timeout=connect,
        control_connection_timeout=connect,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )


def ttl_seconds(options: CassandraOptions) -> int:
    """Return the ``USING TTL`` value: whole seconds, rounded up; 0 means none."""
    if options.ttl is None:
        return 0
    return max(1, math.ceil(options.ttl.total_seconds()))


class SessionAdapter(_Connection):
    """Blocking statement execution over a driver session."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = Lock()

    def setup(self) -> None:
        """Connect and prepare once; later calls return at once."""
        if self.ready:
            return
        with self._lock:
            if not self.ready:
                self.setup_blocking()

    def execute(self, statement: Statement, *, write: bool = False) -> list[Row]:
        """Run one statement and return its rows."""
        with driver_errors(write=write):
            return list(self.session.execute(statement, execution_profile=self._profile(write)))  # type: ignore[union-attr]

    def execute_all(
        self, statements: Sequence[Statement], *, write: bool = False
    ) -> list[list[Row]]:
        """Send several statements at once and return each one's rows."""
        assert self.session is not None
        with driver_errors(write=write):
            futures = [
                self.session.execute_async(s, execution_profile=self._profile(write))
                for s in statements
            ]
            return [list(future.result()) for future in futures]

    def close(self) -> None:
        """Shut the cluster down if this adapter owns it."""
        if not self.closed:
            self.closed = True
            self.shutdown_blocking()


class AsyncSessionAdapter(_Connection):
    """Async statement execution over the driver's ``ResponseFuture`` callbacks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = AsyncLock()

    async def setup(self) -> None:
        """Connect and prepare once (on a set-up thread); later calls return at once."""
        if self.ready:
            return
        async with self._lock:
            if not self.ready:
                await _on_thread(self.setup_blocking)

    async def execute(self, statement: Statement, *, write: bool = False) -> list[Row]:
        """Run one statement and return its rows."""
        assert self.session is not None
        with driver_errors():
            future = self.session.execute_async(statement, execution_profile=self._profile(write))
        return await _rows(future, write=write)

    async def execute_all(
        self, statements: Sequence[Statement], *, write: bool = False
    ) -> list[list[Row]]:
        """Send several statements at once and return each one's rows."""
        assert self.session is not None
        with driver_errors():
            futures = [
                self.session.execute_async(s, execution_profile=self._profile(write))
                for s in statements
            ]
        return list(await asyncio.gather(*(_rows(f, write=write) for f in futures)))

    async def aclose(self) -> None:
        """Shut the cluster down (on a thread) if this adapter owns it."""
        if not self.closed:
            self.closed = True
            if self.owns_session and self.cluster is not None:
                await _on_thread(self.shutdown_blocking)


def _rows(response_future: Any, *, write: bool = False) -> asyncio.Future[list[Row]]:
    """Bridge a driver ``ResponseFuture`` to an asyncio future (first page of rows)."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[list[Row]] = loop.create_future()

    def settle(rows: Any, exc: BaseException | None) -> None:
        if waiter.done():  # cancelled by the caller
            return
        if exc is None:
            waiter.set_result(list(rows or ()))
        else:
            mapped = translate(exc, write=write)
            if mapped is not exc:
                mapped.__cause__ = exc
            waiter.set_exception(mapped)

    def call(rows: Any, exc: BaseException | None) -> None:
        # The loop may have closed while the request was in flight; nobody waits then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, rows, exc)

    response_future.add_callbacks(lambda rows: call(rows, None), lambda exc: call(None, exc))
    return waiter


async def _on_thread(function: Callable[[], T]) -> T:
    """Run a blocking set-up step on a thread of its own and await its result."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()

    def settle_result(value: T) -> None:
        if not waiter.done():
            waiter.set_result(value)

    def settle_error(exc: BaseException) -> None:
        if not waiter.done():
            waiter.set_exception(exc)

    def run() -> None:
        try:
            value = function()
        except BaseException as exc:
            _post(loop, settle_error, exc)
        else:
            _post(loop, settle_result, value)

    threading.Thread(target=run, name="chatmem-cassandra-setup", daemon=True).start()
    return await waiter


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[[Any], None], value: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is gone; nobody waits any more
        loop.call_soon_threadsafe(callback, value)
