"""Durability: an acknowledged append survives SIGKILL of the database server.

For every backend whose configuration promises that a committed write survives a crash of
the server process, a private server (own port, own data directory) is started, a writer
appends batches to a few conversations through the chatmem repository, and the server is
killed with SIGKILL while the writer is still running. The server is then started again on
the same data, and every conversation must hold exactly the acknowledged messages, in
order, each once. The one append that was in flight when the server died has an unknown
outcome; it is appended again after the restart, as an application retrying it would, and
must then be stored exactly once (appends are atomic and idempotent by message id).

The shared test servers trade durability for speed, so the private ones use the settings
that make an acknowledged write survive a process crash (see docs/durability.md):
PostgreSQL synchronous_commit=on, MariaDB innodb_flush_log_at_trx_commit=1, Redis with the
append-only file fsynced on every write, Cassandra commitlog_sync=batch. FerretDB (SQLite in
WAL mode), Neo4j (transaction log) and SQLite (WAL) are durable as configured.

SQLite has no server: a writer subprocess is killed mid-run instead, and every append it
reported as done before it died must be in the file.

The Cassandra and Neo4j tests start a JVM twice (30-80 s per test on two cores); they are
marked ``slow`` and can be left out with ``-m "not slow"``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy

from chatmem.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem_repositories import create_repository
from tests.support.private_servers import ROOT, PrivateServer, private_server, start_or_skip

CONVERSATIONS = 4
ACKNOWLEDGED_BEFORE_KILL = 200  # messages; the kill comes once at least this many are acknowledged
WRITER_STOP_SECONDS = 60.0  # the append in flight at the kill must end (error or ack) within this
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def batch(conversation: str, index: int) -> list[Message]:
    """The ``index``-th batch appended to ``conversation``, the same on every call.

    Batches cycle through a turn's message types. Ids and timestamps derive from the
    position, so a retry (or the test reading a killed writer's report) builds equal
    messages.
    """
    key = f"{conversation}.{index:05d}"
    at = EPOCH + timedelta(seconds=index)
    kind = index % 3
    if kind == 0:
        return [UserMessage(f"question {key}", id=f"{key}.u", created_at=at)]
    if kind == 1:
        call = ToolCall(id=f"call-{key}", name="lookup", arguments=json.dumps({"q": key}))
        return [
            AssistantMessage(id=f"{key}.a", tool_calls=[call], created_at=at),
            ToolResponseMessage(
                id=f"{key}.t",
                responses=[ToolResponse(id=call.id, name="lookup", response_data=f'"{key}"')],
                created_at=at,
            ),
        ]
    return [AssistantMessage(f"answer {key} " + "x" * 150, id=f"{key}.a", created_at=at)]


def plan(run: str) -> Iterator[tuple[str, list[Message]]]:
    """Batches in the order the writer appends them: round robin over the conversations."""
    index = 0
    while True:
        for number in range(CONVERSATIONS):
            conversation = f"durability-{run}-{number}"
            yield conversation, batch(conversation, index)
        index += 1


@dataclass
class Outcome:
    """What the writer saw: acknowledged batches, and the one in flight when it stopped."""

    acknowledged: dict[str, list[Message]] = field(default_factory=dict)
    count: int = 0
    in_flight: tuple[str, list[Message]] | None = None
    error: BaseException | None = None

    def ack(self, conversation: str, messages: list[Message]) -> None:
        self.acknowledged.setdefault(conversation, []).extend(messages)
        self.count += len(messages)


class Writer(threading.Thread):
    """Appends the plan's batches one by one until told to stop or an append fails."""

    def __init__(self, repository: Any, run: str) -> None:
        super().__init__(daemon=True)
        self.repository = repository
        self.batches = plan(run)
        self.outcome = Outcome()
        self.ready = threading.Event()  # enough acknowledged messages, or an error
        self.stopping = threading.Event()

    def run(self) -> None:
        outcome = self.outcome
        while not self.stopping.is_set():
            conversation, messages = next(self.batches)
            outcome.in_flight = (conversation, messages)
            try:
                self.repository.append(conversation, messages)
            except Exception as exc:  # the server died under this append (or a bug)
                outcome.error = exc
                self.ready.set()
                return
            outcome.in_flight = None
            outcome.ack(conversation, messages)
            if outcome.count >= ACKNOWLEDGED_BEFORE_KILL:
                self.ready.set()


@dataclass
class Report:
    backend: str
    start_seconds: float  # first start, fresh data
    acknowledged: int
    found: int
    restart_seconds: float  # start after the SIGKILL, on the same data
    wall_seconds: float  # the whole test: start, write, kill, restart, verify
    in_flight_stored: bool | None  # whether the in-flight append was already stored

    def __str__(self) -> str:
        flight = {None: "none", True: "already stored", False: "not stored"}[self.in_flight_stored]
        return (
            f"durability[{self.backend}]: {self.acknowledged} messages acknowledged before "
            f"SIGKILL, {self.found} found after restart (in-flight append: {flight}); "
            f"start {self.start_seconds:.1f}s, restart {self.restart_seconds:.1f}s, "
            f"test {self.wall_seconds:.1f}s"
        )


def verify(repository: Any, outcome: Outcome) -> tuple[int, bool | None]:
    """Check the stored conversations against the writer's outcome after a restart.

    Returns the number of acknowledged messages found, and whether the in-flight append
    had been stored before the crash (None if no append was in flight).
    """
    acknowledged = {c: [m.id for m in ms] for c, ms in outcome.acknowledged.items()}
    stored = {c: [m.id for m in repository.find_by_conversation_id(c)] for c in acknowledged}
    if outcome.in_flight is not None:
        conversation = outcome.in_flight[0]
        stored.setdefault(
            conversation, [m.id for m in repository.find_by_conversation_id(conversation)]
        )
    missing = {c: len(set(ids) - set(stored[c])) for c, ids in acknowledged.items()}
    assert sum(missing.values()) == 0, (
        f"{sum(missing.values())} of {outcome.count} acknowledged messages lost in the crash "
        f"(per conversation: {missing})"
    )
    for conversation, ids in stored.items():
        assert len(ids) == len(set(ids)), f"{conversation}: duplicated messages after restart"
        before = acknowledged.get(conversation, [])
        allowed = [before]
        if outcome.in_flight is not None and outcome.in_flight[0] == conversation:
            # Atomic: the in-flight batch is stored whole or not at all, after the others.
            allowed.append(before + [m.id for m in outcome.in_flight[1]])
        assert ids in allowed, f"{conversation}: stored ids out of order or unexpected: {ids}"

    in_flight_stored: bool | None = None
    expected = {c: list(ms) for c, ms in outcome.acknowledged.items()}
    if outcome.in_flight is not None:
        conversation, messages = outcome.in_flight
        in_flight_stored = len(stored[conversation]) > len(acknowledged.get(conversation, []))
        # The application's retry: idempotent, so it never duplicates.
        repository.append(conversation, messages)
        expected.setdefault(conversation, []).extend(messages)
    for conversation, messages in expected.items():
        # Whole messages, not only ids: nothing was altered by the crash and recovery.
        assert repository.find_by_conversation_id(conversation) == messages, conversation
    assert set(expected) <= set(repository.find_conversation_ids())
    found = sum(len(ids) for ids in acknowledged.values())
    return found, in_flight_stored


def crash_and_recover(server: PrivateServer, options: dict[str, Any]) -> Report:
    """Write, SIGKILL the server mid-run, restart it on its data, verify; return numbers."""
    started = time.monotonic()
    run = f"{os.getpid()}-{int(started * 1000) % 10**8}"
    repository = create_repository(server.url, **options)
    writer = Writer(repository, run)
    try:
        writer.start()
        writer.ready.wait(120)
        assert writer.outcome.error is None, (
            f"an append failed before the kill: {writer.outcome.error!r}"
        )
        assert writer.outcome.count >= ACKNOWLEDGED_BEFORE_KILL, (
            f"only {writer.outcome.count} messages acknowledged in 120 s"
        )
        # The writer keeps appending: the kill lands in the middle of an append (or between
        # the reply and the next one), and the writer stops at its first error.
        server.kill()
        writer.stopping.set()
        writer.join(WRITER_STOP_SECONDS)
        assert not writer.is_alive(), "the append in flight at the kill never returned"
    finally:
        writer.stopping.set()
        repository.close()
    outcome = writer.outcome
    assert outcome.count >= ACKNOWLEDGED_BEFORE_KILL

    restart_seconds = server.start(keep_data=True)
    with create_repository(server.url, **options) as recovered:
        found, in_flight_stored = verify(recovered, outcome)
    report = Report(
        server.name,
        server.start_seconds,
        outcome.count,
        found,
        restart_seconds,
        server.start_seconds + time.monotonic() - started,
        in_flight_stored,
    )
    print(f"\n{report}")
    assert found == outcome.count
    return report


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[PrivateServer]:
    instance = private_server(request.param)
    instance.start_seconds = start_or_skip(instance)
    try:
        yield instance
    finally:
        instance.stop()


def _sql(statement: str, url: str) -> None:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sqlalchemy.text(statement))
    finally:
        engine.dispose()


