"""SQL-specific behaviour beyond the conformance suite: DDL, options, statements per turn."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, make_url, text

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    EventMessage,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.conversation_ids import scoped_conversation_id
from chatmem.exceptions import (
    ConfigurationError,
    RepositoryError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    VersionConflictError,
)
from chatmem.testing import ManualClock
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.sql import (
    AsyncSqlChatMemoryRepository,
    SqlChatMemoryRepository,
    schema_ddl,
)
from chatmem_repositories.sql._drivers import engine_arguments
from chatmem_repositories.sql._errors import is_retryable
from chatmem_repositories.sql._sync.plans import Plan
from chatmem_repositories.sql._sync.plans.mysql import SCRIPT_LIMIT
from chatmem_repositories.sql._types import NUL_STAND_IN
from tests.support.backends import SQL, backend_url
from tests.support.servers import server_url

PREFIX = "chatmem_test_"


@pytest.fixture(params=SQL)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)


@pytest.fixture
def repository(url: str) -> Iterator[SqlChatMemoryRepository]:
    repository = SqlChatMemoryRepository.from_url(
        url, table_prefix=PREFIX, initialize_schema="always"
    )
    try:
        yield repository
    finally:
        repository.close()


@pytest.fixture
def cid() -> str:
    return f"sql-{uuid.uuid4()}"


# -- schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "mariadb", "mssql", "oracle"])
def test_ddl_compiles_for_every_dialect(dialect: str) -> None:
    ddl = SqlChatMemoryRepository.schema_ddl(dialect, "app_")
    assert ddl.count("CREATE TABLE") >= 2  # conversations, messages (and summaries)
    assert "app_conversations" in ddl
    assert "app_messages" in ddl
    assert "app_messages_window" in ddl


def test_ddl_uses_types_that_hold_big_messages_and_exact_ids() -> None:
    assert "LONGTEXT" in schema_ddl("mysql")
    assert "VARBINARY(2048)" in schema_ddl("mariadb")
    mssql = schema_ddl("mssql")
    assert "NVARCHAR(max)" in mssql
    assert "DATETIME2(6)" in mssql
    assert "_BIN2" in mssql
    assert "CLOB" in schema_ddl("oracle")


def test_nul_stand_in_is_never_in_casefolded_text() -> None:
    # The search text of PostgreSQL and SQLite stores NUL as this character; a search stays
    # exact only if no casefolded text can contain it.
    assert NUL_STAND_IN.casefold() != NUL_STAND_IN
    assert not any(NUL_STAND_IN in chr(c).casefold() for c in range(sys.maxunicode + 1))


@pytest.mark.parametrize("prefix", ["", "1x", "x; DROP TABLE t", "a-b", "x" * 31, "ü"])
def test_table_prefix_must_be_an_identifier(prefix: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="table_prefix"):
        SqlChatMemoryRepository.from_url(f"sqlite:///{tmp_path}/x.db", table_prefix=prefix)


def test_initialize_schema_never_leaves_tables_alone(tmp_path: Path) -> None:
    with (
        SqlChatMemoryRepository.from_url(
            f"sqlite:///{tmp_path}/x.db", initialize_schema="never"
        ) as repository,
        pytest.raises(RepositoryError, match="no such table"),
    ):
        repository.find_recent("c", 5)


def test_embedded_creates_tables_on_sqlite_by_default(tmp_path: Path) -> None:
    with SqlChatMemoryRepository.from_url(f"sqlite:///{tmp_path}/x.db") as repository:
        repository.append("c", [UserMessage("hi")])
        assert [s.message.text for s in repository.find_recent("c", 5)] == ["hi"]  # type: ignore[union-attr]


# -- options and URLs ---------------------------------------------------------------------------


def test_unknown_option_is_named_with_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"tabel_prefix.*did you mean 'table_prefix'"):
        SqlChatMemoryRepository.from_url(f"sqlite:///{tmp_path}/x.db", tabel_prefix="x_")


def test_url_options_are_ours_and_the_rest_go_to_the_driver(tmp_path: Path) -> None:
    repository = create_repository(
        f"sqlite:///{tmp_path}/x.db?ttl=60&table_prefix=viaurl_&check_same_thread=false"
    )
    try:
        assert isinstance(repository, SqlChatMemoryRepository)
        assert repository._ttl == timedelta(seconds=60)
        assert repository._tables.messages.name == "viaurl_messages"
        assert "check_same_thread" in str(repository._engine.url)
        assert "ttl" not in str(repository._engine.url)
    finally:
        repository.close()


@pytest.mark.parametrize(
    ("given", "is_async", "driver"),
    [
        ("postgresql://u:p@h/db", False, "postgresql+psycopg"),
        ("postgresql://u:p@h/db", True, "postgresql+psycopg"),
        ("postgresql+asyncpg://u:p@h/db", True, "postgresql+asyncpg"),
        ("mysql://u:p@h/db", False, "mysql+pymysql"),
        ("mysql+pymysql://u:p@h/db", True, "mysql+aiomysql"),
        ("mariadb://u:p@h/db", True, "mariadb+aiomysql"),
        ("sqlite:///x.db", False, "sqlite"),
        ("sqlite:///x.db", True, "sqlite+aiosqlite"),
    ],
)
def test_driver_mapping(given: str, is_async: bool, driver: str) -> None:
    sa_url, kwargs = engine_arguments(
        given,
        is_async=is_async,
        connect_timeout=timedelta(seconds=4),
        pool_size=5,
        max_overflow=10,
    )
    assert sa_url.drivername == driver
    if "psycopg" in driver:
        assert kwargs["connect_args"]["connect_timeout"] == 4


def test_repr_hides_the_password() -> None:
    repository = SqlChatMemoryRepository.from_url("postgresql://user:s3cret@127.0.0.1:1/db")
    try:
        assert "s3cret" not in repr(repository)
        assert "***" in repr(repository)
    finally:
        repository.close()


def test_a_handed_engine_is_not_disposed(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/x.db")
    try:
        with SqlChatMemoryRepository(engine, table_prefix="handed_") as repository:
            repository.append("c", [UserMessage("hi")])
        with engine.connect() as connection:  # still usable: the pool was not disposed
            assert connection.execute(text("SELECT count(*) FROM handed_messages")).scalar() == 1
    finally:
        engine.dispose()


def test_unreachable_server_fails_fast_and_clearly() -> None:
    from chatmem.exceptions import RepositoryConnectionError

    repository = SqlChatMemoryRepository.from_url(
        "postgresql://test:pw@127.0.0.1:1/db", connect_timeout=2, initialize_schema="never"
    )
    try:
        with pytest.raises(RepositoryConnectionError) as caught:
            repository.find_recent("c", 5)
        assert "pw" not in str(caught.value)
    finally:
        repository.close()


# -- behaviour on every database -----------------------------------------------------------


def test_hostile_search_terms_match_literally(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    texts = ["50% off", "5000 off", "a_b", "aXb", "c:\\dir", "c:dir", "O'Brien", 'say "hi"']
    repository.append(cid, [UserMessage(t) for t in texts])

    def found(term: str) -> list[str]:
        return [s.message.text for s in repository.find_history(cid, text=term)]  # type: ignore[union-attr]

    assert found("0%") == ["50% off"]
    assert found("%") == ["50% off"]
    assert found("a_b") == ["a_b"]
    assert found("_") == ["a_b"]
    assert found("\\d") == ["c:\\dir"]
    assert found("'b") == ["O'Brien"]
    assert found('"hi"') == ['say "hi"']
    assert found("%' OR '1'='1") == []
    assert found("/") == []  # the LIKE escape character itself is literal too


def test_hostile_owner_and_ids_are_exact(repository: SqlChatMemoryRepository) -> None:
    owner = f"%_{uuid.uuid4()}\\"
    mine = scoped_conversation_id(owner, "c'1")
    similar = scoped_conversation_id(owner.replace("%", "x"), "c'1")
    spaced = mine + " "
    for conversation_id in (mine, similar, spaced):
        repository.append(conversation_id, [UserMessage(conversation_id)])
    page = repository.list_conversations(owner=owner)
    assert page.conversation_ids == sorted([mine, spaced])  # same owner; not the lookalike
    for conversation_id in (mine, similar, spaced):  # trailing space is significant
        texts = [m.text for m in repository.find_by_conversation_id(conversation_id)]  # type: ignore[union-attr]
        assert texts == [conversation_id]
    for conversation_id in (mine, similar, spaced):
        repository.delete_by_conversation_id(conversation_id)


def test_reappended_system_message_keeps_the_newest_current(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    first = SystemMessage("first")
    repository.append(cid, [first, UserMessage("u")])
    repository.append(cid, [SystemMessage("second")])
    assert repository.append(cid, [first]) == []
    system = repository.find_system_message(cid)
    assert system is not None
    assert system.message.text == "second"  # type: ignore[union-attr]


# -- lock scope --------------------------------------------------------------------------------

# The writes of one conversation, each paused inside its transaction right after it deleted
# that conversation's messages: the point where it holds the most locks.
HOLDERS = ["delete_before", "delete", "save_all", "revive", "purge"]


def _hold(repository: SqlChatMemoryRepository, name: str, cid: str) -> None:
    if name == "delete_before":
        repository.delete_before(cid, 10**9)  # past the last message: every one goes
    elif name == "delete":
        repository.delete_by_conversation_id(cid)
    elif name == "save_all":
        repository.save_all(cid, [UserMessage("again")])
    elif name == "revive":
        # A batch too big for MySQL's one-packet append, whose transaction cannot be paused
        # from the client: the statement-by-statement path holds its locks between round
        # trips, and its revival deletes as the one-packet path does.
        repository.append(cid, [UserMessage(f"again {i}") for i in range(SCRIPT_LIMIT + 1)])
    else:
        repository.purge_expired()


@pytest.mark.parametrize("holder", HOLDERS)
def test_a_write_holds_no_lock_the_next_conversation_waits_for(url: str, holder: str) -> None:
    # InnoDB locks what a statement scans, gaps included: a range on the messages that ends
    # past a conversation's last row next-key locks the next conversation's first row, and
    # a scan of the expiry index locks live conversations. Writers of two conversations then
    # wait for each other, which is how deadlocks start.
    if url.startswith("sqlite"):
        pytest.skip("SQLite has one writer at a time by design")
    base = f"lock-{uuid.uuid4()}"
    first, second = f"{base}-a", f"{base}-b"  # adjacent in every index on the id
    expiring = holder in ("revive", "purge")
    clock = ManualClock()  # the holder's own time: it steps past the TTL without sleeping
    options: dict[str, Any] = {"table_prefix": PREFIX, "initialize_schema": "always"}
    paused, resume = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def pause(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith(f"DELETE FROM {PREFIX}messages") and first in str(parameters):
            paused.set()
            resume.wait(10)

    def run_holder() -> None:
        try:
            _hold(holding, holder, first)
        except BaseException as exc:
            failures.append(exc)
            paused.set()

    with (
        SqlChatMemoryRepository.from_url(
            url, ttl=1 if expiring else None, clock=clock, **options
        ) as holding,
        SqlChatMemoryRepository.from_url(url, **options) as other,
    ):
        holding.append(first, [UserMessage(f"a{i}") for i in range(3)])
        if expiring:
            clock.advance(1.5)
        other.append(second, [UserMessage(f"b{i}") for i in range(3)])
        event.listen(holding._engine, "after_cursor_execute", pause)
        if holding._engine.dialect.driver == "pymysql":
            # A transaction of compiled statements runs on PyMySQL's cursors, past
            # SQLAlchemy's events: its connections pause in their cursors instead.
            import pymysql.cursors

            class Pausing(pymysql.cursors.Cursor):
                def execute(self, query: Any, args: Any = None) -> Any:
                    result = super().execute(query, args)
                    text = query.decode() if isinstance(query, bytes | bytearray) else str(query)
                    pause(None, self, text, args)
                    return result

            def pausing(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.cursorclass = Pausing

            event.listen(holding._engine, "connect", pausing)
            holding._engine.dispose()
        thread = threading.Thread(target=run_holder)
        thread.start()
        try:
            assert paused.wait(10), "the holder never deleted messages"
            assert not failures
            started = time.monotonic()
            other.append(second, [UserMessage("b3")])
            last = other.find_recent(second, 1)[0].position
            assert other.delete_before(second, last) == 3
            other.delete_by_conversation_id(second)
            waited = time.monotonic() - started
        finally:
            resume.set()
            thread.join()
        assert not failures
        assert waited < 3, f"the writes of {second} waited {waited:.1f} s for {first}'s locks"


def _statement_waits(url: str, thread_id: int) -> bool:
    """Whether MariaDB connection ``thread_id`` has had a statement in flight for 100 ms.

    The test user may not read InnoDB's lock tables (that takes the PROCESS privilege), but
    it sees its own connections: an INSERT that stays in flight while another transaction
    holds the gap it goes into is waiting for that gap.
    """
    # The driver's own URL: chatmem's options (initialize_schema) mean nothing to PyMySQL.
    engine = create_engine(make_url(url).difference_update_query(["initialize_schema"]))
    try:
        with engine.connect() as connection:
            return bool(
                connection.execute(
                    text(
                        "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                        " WHERE ID = :id AND COMMAND = 'Query' AND TIME_MS >= 100"
                    ),
                    {"id": thread_id},
                ).scalar()
            )
    finally:
        engine.dispose()


class _Calls:
    """Runs calls in threads, keeping their failures and the retryable errors they met."""

    def __init__(self, failed: threading.Event) -> None:
        self.failed = failed
        self.retried: list[str] = []
        self.failures: list[BaseException] = []

    def record(self, context: Any) -> None:
        if is_retryable(context.sqlalchemy_exception or context.original_exception):
            self.retried.append(str(context.original_exception))

    def run(self, call: Any) -> None:
        try:
            call()
        except BaseException as exc:
            self.failures.append(exc)
            self.failed.set()  # a waiting test goes on at once


def _ends_or_waits(url: str, thread: threading.Thread, dbapi_connection: Any) -> bool:
    """Wait until ``thread`` ends or its INSERT waits in MariaDB; return whether it waited."""
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        if url.startswith("mysql") and _statement_waits(url, dbapi_connection.thread_id()):
            return True
        thread.join(0.01)
    assert not thread.is_alive(), "the second save_all neither ended nor waited"
    return False


def test_save_all_of_a_new_conversation_next_to_a_save_all_in_flight(url: str) -> None:
    # On InnoDB, deleting a conversation's messages locks the gap after them; deleting the
    # messages of a conversation that has none locks the same gap when it sorts next. Two
    # save_all calls that each hold that gap and then insert into it deadlock, so a new
    # conversation's save_all deletes nothing.
    #
    # The interleaving is forced: the first save_all stops inside its transaction, right
    # after its DELETE, until the second has sent its INSERT and has either ended or waits
    # in the server (for the gap, on InnoDB). Only then does the first go on. A second
    # save_all that took the gap too would now deadlock with the first, which the
    # repository would retry.
    if url.startswith("sqlite"):
        pytest.skip("SQLite has one writer at a time by design")
    base = f"gap-{uuid.uuid4()}"
    first, new, last = f"{base}-a", f"{base}-am", f"{base}-b"  # new sorts between the two
    options: dict[str, Any] = {"table_prefix": PREFIX, "initialize_schema": "always"}
    paused, resume, inserting = threading.Event(), threading.Event(), threading.Event()
    inserting_connection: list[Any] = []

    def pause(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith(f"DELETE FROM {PREFIX}messages") and first in str(parameters):
            paused.set()
            resume.wait(30)

    def note_insert(_c: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith(f"INSERT INTO {PREFIX}messages"):
            inserting_connection.append(cursor.connection)
            inserting.set()

    calls = _Calls(paused)
    retried, failures, run = calls.retried, calls.failures, calls.run

    with (
        SqlChatMemoryRepository.from_url(url, **options) as holding,
        SqlChatMemoryRepository.from_url(url, **options) as other,
    ):
        holding.append(first, [UserMessage("a")])
        holding.append(last, [UserMessage("b")])
        for repository in (holding, other):
            event.listen(repository._engine, "handle_error", calls.record)
        event.listen(holding._engine, "after_cursor_execute", pause)
        event.listen(other._engine, "before_cursor_execute", note_insert)
        saves = [
            threading.Thread(
                target=run, args=(lambda: holding.save_all(first, [UserMessage("A")]),)
            ),
            threading.Thread(target=run, args=(lambda: other.save_all(new, [UserMessage("M")]),)),
        ]
        saves[0].start()
        try:
            assert paused.wait(30), "save_all never deleted messages"
            assert not failures
            saves[1].start()
            # The race: every statement of the second save_all before its INSERT (a DELETE
            # that would lock the gap, were there one) has run inside the first's transaction.
            assert inserting.wait(30), "the second save_all never inserted its messages"
            waited = _ends_or_waits(url, saves[1], inserting_connection[0])
            assert saves[0].is_alive()  # the first still holds its transaction
        finally:
            resume.set()
            for thread in saves:
                if thread.ident is not None:
                    thread.join()
        # InnoDB makes the new conversation's INSERT wait for the gap the first DELETE locked;
        # PostgreSQL has no gap locks, so there the second save_all ended inside the window.
        assert waited == url.startswith("mysql")
        assert not failures
        assert retried == []
        assert [m.text for m in other.find_by_conversation_id(new)] == ["M"]  # type: ignore[attr-defined]
        assert [m.text for m in other.find_by_conversation_id(first)] == ["A"]  # type: ignore[attr-defined]
        for cid in (first, new, last):
            other.delete_by_conversation_id(cid)


# -- statements per call ------------------------------------------------------------------------


def count_statements(repository: Any) -> list[str]:
    """Record the first word of every statement the repository's connections send.

    On PostgreSQL, SQLite and MySQL/MariaDB the turn's read (and PostgreSQL's append) go to
    the driver without SQLAlchemy's execution (and its events): new connections record what
    they run (a psycopg or PyMySQL cursor class; sqlite3's trace callback).
    """
    statements: list[str] = []
    engine = repository._engine
    target = getattr(engine, "sync_engine", engine)

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        # MySQL's read is a UNION of parenthesized SELECTs: "(SELECT".
        statements.append(statement.split(None, 1)[0].upper().lstrip("("))

    if target.dialect.name == "sqlite":
        # sqlite3 reports every statement it runs, whoever sent it; its implicit BEGIN and
        # the COMMIT are not statements of the plan.
        def traced(sql: str) -> None:
            word = sql.split(None, 1)[0].upper()
            if word not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA"):
                statements.append(word)

        def tracing(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.set_trace_callback(traced)

        event.listen(target, "connect", tracing)
        target.dispose()
        return statements
    if target.dialect.name in ("mysql", "mariadb") and target.dialect.driver == "pymysql":
        # The reads go to the driver too; every statement, whoever sends it, goes through a
        # cursor's execute (an executemany of an INSERT is one execute of all the rows).
        import pymysql.cursors

        class RecordingMysql(pymysql.cursors.Cursor):
            def execute(self, query: Any, args: Any = None) -> Any:
                # An executemany's multi-row INSERT comes as bytes.
                text = query.decode() if isinstance(query, bytes | bytearray) else str(query)
                statements.append(text.split(None, 1)[0].upper().lstrip("("))
                return super().execute(query, args)

        def recording_mysql(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.cursorclass = RecordingMysql

        event.listen(target, "connect", recording_mysql)
        target.dispose()
        return statements
    if target.dialect.name != "postgresql":
        event.listen(target, "before_cursor_execute", record)
        return statements
    import psycopg

    class Recording(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            statements.append(str(query).split(None, 1)[0].upper())
            return super().execute(query, params, **kwargs)

    def recording(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.cursor_factory = Recording

    event.listen(target, "connect", recording)
    target.dispose()  # every connection from now on records
    return statements


def test_statements_per_turn(repository: SqlChatMemoryRepository, cid: str) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=20)
    memory.add(cid, SystemMessage("be brief"))
    for i in range(30):
        memory.add(cid, [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")])
    statements = count_statements(repository)
    memory.get(cid)
    read = list(statements)
    statements.clear()
    memory.add(cid, UserMessage("next"))
    append = list(statements)
    print(f"\n{repository._backend}: memory read {read}; append {append}")
    assert read == ["SELECT"]  # system message and window together, nothing else
    expected = {
        "postgresql": ["WITH"],  # reservation + insert in one statement, autocommit
        "sqlite": ["INSERT", "INSERT"],  # upsert ... RETURNING, insert ... RETURNING
        "mysql": ["INSERT"],  # one statement list, from the upsert to the COMMIT
    }
    assert append == expected[repository._backend]


def record_mysql_round_trips(engine: Any) -> list[str]:
    """Record each request a MySQL/MariaDB connection of ``engine`` sends (one round trip each).

    PyMySQL and aiomysql send every statement, statement list, COMMIT and ROLLBACK through
    their connection's ``_execute_command``; each gets one answer. New connections record
    their requests' first words (``"SELECT+ROLLBACK"`` for a statement list).
    """
    requests: list[str] = []
    target = getattr(engine, "sync_engine", engine)

    def words(sql: Any) -> str:
        text = sql.decode() if isinstance(sql, bytes | bytearray) else str(sql)
        return "+".join(part.split(None, 1)[0].upper().lstrip("(") for part in text.split(";"))

    def recording(_dbapi_connection: Any, record: Any) -> None:
        driver = record.driver_connection
        send = driver._execute_command
        if asyncio.iscoroutinefunction(send):

            async def async_recorded(command: int, sql: Any) -> Any:
                requests.append(words(sql))
                return await send(command, sql)

            driver._execute_command = async_recorded
        else:

            def recorded(command: int, sql: Any) -> Any:
                requests.append(words(sql))
                return send(command, sql)

            driver._execute_command = recorded

    event.listen(target, "connect", recording)
    return requests  # for the connections opened from now on (dispose the engine first)


def test_a_mariadb_turn_reads_in_one_round_trip(cid: str) -> None:
    # The read sends its ROLLBACK in the same packet (the engine allows statement lists);
    # without it the next read on that connection would keep an old InnoDB snapshot.
    with SqlChatMemoryRepository.from_url(
        server_url("mariadb"), table_prefix=PREFIX, initialize_schema="always"
    ) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=4)
        memory.add(cid, [UserMessage("q0"), AssistantMessage("a0")])
        requests = record_mysql_round_trips(repository._engine)
        repository._engine.dispose()
        assert [m.text for m in memory.get(cid)] == ["q0", "a0"]
        read = list(requests)
        requests.clear()
        memory.add(cid, [UserMessage("q1"), AssistantMessage("a1")])
        append = list(requests)
        requests.clear()
        assert [m.text for m in memory.get(cid)] == ["q0", "a0", "q1", "a1"]
        assert read == ["SELECT+ROLLBACK"], read
        # One packet: the upsert, the reservation kept in the session, the revival's delete
        # (reads nothing unless revived), INSERT IGNORE, the positions filled, the COMMIT.
        assert append == ["INSERT+SET+DELETE+INSERT+SELECT+COMMIT"], append
        assert requests == ["SELECT+ROLLBACK"], requests  # the fresh read saw the append


def test_a_statement_the_server_refuses_stops_a_mariadb_append_before_its_commit(cid: str) -> None:
    # The one-packet append's INSERT waits for a gap lock past the session's lock timeout:
    # the server stops the list there, before its COMMIT. The error is a timeout whose
    # outcome is known (nothing stored), and the positions it had reserved go to the next
    # append: its reservation was rolled back with it.
    url = server_url("mariadb")
    with SqlChatMemoryRepository.from_url(
        url, table_prefix=PREFIX, initialize_schema="always"
    ) as repository:
        repository.append(cid, [UserMessage("q0")])

        def short_lock_waits(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
            cursor.close()

        event.listen(repository._engine, "connect", short_lock_waits)
        repository._engine.dispose()
        holder = create_engine(url)
        try:
            with holder.connect() as holding:
                holding.execute(
                    text(
                        f"SELECT position FROM {PREFIX}messages"
                        " WHERE conversation_id = :cid AND position = 2 FOR UPDATE"
                    ),
                    {"cid": cid},
                )
                with pytest.raises(RepositoryTimeoutError) as caught:
                    repository.append(cid, [UserMessage("refused")])
                assert not isinstance(caught.value, RepositoryOutcomeUnknownError)
                holding.rollback()
        finally:
            holder.dispose()
        assert [s.position for s in repository.append(cid, [UserMessage("q1")])] == [2]
        assert [m.text for m in repository.find_by_conversation_id(cid)] == ["q0", "q1"]


async def test_cancelled_async_appends_store_whole_batches_and_free_their_connections(
    url: str, cid: str
) -> None:
    # Appends cancelled at every stage (waiting for a connection, mid-statement, during the
    # commit): each batch is stored whole or not at all, and every connection comes back,
    # so more appends than the pool holds still go through afterwards.
    async with AsyncSqlChatMemoryRepository.from_url(
        f"{url}{'&' if '?' in url else '?'}pool_size=2",
        table_prefix=PREFIX,
        initialize_schema="always",
    ) as repository:
        await repository.append(cid, [UserMessage("first")])  # the tables exist from here
        batches = []
        for n in range(40):
            batch: list[Message] = [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")]
            batches.append(batch)
            task = asyncio.create_task(repository.append(cid, batch))
            await asyncio.sleep(0.0002 * (n % 8))
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if url.startswith("sqlite:///"):
            # No cancelled append kept SQLite's write lock: a writer that never waits gets it.
            probe = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            finally:
                probe.close()
        for n in range(6):
            await repository.append(cid, [UserMessage(f"after {n}")])
        stored = {stored.message.id for stored in await repository.find_recent(cid, 1000)}
        for batch in batches:
            kept = [message.id in stored for message in batch]
            assert kept in ([True, True], [False, False]), kept
        assert {f"after {n}" for n in range(6)} <= {
            stored.message.text for stored in await repository.find_recent(cid, 6)
        }


async def test_a_first_call_cancelled_while_connecting_raises_cancelled_error(
    url: str, cid: str
) -> None:
    # The first call of a repository connects (the dialect reads the server's settings) and
    # creates the tables. SQLAlchemy's asyncio layer can turn a cancellation that lands there
    # into another error (a closed connection, NotImplementedError); the caller, and
    # asyncio.timeout, must see CancelledError, and the repository must work afterwards.
    for n in range(12):
        async with AsyncSqlChatMemoryRepository.from_url(
            url, table_prefix=PREFIX, initialize_schema="always"
        ) as repository:
            task = asyncio.create_task(repository.append(cid, [UserMessage(f"cancelled {n}")]))
            await asyncio.sleep(0.002 * n)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            stored = await repository.append(cid, [UserMessage(f"after {n}")])
            assert [s.message.text for s in stored] == [f"after {n}"]


async def test_an_async_mariadb_turn_reads_in_one_round_trip(cid: str) -> None:
    async with AsyncSqlChatMemoryRepository.from_url(
        server_url("mariadb"), table_prefix=PREFIX, initialize_schema="always"
    ) as repository:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=4)
        await memory.add(cid, [UserMessage("q0"), AssistantMessage("a0")])
        requests = record_mysql_round_trips(repository._engine)
        await repository._engine.dispose()
        assert [m.text for m in await memory.get(cid)] == ["q0", "a0"]
        read = list(requests)
        requests.clear()
        await memory.add(cid, [UserMessage("q1"), AssistantMessage("a1")])
        append = list(requests)
        assert [m.text for m in await memory.get(cid)] == ["q0", "a0", "q1", "a1"]
        assert read == ["SELECT+ROLLBACK"], read
        assert append == ["INSERT+SET+DELETE+INSERT+SELECT+COMMIT"], append


def test_a_mariadb_engine_handed_in_reads_without_statement_lists(cid: str) -> None:
    # An engine the application made is used as it is: no statement lists, so the read
    # ends its transaction with a ROLLBACK of its own.
    engine = create_engine(server_url("mariadb"))
    try:
        repository = SqlChatMemoryRepository(
            engine, table_prefix=PREFIX, initialize_schema="always"
        )
        repository.append(cid, [UserMessage("q0")])
        requests = record_mysql_round_trips(engine)
        engine.dispose()
        assert [m.text for m in MessageWindowChatMemory(repository).get(cid)] == ["q0"]
        # (The application's pool then resets the connection with a ROLLBACK of its own.)
        assert requests[:2] == ["SELECT", "ROLLBACK"], requests
        assert not [request for request in requests if "+" in request], requests
    finally:
        engine.dispose()


def test_a_batch_of_stored_and_new_ids_stores_only_the_new_ones(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    # The append's skip-stored-ids paths: ON CONFLICT DO NOTHING (executemany) on SQLite,
    # the one statement on PostgreSQL, INSERT IGNORE on MySQL/MariaDB; and the repair of
    # the system reference when the batch's system message was stored already.
    a, b, c = UserMessage("a"), AssistantMessage("b"), UserMessage("c")
    system = SystemMessage("rules")
    repository.append(cid, [a, b])
    stored = repository.append(cid, [b, system, a, c])
    assert [item.message.id for item in stored] == [system.id, c.id]
    positions = [int(item.position) for item in stored]
    assert positions == sorted(positions)
    assert [item.message.text for item in repository.find_recent(cid, 10)] == ["a", "b", "c"]
    assert repository.append(cid, [system, a]) == []
    current = repository.find_system_message(cid)
    assert current is not None
    assert current.message.id == system.id
    later = repository.append(cid, [UserMessage("d")])
    assert int(later[0].position) > max(positions)


def test_statements_of_a_checked_append(repository: SqlChatMemoryRepository, cid: str) -> None:
    # The version check rides on the reservation: no statement of its own when it passes,
    # and a refused append stops right after the reservation (its transaction rolls back).
    repository.append(cid, [UserMessage("q0")])
    version = repository.find_version(cid)
    statements = count_statements(repository)
    repository.append(cid, [AssistantMessage("a0")], expected_version=version)
    checked = list(statements)
    statements.clear()
    with pytest.raises(VersionConflictError):
        repository.append(cid, [UserMessage("late")], expected_version=version)
    refused = list(statements)
    print(f"\n{repository._backend}: checked append {checked}; refused {refused}")
    accepted = {
        "postgresql": ["WITH"],  # the guarded one-statement append
        "sqlite": ["INSERT", "INSERT"],  # upsert, insert: as unchecked
        "mysql": ["INSERT", "SET"],  # the upsert, then one statement list to the COMMIT
    }
    assert checked == accepted[repository._backend]
    assert refused == {"postgresql": ["WITH", "INSERT"]}.get(repository._backend, ["INSERT"])
    assert [m.text for m in repository.find_by_conversation_id(cid)] == ["q0", "a0"]  # type: ignore[union-attr]


@pytest.mark.parametrize("size", [1, SCRIPT_LIMIT + 1, 501])
@pytest.mark.parametrize("with_system", [False, True])
def test_checked_appends_of_every_size(
    repository: SqlChatMemoryRepository, cid: str, size: int, with_system: bool
) -> None:
    # Each size takes another path on some dialect: MySQL's statement list, its statements
    # one by one, and the chunked path of every dialect for more than 500 messages.
    def batch(tag: str) -> list[Message]:
        messages: list[Message] = [UserMessage(f"{tag}{i}") for i in range(size)]
        if with_system:
            messages[size // 2] = SystemMessage(f"{tag} rules")
        return messages

    first = batch("a")
    repository.append(cid, first, expected_version=0)
    version = repository.find_version(cid)
    assert version == size
    with pytest.raises(VersionConflictError) as raised:
        repository.append(cid, batch("b"), expected_version=version - 1)
    assert raised.value.actual_version == version
    assert repository.find_version(cid) == version
    assert repository.count_messages(cid) == size
    assert repository.append(cid, first, expected_version=version) == []  # all stored
    assert repository.find_version(cid) == version
    second = batch("c")
    assert len(repository.append(cid, second, expected_version=version)) == size
    assert repository.find_version(cid) == 2 * size
    assert repository.find_by_conversation_id(cid) == [*first, *second]
    if with_system:
        system = repository.find_system_message(cid)
        assert system is not None
        assert system.message.text == "c rules"  # type: ignore[union-attr]


def test_a_refused_append_leaves_the_expiry_and_an_expired_conversation_is_at_0(
    url: str, cid: str
) -> None:
    clock = ManualClock()
    with SqlChatMemoryRepository.from_url(
        url, table_prefix=PREFIX, initialize_schema="always", ttl=60, clock=clock
    ) as repository:
        repository.append(cid, [UserMessage("a")])
        clock.advance(50)
        with pytest.raises(VersionConflictError):
            repository.append(cid, [UserMessage("refused")], expected_version=0)
        clock.advance(11)  # past the expiry the refused append would have moved
        assert repository.find_version(cid) == 0
        assert repository.find_recent(cid, 10) == []
        with pytest.raises(VersionConflictError) as raised:
            repository.append(cid, [UserMessage("stale")], expected_version=1)
        assert raised.value.actual_version == 0
        event = EventMessage("acme.audit", {"n": 1})
        stored = repository.append(cid, [event, UserMessage("b")], expected_version=0)
        assert [s.message for s in repository.find_history(cid)] == [s.message for s in stored]
        assert repository.find_version(cid) == int(stored[-1].position)
        repository.delete_by_conversation_id(cid)


def test_events_stay_out_of_the_system_reference(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    # A system message whose id is stored already sends the reference to the newest system
    # message by type: events share its is_system flag, never its role.
    system = SystemMessage("rules")
    repository.append(cid, [system, UserMessage("q")])
    repository.append(cid, [system, EventMessage("acme.audit", {}), AssistantMessage("a")])
    current = repository.find_system_message(cid)
    assert current is not None
    assert current.message == system
    assert repository.delete_between(cid, None, 10**6) == 2
    assert [m.type for m in repository.find_by_conversation_id(cid)] == ["system", "event"]


def test_an_append_to_an_expired_conversation_starts_a_new_life(url: str, cid: str) -> None:
    # The reservation tells a revival apart (MySQL/MariaDB: the low bit of LAST_INSERT_ID):
    # the old messages go, and ids of the old life are stored again.
    clock = ManualClock()
    with SqlChatMemoryRepository.from_url(
        url, table_prefix=PREFIX, initialize_schema="always", ttl=60, clock=clock
    ) as repository:
        a, b = UserMessage("a"), AssistantMessage("b")
        repository.append(cid, [a, b])
        clock.advance(61)
        assert repository.find_recent(cid, 10) == []
        stored = repository.append(cid, [b, UserMessage("c")])
        assert [item.message.text for item in stored] == ["b", "c"]
        assert [item.message.text for item in repository.find_recent(cid, 10)] == ["b", "c"]
        again = repository.append(cid, [UserMessage("d")])
        assert [item.message.text for item in repository.find_recent(cid, 10)] == ["b", "c", "d"]
        assert int(again[0].position) > int(stored[-1].position)
        repository.delete_by_conversation_id(cid)


def test_window_read_uses_the_index_on_sqlite(tmp_path: Path) -> None:
    with SqlChatMemoryRepository.from_url(f"sqlite:///{tmp_path}/x.db") as repository:
        repository.append("c", [UserMessage("x")])
        statement = repository._plan.reads.window("c", 20, None, datetime.now(UTC))
        compiled = statement.compile(repository._engine, compile_kwargs={"literal_binds": True})
        with repository._engine.connect() as connection:
            plan = " ".join(
                str(row[-1]) for row in connection.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
            )
        assert "chatmem_messages_window" in plan
        assert "TEMP B-TREE" not in plan  # no sort: the index gives the order


async def test_async_create_repository_maps_sqlite_to_aiosqlite(tmp_path: Path) -> None:
    repository = create_async_repository(f"sqlite:///{tmp_path}/x.db")
    try:
        assert isinstance(repository, AsyncSqlChatMemoryRepository)
        assert repository._engine.url.drivername == "sqlite+aiosqlite"
        await repository.append("c", [UserMessage("hi")])
        assert len(await repository.find_recent("c", 5)) == 1
    finally:
        await repository.aclose()


def test_generic_reservation_path_used_by_sql_server_and_oracle(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    # SQL Server and Oracle take the portable plan (UPDATE, else INSERT in a savepoint, then
    # a locked SELECT; ids checked before inserting). Run it here on real databases.
    repository._plan = Plan(repository._tables, repository._engine.dialect, repository._runner)
    first = SystemMessage("first")
    stored = repository.append(cid, [first, UserMessage("u0")])
    assert [s.position for s in stored] == [1, 2]
    assert repository.append(cid, [first, UserMessage("u1")])[0].message.text == "u1"  # type: ignore[union-attr]
    system = repository.find_system_message(cid)
    assert system is not None
    assert system.message.text == "first"  # type: ignore[union-attr]

    fresh = f"{cid}-new"

    def writer(w: int) -> None:
        for i in range(20):
            repository.append(fresh, [UserMessage(f"{w}:{i}")])

    from chatmem.backend import run_all

    run_all([lambda w=w: writer(w) for w in range(8)])  # type: ignore[misc]
    texts = [m.text for m in repository.find_by_conversation_id(fresh)]  # type: ignore[union-attr]
    assert sorted(texts) == sorted(f"{w}:{i}" for w in range(8) for i in range(20))


def test_checked_appends_on_the_generic_reservation_path(
    repository: SqlChatMemoryRepository, cid: str
) -> None:
    # The portable plan checks the version after its locked SELECT of the counter.
    repository._plan = Plan(repository._tables, repository._engine.dialect, repository._runner)
    first = UserMessage("u0")
    repository.append(cid, [first], expected_version=0)
    version = repository.find_version(cid)
    with pytest.raises(VersionConflictError):
        repository.append(cid, [UserMessage("late")], expected_version=version - 1)
    assert repository.append(cid, [first], expected_version=version) == []  # all stored
    assert repository.find_version(cid) == version
    repository.append(cid, [EventMessage("acme.audit", {}), UserMessage("u1")], expected_version=1)
    assert repository.find_version(cid) == 3
    assert repository.delete_between(cid, 1, 3) == 1
    assert [m.type for m in repository.find_by_conversation_id(cid)] == ["user", "event"]


def _prepared_plans(engine: Any) -> tuple[str, dict[str, tuple[int, int]]]:
    """The connection's plan_cache_mode, and generic/custom plan counts by statement start."""
    with engine.connect() as connection:
        mode = connection.execute(text("SHOW plan_cache_mode")).scalar_one()
        rows = connection.execute(
            text("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        ).all()
    return mode, {statement[:40]: (generic, custom) for statement, generic, custom in rows}


def test_a_postgresql_turn_reuses_one_plan_per_statement(cid: str) -> None:
    # PostgreSQL keeps a prepared statement's generic plan only if it is estimated to cost no
    # more than planning with each call's values; for a conversation smaller than the
    # table's average it was not, and the window read was planned on every call. The
    # repository's own connections keep one plan for every statement.
    repository = SqlChatMemoryRepository.from_url(
        server_url("postgresql"), table_prefix=PREFIX, initialize_schema="always"
    )
    try:
        memory = MessageWindowChatMemory(repository, max_messages=5)
        memory.add(cid, [SystemMessage("be brief")])
        for turn in range(8):  # one after another: the pool keeps one connection
            memory.get(cid)
            memory.add(cid, [UserMessage(f"q{turn}"), AssistantMessage(f"a{turn}")])
        window = memory.get(cid)
        assert [message.text for message in window] == ["be brief", "q6", "a6", "q7", "a7"]
        mode, plans = _prepared_plans(repository._engine)
        assert mode == "force_generic_plan"
        reads = [counts for statement, counts in plans.items() if statement.startswith("SELECT")]
        assert reads, plans  # the window read, prepared by psycopg after five runs
        assert all(generic >= 1 for generic, _ in reads), plans
        assert all(custom == 0 for _, custom in reads), plans
    finally:
        repository.close()


def test_a_postgresql_engine_handed_in_keeps_its_planner_settings() -> None:
    engine = create_engine(server_url("postgresql"))
    try:
        repository = SqlChatMemoryRepository(
            engine, table_prefix=PREFIX, initialize_schema="always"
        )
        repository.find_conversation_ids()
        assert _prepared_plans(engine)[0] == "auto"
    finally:
        engine.dispose()
