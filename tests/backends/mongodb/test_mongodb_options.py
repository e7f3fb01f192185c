"""The MongoDB repository's URL option rule, timeouts, server version and clock, on FerretDB."""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import MongoClient, monitoring

from chatmem import UserMessage
from chatmem.exceptions import ConfigurationError
from chatmem.testing import ManualClock
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.mongodb import (
    DRIVER_PARAMETERS,
    AsyncMongoChatMemoryRepository,
    MongoChatMemoryRepository,
)

pytestmark = pytest.mark.backend("mongodb")


class _Started(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.mark.parametrize(
    ("query", "suggestion"),
    [
        ("tll=60", "ttl"),  # a chatmem option
        ("colection_prefix=x", "collection_prefix"),
        ("replicaSett=rs0", "replicaSet"),  # a declared driver parameter
        ("initialise_schema=never", "initialize_schema"),
    ],
)
def test_misspelt_option_fails_with_did_you_mean(query: str, suggestion: str) -> None:
    for base in ("mongodb://h1:27017,h2:27017/db", "mongodb+srv://cluster0.example.com/db"):
        with pytest.raises(ConfigurationError, match=f"did you mean '{suggestion}'") as caught:
            create_repository(f"{base}?{query}")
        assert "driver_options" in str(caught.value)
    name = query.partition("=")[0]
    with pytest.raises(ConfigurationError, match=f"'{name}'.*did you mean '{suggestion}'"):
        create_async_repository("mongodb://h/db", **{name: "x"})


def test_declared_driver_parameters_pass_through_in_any_case(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    assert {"replicaSet", "authSource", "tls", "appName"} <= set(DRIVER_PARAMETERS)
    with create_repository(
        f"{mongodb_url}?collection_prefix={mongodb_prefix}&APPNAME=chatmem-test&maxPoolSize=7",
        minPoolSize=0,
    ) as repository:
        options = repository._client.options
        assert options.pool_options.metadata["application"]["name"] == "chatmem-test"
        assert options.pool_options.max_pool_size == 7
        repository.append("c", [UserMessage("x")])
        assert len(repository.find_by_conversation_id("c")) == 1


def test_driver_options_reach_pymongo(mongodb_url: str, mongodb_prefix: str) -> None:
    listener = _Started()
    with MongoChatMemoryRepository.from_url(
        mongodb_url,
        collection_prefix=mongodb_prefix,
        driver_options={"event_listeners": [listener], "maxIdleTimeMS": 1234},
    ) as repository:
        repository.append("c", [UserMessage("x")])
        assert repository._client.options.pool_options.max_idle_time_seconds == 1.234
    assert "insert" in listener.names
    with pytest.raises(ConfigurationError, match="mapping"):
        create_repository(mongodb_url, driver_options="maxIdleTimeMS=1")


def test_timeouts_chatmem_names_and_driver_names() -> None:
    def pool(repository: Any) -> tuple[float, float, float]:
        options = repository._client.options
        return (
            options.pool_options.connect_timeout,
            options.server_selection_timeout,
            options.pool_options.socket_timeout,
        )

    base = "mongodb://127.0.0.1:1/db"
    with create_repository(base) as repository:
        assert pool(repository) == (5.0, 5.0, 10.0)
    with create_repository(base, connect_timeout=2, read_timeout=3) as repository:
        assert pool(repository) == (2.0, 2.0, 3.0)
    with create_repository(f"{base}?socketTimeoutMS=4000") as repository:
        assert pool(repository) == (5.0, 5.0, 4.0)  # the driver name beats a default
    with create_repository(f"{base}?socketTimeoutMS=4000&read_timeout=6") as repository:
        assert pool(repository) == (5.0, 5.0, 6.0)  # an explicit chatmem option wins


def test_initialize_schema_takes_always_or_never(mongodb_url: str, mongodb_prefix: str) -> None:
    with create_repository(
        f"{mongodb_url}?initialize_schema=never", collection_prefix=mongodb_prefix
    ) as repository:
        assert repository._ready_done  # "never": nothing to create
    client: MongoClient[dict[str, Any]] = MongoClient(mongodb_url)
    try:
        with pytest.raises(TypeError, match="create_indexes"):
            MongoChatMemoryRepository(
                client, collection_prefix=mongodb_prefix, create_indexes=False
            )  # type: ignore[call-arg]
    finally:
        client.close()
    with pytest.raises(ConfigurationError, match="initialize_schema"):
        create_repository(mongodb_url, initialize_schema="sometimes")


def test_clock_decides_the_stored_expiry(mongodb_url: str, mongodb_prefix: str) -> None:
    clock = ManualClock()
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=3600, clock=clock
    ) as repository:
        repository.append("c", [UserMessage("x")])
        clock.advance(3599)
        assert repository.find_conversation_ids() == ["c"]
        clock.advance(2)
        assert repository.find_conversation_ids() == []
        assert repository.find_by_conversation_id("c") == []
        assert repository.purge_expired() == 1


async def test_server_version_and_db_system(mongodb_url: str) -> None:
    async with AsyncMongoChatMemoryRepository.from_url(mongodb_url) as repository:
        version = await repository.server_version()
    assert version.startswith(("MongoDB ", "FerretDB "))
    assert "FerretDB" in version  # the test server
    with MongoChatMemoryRepository.from_url(mongodb_url) as repository:
        assert repository.server_version() == version
        assert repository.db_system == AsyncMongoChatMemoryRepository.db_system == "mongodb"
        assert repository.db_collection_name == "chatmem_messages"