@pytest.mark.backend("postgresql")
@pytest.mark.parametrize("server", ["postgresql"], indirect=True)
def test_postgresql_keeps_every_acknowledged_append(server: PrivateServer) -> None:
    # The start script runs with synchronous_commit=off (a commit is acknowledged before
    # its WAL is written). A per-database setting overrides the command line for every
    # new session, so chatmem's connections commit synchronously. fsync stays off: the
    # WAL reaches the kernel before the reply, which is what a process crash needs.
    _sql("ALTER DATABASE testdb SET synchronous_commit = on", server.url)
    crash_and_recover(server, {"initialize_schema": "always", "connect_timeout": 3})


@pytest.mark.backend("mariadb")
@pytest.mark.parametrize("server", ["mariadb"], indirect=True)
def test_mariadb_keeps_every_acknowledged_append(server: PrivateServer) -> None:
    # The start script sets innodb_flush_log_at_trx_commit=0 (redo log written about once a
    # second). 1 writes and flushes it at every commit; only root may change it.
    socket_path = server.run_dir / "mariadb" / "mysqld.sock"
    subprocess.run(
        ["mariadb", "--no-defaults", f"--socket={socket_path}", "-uroot", "-e",
         "SET GLOBAL innodb_flush_log_at_trx_commit = 1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    crash_and_recover(server, {"initialize_schema": "always", "connect_timeout": 3})


@pytest.mark.backend("mongodb")
@pytest.mark.parametrize("server", ["mongodb"], indirect=True)
def test_ferretdb_keeps_every_acknowledged_append(server: PrivateServer) -> None:
    # SQLite in WAL mode with synchronous=FULL commits before FerretDB replies. FerretDB runs
    # one insert command in one SQLite transaction, so the in-flight append is all or nothing
    # here (on MongoDB it could be a prefix of the batch).
    crash_and_recover(server, {})


@pytest.mark.backend("redis")
@pytest.mark.parametrize("server", ["redis"], indirect=True)
def test_redis_with_fsynced_aof_keeps_every_acknowledged_append(server: PrivateServer) -> None:
    # Not the test server's configuration (no persistence at all): appendonly yes with
    # appendfsync always, the strictest production setting.
    crash_and_recover(server, {"read_timeout": 3, "connect_timeout": 3})


@pytest.mark.slow
@pytest.mark.timeout(600)  # two JVM starts; up to ~90 s each on a loaded machine
@pytest.mark.backend("cassandra")
@pytest.mark.parametrize("server", ["cassandra"], indirect=True)
def test_cassandra_with_batch_commitlog_keeps_every_acknowledged_append(
    server: PrivateServer,
) -> None:
    # private_server starts it with CHATMEM_CASSANDRA_DURABLE=1: commitlog_sync batch and the
    # schema flushed. The test server's periodic sync and unsafesystem both lose acknowledged
    # writes on a process crash (docs/durability.md has the numbers).
    crash_and_recover(server, {"create_keyspace": True, "read_timeout": 10})


@pytest.mark.slow
@pytest.mark.timeout(600)  # two JVM starts; up to ~90 s each on a loaded machine
@pytest.mark.backend("neo4j")
@pytest.mark.parametrize("server", ["neo4j"], indirect=True)
def test_neo4j_keeps_every_acknowledged_append(server: PrivateServer) -> None:
    # As configured: the transaction log is forced before a commit returns. A short retry
    # budget makes the append in flight at the kill fail fast instead of retrying for 10 s.
    crash_and_recover(server, {"max_transaction_retry_time": 1})


# -- SQLite: the writer process dies, not a server -----------------------------------------


def test_sqlite_keeps_every_append_a_killed_writer_reported() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chatmem-durability-sqlite-") as directory:
        path = Path(directory) / "chat.db"
        run = "sqlite"
        reported: list[str] = []
        with subprocess.Popen(
            [sys.executable, __file__, str(path), run],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as writer:
            assert writer.stdout is not None
            assert writer.stderr is not None
            try:
                acknowledged = 0
                for line in writer.stdout:
                    reported.append(line)
                    acknowledged += int(line.split()[-1]) if line.endswith("\n") else 0
                    if acknowledged >= ACKNOWLEDGED_BEFORE_KILL:
                        writer.send_signal(signal.SIGKILL)
                        break
                # Lines the writer printed before it died are acknowledged too.
                reported += writer.stdout.readlines()
            finally:
                writer.kill()
                writer.wait(10)
            assert writer.returncode == -signal.SIGKILL, writer.stderr.read()[-4000:]

        # The writer printed one line per acknowledged batch, in plan order, so the next
        # batch of the plan is the one that was in flight.
        outcome = Outcome()
        batches = plan(run)
        for line in reported:
            if not line.endswith("\n"):  # cut short by the kill: not a complete report
                continue
            conversation, messages = next(batches)
            assert line.split() == [conversation, str(len(messages))]
            outcome.ack(conversation, messages)
        assert outcome.count >= ACKNOWLEDGED_BEFORE_KILL, "the writer stopped early"
        outcome.in_flight = next(batches)
        with create_repository(f"sqlite:///{path}") as repository:
            found, in_flight_stored = verify(repository, outcome)
    report = Report(
        "sqlite", 0.0, outcome.count, found, 0.0, time.monotonic() - started, in_flight_stored
    )
    print(f"\n{report}")
    assert found == outcome.count


def _sqlite_writer(path: str, run: str) -> None:
    """Append the plan's batches forever, printing one line per acknowledged batch."""
    repository = create_repository(f"sqlite:///{path}")
    for conversation, messages in plan(run):
        repository.append(conversation, messages)
        print(conversation, len(messages), flush=True)


if __name__ == "__main__":
    _sqlite_writer(sys.argv[1], sys.argv[2])
