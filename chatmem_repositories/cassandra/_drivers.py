"""Client construction and the session adapters: blocking, and async over the driver's futures.

cassandra-driver has a single ``Session`` class for both worlds: ``execute`` blocks and
``execute_async`` returns a ``ResponseFuture`` whose callbacks run on the driver's I/O
thread. :class:`AsyncSessionAdapter` turns those callbacks into awaitables with
``loop.call_soon_threadsafe``, so a request never blocks the event loop and no executor is
involved. :class:`SessionAdapter` has the same methods and blocks; the generated sync
repository uses it. The vector store, handed a plain session, waits for its requests with
:func:`result_rows` and :func:`async_result_rows`.

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

from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import BatchStatement, BatchType, PreparedStatement, Statement, dict_factory

from chatmem.backend import AsyncLock, Lock
from chatmem_repositories.cassandra._cql import statements, summary_statements
from chatmem_repositories.cassandra._errors import map_driver_error, mapped_driver_errors
from chatmem_repositories.cassandra._options import (
    CassandraOptions,
    ConnectionSettings,
    replication_map,
)
from chatmem_repositories.cassandra._schema import Cql, create_keyspace_cql

__all__ = [
    "AsyncSessionAdapter",
    "ClusterRef",
    "LazyCluster",
    "Row",
    "SessionAdapter",
    "async_on_thread",
    "async_result_rows",
    "new_cluster",
    "on_thread",
    "result_rows",
]

T = TypeVar("T")
Row = dict[str, Any]
"""A result row, as ``dict_factory`` makes it."""

# CREATE statements wait for schema agreement, which takes longer than a query.
_DDL_TIMEOUT = 60.0


class LazyCluster:
    """Builds the URL's ``Cluster`` when first called, not when the repository is made.

    Constructing a ``Cluster`` resolves the contact points (DNS): ``from_url`` must not, and
    an async repository must not on its event loop, so it happens on the set-up thread.

    Args:
        settings: Contact points, port and credentials from the URL.
        options: The repository's options.
        driver_options: Further ``Cluster`` keyword arguments.
    """

    def __init__(
        self,
        settings: ConnectionSettings,
        options: CassandraOptions,
        driver_options: dict[str, Any],
    ) -> None:
        self.settings = settings
        self.options = options
        self.driver_options = driver_options

    @property
    def hosts(self) -> list[str]:
        """The contact points, as the URL names them."""
        return list(self.settings.hosts)

    def __call__(self) -> Cluster:
        """Build the cluster (not connected)."""
        return new_cluster(self.settings, self.options, self.driver_options)


class ClusterRef:
    """A session, a cluster, or a callable that builds a cluster on first use.

    Args:
        client: What the repository or store was handed.
    """

    def __init__(self, client: Session | Cluster | Callable[[], Cluster]) -> None:
        self.session: Session | None = client if isinstance(client, Session) else None
        self._cluster: Cluster | None = None
        self._factory: Callable[[], Cluster] | None = None
        if isinstance(client, Session):
            self._cluster = client.cluster
        elif isinstance(client, Cluster):
            self._cluster = client
        else:
            self._factory = client

    @property
    def built(self) -> Cluster | None:
        """The cluster, or ``None`` if the factory was not called yet."""
        return self._cluster

    def get(self) -> Cluster:
        """Return the cluster, building it first if needed (call off the event loop)."""
        if self._cluster is None:
            assert self._factory is not None
            with mapped_driver_errors():
                self._cluster = self._factory()
        return self._cluster

    def hosts(self) -> list[str]:
        """The contact points, without building anything."""
        if self._cluster is not None:
            return [str(host) for host in self._cluster.contact_points]
        return list(getattr(self._factory, "hosts", ()))


class _Connection:
    """What both adapters share: set-up, prepared statements and statement building."""

    def __init__(
        self,
        cql: Cql,
        options: CassandraOptions,
        client: Session | Cluster | Callable[[], Cluster],
        *,
        owned: bool,
    ) -> None:
        self.cql = cql
        self.options = options
        self.owns_session = owned
        """Whether shutting down is this adapter's job (the client came from ``from_url``)."""
        self.ref = ClusterRef(client)
        self.session: Session | None = self.ref.session
        self.prepared: dict[str, PreparedStatement] = {}
        self.read_profile: ExecutionProfile | None = None
        self.write_profile: ExecutionProfile | None = None
        self.ready = False
        self.closed = False
        self.summaries_missing = False
        """Whether the messages table lacks the summary columns (made before them)."""
        self.serial_level = _level(options.serial_consistency)
        """The consistency level of Paxos rounds, and of reads that must see them settled."""

    def setup_blocking(self) -> None:
        """Connect (if this adapter owns the session), create the schema, prepare statements."""
        with mapped_driver_errors():
            if self.session is None:
                self.session = self.ref.get().connect()
            session = self.session
            opts = self.options
            if opts.create_keyspace:
                replication = replication_map(opts.replication) if opts.replication else None
                ddl = create_keyspace_cql(self.cql.keyspace, replication, opts.replication_factor)
                session.execute(ddl, timeout=_DDL_TIMEOUT)
            if opts.initialize_schema == "always":
                for ddl in self.cql.tables():
                    session.execute(ddl, timeout=_DDL_TIMEOUT)
                self._add_summary_columns(session)
            self.prepared = {
                name: session.prepare(text) for name, text in statements(self.cql).items()
            }
            try:
                for name, text in summary_statements(self.cql).items():
                    self.prepared[name] = session.prepare(text)
            except InvalidRequest:
                # A table made before the summary columns, with initialize_schema="never":
                # everything but the summaries works; they say what to run.
                self.summaries_missing = True
            timeout = opts.read_timeout.total_seconds()
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

    def _add_summary_columns(self, session: Session) -> None:
        """Add the summary columns to a messages table made before them (once)."""
        keyspace, table = self.cql.messages.split(".")
        found = session.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s"
            " AND table_name = %s AND column_name = 'summary_version'",
            (keyspace, table),
        )
        if found.one() is None:
            try:
                session.execute(self.cql.add_summary_columns(), timeout=_DDL_TIMEOUT)
            except InvalidRequest as exc:
                if "already exist" not in str(exc).lower():  # another process added them
                    raise

    def shutdown_blocking(self) -> None:
        """Shut the cluster down if this adapter created it."""
        cluster = self.ref.built
        if self.owns_session and cluster is not None:
            cluster.shutdown()

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
        return int(self.ref.get().timestamp_generator())

    def _profile(self, write: bool) -> ExecutionProfile:
        profile = self.write_profile if write else self.read_profile
        assert profile is not None
        return profile


