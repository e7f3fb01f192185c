"""Schema creation under concurrent first use: every first append succeeds, on every backend.

Several repository objects on brand-new storage (an SQLite file, or a fresh table prefix,
keyspace, label prefix or collection prefix on a shared server) make their first append at
the same moment, released together by a barrier, so their schema creations race. Every
append must succeed and every message be stored, and the schema must be whole afterwards:
appending the same message again stores it once (the unique index that makes appends
idempotent is there).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine, inspect

from chatmem import RepositoryConnectionError, RepositoryError, UserMessage
from chatmem_repositories import create_async_repository, create_repository
from tests.support.servers import server_url

RACERS = 4
"""Repository objects racing to create one schema (each with its own connections)."""


def _race(calls: Sequence[Callable[[], object]]) -> None:
    """Run the calls on threads released together by a barrier; fail with what they raised."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def run(call: Callable[[], object]) -> None:
        barrier.wait()
        try:
            call()
        except BaseException as exc:  # every racer's failure is reported, not only the first
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def first_appends_race(repositories: Sequence[Any]) -> None:
    """Each repository's first call is an append, all at once; every message is stored."""
    cids = [f"race-{uuid.uuid4().hex}" for _ in repositories]
    messages = [UserMessage(f"turn {i}") for i in range(len(repositories))]
    _race(
        [
            partial(repository.append, cid, [message])
            for repository, cid, message in zip(repositories, cids, messages, strict=True)
        ]
    )
    reader = repositories[0]
    for cid, message in zip(cids, messages, strict=True):
        reader.append(cid, [message])  # the same id again: stored once
        assert [m.text for m in reader.find_by_conversation_id(cid)] == [message.text]


async def async_first_appends_race(repositories: Sequence[Any]) -> None:
    """The async twin of :func:`first_appends_race`: tasks released by one barrier."""
    cids = [f"race-{uuid.uuid4().hex}" for _ in repositories]
    messages = [UserMessage(f"turn {i}") for i in range(len(repositories))]
    barrier = asyncio.Barrier(len(repositories))

    async def first_append(repository: Any, cid: str, message: UserMessage) -> None:
        await barrier.wait()
        await repository.append(cid, [message])

    results = await asyncio.gather(
        *map(first_append, repositories, cids, messages), return_exceptions=True
    )
    assert [r for r in results if r is not None] == []
    reader = repositories[0]
    for cid, message in zip(cids, messages, strict=True):
        await reader.append(cid, [message])
        assert [m.text for m in await reader.find_by_conversation_id(cid)] == [message.text]


# -- SQL: SQLite, PostgreSQL, MariaDB -----------------------------------------------------------

# The modes that create tables on first use: "embedded" on SQLite only, "always" anywhere.
SQL_CASES = [
    pytest.param(("sqlite", "embedded"), id="sqlite-embedded"),
    pytest.param(("sqlite", "always"), id="sqlite-always"),
    pytest.param(
        ("postgresql", "always"), id="postgresql", marks=pytest.mark.backend("postgresql")
    ),
    pytest.param(("mariadb", "always"), id="mariadb", marks=pytest.mark.backend("mariadb")),
]


