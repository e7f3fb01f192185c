"""The SQL repository's URL rule, driver options, server version, db.system and clock."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from chatmem import SystemMessage, UserMessage
from chatmem.exceptions import ConfigurationError, RepositoryError
from chatmem.repository import AsyncServerInfo, ServerInfo
from chatmem.testing import ManualClock
from chatmem_repositories import create_repository
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository, SqlChatMemoryRepository
from tests.support.backends import SQL, backend_url
from tests.support.servers import server_url

# A clock far ahead purges whatever expires before it: tables of their own keep the purges
# of these tests away from conversations of tests running beside them.
PREFIX = "chatmem_clock_"


@pytest.fixture(params=SQL)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)


# -- the URL rule ------------------------------------------------------------------------------


def test_a_misspelt_option_in_a_sqlite_url_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"'tll'.*did you mean 'ttl'"):
        create_repository(f"sqlite:///{tmp_path}/x.db?tll=60")
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


def test_a_misspelt_option_in_a_postgresql_url_fails_at_construction() -> None:
    # Port 1: nothing listens, and nothing is contacted: the URL is refused first.
    with pytest.raises(ConfigurationError, match=r"'pool_sise'.*did you mean 'pool_size'"):
        SqlChatMemoryRepository.from_url("postgresql://u:pw@127.0.0.1:1/db?pool_sise=3")


@pytest.mark.parametrize(
    ("url", "name", "suggestion"),
    [
        ("postgresql://u@127.0.0.1:1/db?sslmdoe=require", "sslmdoe", "sslmode"),
        ("mysql://u@127.0.0.1:1/db?charst=utf8mb4", "charst", "charset"),
        ("mariadb://u@127.0.0.1:1/db?read_timout=3", "read_timout", "read_timeout"),
        ("sqlite:///x.db?check_same_thred=false", "check_same_thred", "check_same_thread"),
    ],
)
def test_a_misspelt_driver_parameter_is_an_error_with_a_suggestion(
    url: str, name: str, suggestion: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"'{name}'.*did you mean '{suggestion}'"):
        SqlChatMemoryRepository.from_url(url)


def test_an_unknown_parameter_points_to_driver_options() -> None:
    with pytest.raises(ConfigurationError, match=r"driver_options=") as caught:
        AsyncSqlChatMemoryRepository.from_url("postgresql://u:s3cret@127.0.0.1:1/db?zzz=1")
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("hosts", "host", "port"),
    [
        ("h1:5432,[::1]:5433", "h1,::1", "5432,5433"),
        ("[::1]:5433,h1,[fe80::2]", "::1,h1,fe80::2", "5433,,"),  # empty: libpq's default
        ("[::1],[::2]", "::1,::2", ","),
    ],
)
def test_a_postgresql_host_list_with_ipv6_hosts_reaches_libpq(
    hosts: str, host: str, port: str
) -> None:
    # Nothing is contacted: the engine connects on first use.
    url = f"postgresql+psycopg://u:pw@{hosts}/db?application_name=app"
    with SqlChatMemoryRepository.from_url(url) as repository:
        engine = repository._engine
        _, arguments = engine.dialect.create_connect_args(engine.url)
    assert (arguments["host"], arguments["port"]) == (host, port)
    assert (arguments["dbname"], arguments["application_name"]) == ("db", "app")


def test_documented_driver_parameters_reach_the_driver() -> None:
    url = server_url("postgresql")
    with SqlChatMemoryRepository.from_url(
        f"{url}?application_name=chatmem-url&sslmode=disable", initialize_schema="always"
    ) as repository:
        with repository._engine.connect() as connection:
            name = connection.execute(text("SHOW application_name")).scalar()
        assert name == "chatmem-url"


def test_driver_options_reach_the_driver_and_win_over_the_url() -> None:
    url = server_url("postgresql")
    with SqlChatMemoryRepository.from_url(
        f"{url}?application_name=from-url",
        driver_options={"application_name": "from-driver-options"},
    ) as repository:
        with repository._engine.connect() as connection:
            name = connection.execute(text("SHOW application_name")).scalar()
        assert name == "from-driver-options"


def test_a_driver_parameter_given_as_a_keyword_reaches_the_driver() -> None:
    with SqlChatMemoryRepository.from_url(
        server_url("postgresql"), application_name="chatmem-keyword"
    ) as repository:
        with repository._engine.connect() as connection:
            name = connection.execute(text("SHOW application_name")).scalar()
        assert name == "chatmem-keyword"


def test_driver_options_reach_sqlite(tmp_path: Path) -> None:
    made: list[sqlite3.Connection] = []

    class Recorded(sqlite3.Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    url = f"sqlite:///{tmp_path}/x.db"
    with SqlChatMemoryRepository.from_url(url, driver_options={"factory": Recorded}) as repository:
        repository.append("c", [UserMessage("hi")])
    assert made


def test_sqlite_uri_parameters_need_uri_true(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with create_repository(f"sqlite:///{path}") as repository:
        repository.append("c", [UserMessage("hi")])
    with pytest.raises(ConfigurationError, match=r"'mode'.*uri=true"):
        create_repository(f"sqlite:///file:{path}?mode=ro")
    with create_repository(f"sqlite:///file:{path}?mode=ro&uri=true") as repository:
        assert [m.text for m in repository.find_by_conversation_id("c")] == ["hi"]  # type: ignore[attr-defined]
        with pytest.raises(RepositoryError, match="readonly"):
            repository.append("c", [UserMessage("no")])


# -- server_version and db_system --------------------------------------------------------------


EXPECTED = {"sqlite": ("SQLite 3.", "sqlite"), "postgresql": ("PostgreSQL ", "postgresql")}
EXPECTED["mysql"] = ("MariaDB 10.", "mariadb")  # the test server is MariaDB, reached as mysql://


def test_server_version_and_db_system(url: str) -> None:
    with SqlChatMemoryRepository.from_url(url, initialize_schema="never") as repository:
        version = repository.server_version()
        product, system = EXPECTED[repository._backend]
        assert version.startswith(product), version
        assert repository.db_system == system
        assert isinstance(repository, ServerInfo)
        assert "\n" not in version
        assert " on " not in version  # PostgreSQL's platform part is dropped


async def test_server_version_async(url: str) -> None:
    repository = AsyncSqlChatMemoryRepository.from_url(url, initialize_schema="never")
    try:
        version = await repository.server_version()
        product, system = EXPECTED[repository._backend]
        assert version.startswith(product), version
        assert repository.db_system == system
        assert isinstance(repository, AsyncServerInfo)
    finally:
        await repository.aclose()


# -- the clock -----------------------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def timed(url: str, clock: ManualClock) -> Iterator[SqlChatMemoryRepository]:
    repository = SqlChatMemoryRepository.from_url(
        url, table_prefix=PREFIX, initialize_schema="always", ttl=60, clock=clock
    )
    try:
        yield repository
    finally:
        repository.close()


def test_expiry_follows_the_clock_not_the_wall(
    timed: SqlChatMemoryRepository, clock: ManualClock
) -> None:
    cid = f"clock-{uuid.uuid4()}"
    message = UserMessage("old")
    timed.append(cid, [SystemMessage("s"), message])
    clock.advance(59)
    assert [m.text for m in timed.find_by_conversation_id(cid)] == ["s", "old"]  # type: ignore[attr-defined]
    timed.append(cid, [UserMessage("refresh")])  # a write moves the expiry
    clock.advance(59)
    assert len(timed.find_recent(cid, 5)) == 2
    clock.advance(2)
    assert timed.find_by_conversation_id(cid) == []
    assert timed.find_window(cid, 5) == (None, [])
    # An append after expiry starts a new life: the same message id is stored again.
    assert len(timed.append(cid, [message])) == 1
    assert timed.find_by_conversation_id(cid) == [message]
    clock.advance(61)
    assert timed.delete_before(cid, 10**6) == 0
    assert timed.purge_expired() >= 1
    assert cid not in timed.find_conversation_ids()


async def test_async_expiry_follows_the_clock(url: str, clock: ManualClock) -> None:
    options: dict[str, Any] = {"table_prefix": PREFIX, "initialize_schema": "always"}
    repository = AsyncSqlChatMemoryRepository.from_url(url, ttl=60, clock=clock, **options)
    try:
        cid = f"clock-{uuid.uuid4()}"
        await repository.append(cid, [UserMessage("hi")])
        clock.advance(61)
        assert await repository.find_recent(cid, 5) == []
        assert await repository.purge_expired() >= 1
    finally:
        await repository.aclose()