def _level(name: str) -> int:
    return int(getattr(ConsistencyLevel, name))


def new_cluster(
    settings: ConnectionSettings, options: CassandraOptions, driver_options: dict[str, Any]
) -> Cluster:
    """Build a ``Cluster`` for the URL's contact points (not connected yet).

    Args:
        settings: Contact points, port and credentials from the URL.
        options: The repository's options (timeouts, local datacenter).
        driver_options: Further ``Cluster`` keyword arguments; they win over chatmem's.
    """
    auth = None
    if settings.username is not None:
        auth = PlainTextAuthProvider(username=settings.username, password=settings.password)
    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=options.local_datacenter))
    connect = options.connect_timeout.total_seconds()
    profile = ExecutionProfile(
        load_balancing_policy=policy,
        request_timeout=options.read_timeout.total_seconds(),
        row_factory=dict_factory,
    )
    arguments: dict[str, Any] = {
        "port": settings.port,
        "auth_provider": auth,
        "connect_timeout": connect,
        "control_connection_timeout": connect,
        "execution_profiles": {EXEC_PROFILE_DEFAULT: profile},
    }
    return Cluster(list(settings.hosts), **{**arguments, **driver_options})


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
        with mapped_driver_errors(write=write):
            return list(self.session.execute(statement, execution_profile=self._profile(write)))  # type: ignore[union-attr]

    def execute_all(
        self, statements: Sequence[Statement], *, write: bool = False
    ) -> list[list[Row]]:
        """Send several statements at once and return each one's rows."""
        assert self.session is not None
        with mapped_driver_errors(write=write):
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
                await async_on_thread(self.setup_blocking)

    async def execute(self, statement: Statement, *, write: bool = False) -> list[Row]:
        """Run one statement and return its rows."""
        assert self.session is not None
        with mapped_driver_errors():
            future = self.session.execute_async(statement, execution_profile=self._profile(write))
        return await _bridge(future, _dicts, write=write)

    async def execute_all(
        self, statements: Sequence[Statement], *, write: bool = False
    ) -> list[list[Row]]:
        """Send several statements at once and return each one's rows."""
        assert self.session is not None
        with mapped_driver_errors():
            futures = [
                self.session.execute_async(s, execution_profile=self._profile(write))
                for s in statements
            ]
        return list(await asyncio.gather(*(_bridge(f, _dicts, write=write) for f in futures)))

    async def aclose(self) -> None:
        """Shut the cluster down (on a thread) if this adapter owns it."""
        if not self.closed:
            self.closed = True
            if self.owns_session and self.ref.built is not None:
                await async_on_thread(self.shutdown_blocking)