@pytest.fixture
def sql_target(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A new SQLite file, or a table prefix new to the server (its tables dropped after)."""
    backend, mode = request.param
    prefix = f"race{uuid.uuid4().hex[:12]}_"
    options: dict[str, Any] = {"table_prefix": prefix, "initialize_schema": mode}
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'new.db'}", options
        return
    url = server_url(backend)
    try:
        yield url, options
    finally:
        engine = create_engine(url)
        try:
            with engine.begin() as connection:
                quote = connection.dialect.identifier_preparer.quote
                for name in inspect(connection).get_table_names():
                    if name.startswith(prefix):
                        connection.exec_driver_sql(f"DROP TABLE {quote(name)}")
        finally:
            engine.dispose()


@pytest.mark.parametrize("sql_target", SQL_CASES, indirect=True)
def test_sql_first_appends_racing_to_create_the_tables_all_succeed(
    sql_target: tuple[str, dict[str, Any]],
) -> None:
    url, options = sql_target
    with ExitStack() as stack:
        repositories = [
            stack.enter_context(create_repository(url, **options)) for _ in range(RACERS)
        ]
        first_appends_race(repositories)


@pytest.mark.parametrize("sql_target", SQL_CASES, indirect=True)
async def test_async_sql_first_appends_racing_to_create_the_tables_all_succeed(
    sql_target: tuple[str, dict[str, Any]],
) -> None:
    url, options = sql_target
    repositories = [create_async_repository(url, **options) for _ in range(RACERS)]
    try:
        await async_first_appends_race(repositories)
    finally:
        for repository in repositories:
            await repository.aclose()


def test_a_schema_sqlite_refuses_is_not_half_made_nor_called_a_connection_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "taken.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as database:
        # A name the schema needs is taken, by an index on another table.
        database.execute("CREATE TABLE other (x INTEGER)")
        database.execute("CREATE INDEX race_conversations_owner ON other (x)")
    with create_repository(f"sqlite:///{path}", table_prefix="race_") as repository:
        with pytest.raises(RepositoryError, match="already exists") as refused:
            repository.append("c", [UserMessage("lost")])
        assert not isinstance(refused.value, RepositoryConnectionError)
        with closing(sqlite3.connect(path, isolation_level=None)) as database:
            names = {row[0] for row in database.execute("SELECT name FROM sqlite_master")}
            # All or nothing: no table was left without its indexes.
            assert names == {"other", "race_conversations_owner"}
            database.execute("DROP INDEX race_conversations_owner")
        repository.append("c", [UserMessage("kept")])  # the next call creates the schema
        assert [m.text for m in repository.find_by_conversation_id("c")] == ["kept"]


# -- Cassandra: a new keyspace -----------------------------------------------------------------


@pytest.mark.backend("cassandra")
def test_cassandra_first_appends_racing_to_create_the_keyspace_all_succeed() -> None:
    from cassandra.cluster import Cluster

    from chatmem_repositories.cassandra import CassandraChatMemoryRepository

    url = urlsplit(server_url("cassandra"))
    keyspace = f"race_{uuid.uuid4().hex[:12]}"
    # Connected before the race (one cluster each, as separate processes would have), so the
    # barrier releases the keyspace and table creations themselves together.
    clusters = [Cluster([url.hostname], port=url.port or 9042) for _ in range(3)]
    try:
        sessions = [cluster.connect() for cluster in clusters]
        repositories = [
            CassandraChatMemoryRepository(session, keyspace=keyspace, create_keyspace=True)
            for session in sessions
        ]
        first_appends_race(repositories)
    finally:
        sessions[0].execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
        for cluster in clusters:
            cluster.shutdown()


# -- Neo4j: a new label prefix -----------------------------------------------------------------


@pytest.fixture
def neo4j_prefix() -> Iterator[str]:
    """A label prefix new to the server; its nodes, constraints and indexes dropped after."""
    from neo4j import GraphDatabase

    url = server_url("neo4j")
    prefix = f"Race{uuid.uuid4().hex[:12]}"
    yield prefix
    with GraphDatabase.driver(url) as driver:
        driver.execute_query(
            f"MATCH (n) WHERE n:{prefix}Conversation OR n:{prefix}Message DETACH DELETE n"
        )
        # Constraints first: each drops the index it owns.
        for kind, kinds in (("CONSTRAINT", "CONSTRAINTS"), ("INDEX", "INDEXES")):
            for record in driver.execute_query(f"SHOW {kinds} YIELD name").records:
                if record["name"].startswith(f"chatmem_{prefix}_"):
                    driver.execute_query(f"DROP {kind} {record['name']} IF EXISTS")


@pytest.mark.backend("neo4j")
def test_neo4j_first_appends_racing_to_create_the_constraints_all_succeed(
    neo4j_prefix: str,
) -> None:
    url = server_url("neo4j")
    with ExitStack() as stack:
        repositories = [
            stack.enter_context(create_repository(url, label_prefix=neo4j_prefix))
            for _ in range(RACERS)
        ]
        first_appends_race(repositories)


@pytest.mark.backend("neo4j")
async def test_async_neo4j_first_appends_racing_to_create_the_constraints_all_succeed(
    neo4j_prefix: str,
) -> None:
    url = server_url("neo4j")
    repositories = [create_async_repository(url, label_prefix=neo4j_prefix) for _ in range(RACERS)]
    try:
        await async_first_appends_race(repositories)
    finally:
        for repository in repositories:
            await repository.aclose()


# -- MongoDB (FerretDB): a new collection prefix -----------------------------------------------


@pytest.fixture
def mongodb_prefix() -> Iterator[str]:
    from pymongo import MongoClient

    url = server_url("mongodb")
    prefix = f"race{uuid.uuid4().hex[:12]}_"
    yield prefix
    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        database = client.get_default_database()
        for name in database.list_collection_names():
            if name.startswith(prefix):
                database.drop_collection(name)
    finally:
        client.close()


@pytest.mark.backend("mongodb")
@pytest.mark.parametrize("ttl", [None, 3600], ids=["no-ttl", "ttl"])
def test_mongodb_first_appends_racing_to_create_the_indexes_all_succeed(
    mongodb_prefix: str, ttl: int | None
) -> None:
    url = server_url("mongodb")
    with ExitStack() as stack:
        repositories = [
            stack.enter_context(create_repository(url, collection_prefix=mongodb_prefix, ttl=ttl))
            for _ in range(RACERS)
        ]
        first_appends_race(repositories)


@pytest.mark.backend("mongodb")
async def test_async_mongodb_first_appends_racing_to_create_the_indexes_all_succeed(
    mongodb_prefix: str,
) -> None:
    url = server_url("mongodb")
    repositories = [
        create_async_repository(url, collection_prefix=mongodb_prefix) for _ in range(RACERS)
    ]
    try:
        await async_first_appends_race(repositories)
    finally:
        for repository in repositories:
            await repository.aclose()