def _dicts(rows: Any) -> list[Row]:
    return list(rows or ())


def _lists(rows: Any) -> list[list[Any]]:
    return [list(r.values()) if isinstance(r, dict) else list(r) for r in rows or ()]


def _bridge(
    response_future: Any, convert: Callable[[Any], list[T]], *, write: bool = False
) -> asyncio.Future[list[T]]:
    """Bridge a driver ``ResponseFuture`` to an asyncio future (first page of rows)."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[list[T]] = loop.create_future()

    def settle(rows: Any, exc: BaseException | None) -> None:
        if waiter.done():  # cancelled by the caller
            return
        if exc is None:
            waiter.set_result(convert(rows))
        else:
            mapped = map_driver_error(exc, write=write)
            if mapped is not exc:
                mapped.__cause__ = exc
            waiter.set_exception(mapped)

    def call(rows: Any, exc: BaseException | None) -> None:
        # The loop may have closed while the request was in flight; nobody waits then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, rows, exc)

    response_future.add_callbacks(lambda rows: call(rows, None), lambda exc: call(None, exc))
    return waiter


def on_thread(function: Callable[[], T]) -> T:
    """Run a blocking set-up step (in the sync twin: right away).

    Args:
        function: The step.
    """
    return function()


async def async_on_thread(function: Callable[[], T]) -> T:
    """Run a blocking set-up step on a thread of its own and await its result.

    The driver has no non-blocking connect, prepare or shutdown; a short-lived thread keeps
    them off the event loop without an executor.

    Args:
        function: The step.
    """
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if waiter.done():
            return
        if exc is None:
            waiter.set_result(value)
        else:
            waiter.set_exception(exc)

    def run() -> None:
        try:
            value, error = function(), None
        except BaseException as exc:
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is gone; nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="chatmem-cassandra-setup", daemon=True).start()
    return await waiter


def result_rows(response_future: Any) -> list[list[Any]]:
    """Wait for a request's first page and return its rows as lists.

    Args:
        response_future: What ``Session.execute_async`` returned.
    """
    with mapped_driver_errors():
        return _lists(response_future.result())


async def async_result_rows(response_future: Any) -> list[list[Any]]:
    """Await a request's first page without blocking the loop; return its rows as lists.

    Args:
        response_future: What ``Session.execute_async`` returned.
    """
    return await _bridge(response_future, _lists)
