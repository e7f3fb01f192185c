"""MongoDB-specific behaviour on FerretDB 1.24: options, TTL, round trips, a stopped server."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient, monitoring

from chatmem import MessageWindowChatMemory
from chatmem.exceptions import ConfigurationError, RepositoryConnectionError
from chatmem.messages import AssistantMessage, SystemMessage, UserMessage
from chatmem_repositories import create_repository
from chatmem_repositories.mongodb import MongoChatMemoryRepository
from tests.conftest import server_url

pytestmark = pytest.mark.backend("mongodb")
SERVER_SCRIPTS = Path(__file__).resolve().parent.parent / "scripts" / "servers" / "ferretdb"


class CommandCounter(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def url() -> str:
    return server_url("mongodb")


@pytest.fixture
def prefix(url: str) -> Iterator[str]:
    name = f"be{uuid.uuid4().hex[:8]}_"
    yield name
    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        database = client.get_default_database()
        for collection in database.list_collection_names():
            if collection.startswith(name):
                database.drop_collection(collection)
    finally:
        client.close()


def test_options_split_between_chatmem_and_pymongo(url: str, prefix: str) -> None:
    repository = create_repository(
        f"{url}?collection_prefix={prefix}&appName=chatmem-test&ttl=60", socketTimeoutMS=3000
    )
    try:
        assert isinstance(repository, MongoChatMemoryRepository)
        assert repository._messages.name == prefix + "messages"
        assert repository._client.options.pool_options.socket_timeout == 3.0
        assert repository._client.options.server_selection_timeout == 5.0  # bounded default
    finally:
        repository.close()
    with pytest.raises(ConfigurationError, match="colection_prefix"):
        create_repository(f"{url}?colection_prefix=x")
    with pytest.raises(ConfigurationError, match="nosuchoption"):
        create_repository(url, nosuchoption=1)
    with pytest.raises(ConfigurationError, match="ttl"):
        create_repository(url, ttl=-1)


def test_password_never_shown() -> None:
    repository = MongoChatMemoryRepository.from_url("mongodb://u:s3cret@127.0.0.1:1/db")
    try:
        assert "s3cret" not in repr(repository)
    finally:
        repository.close()


def test_hostile_id_is_a_value_not_a_query(url: str, prefix: str) -> None:
    with MongoChatMemoryRepository.from_url(url, collection_prefix=prefix) as repository:
        repository.append("victim", [UserMessage("private")])
        hostile = '{"$ne": null}'
        repository.append(hostile, [UserMessage("mine")])
        assert [m.text for m in repository.find_by_conversation_id(hostile)] == ["mine"]  # type: ignore[union-attr]
        assert repository.find_history(hostile, text=".*") == []
        assert repository.find_history("victim", text="PRIV")[0].message.text == "private"  # type: ignore[union-attr]


def test_two_second_ttl_removes_everything(url: str, prefix: str) -> None:
    with MongoChatMemoryRepository.from_url(url, collection_prefix=prefix, ttl=2) as repository:
        cid = f"owner-{uuid.uuid4().hex}:c"
        repository.append(cid, [SystemMessage("s"), UserMessage("u"), AssistantMessage("a")])
        assert not repository.native_ttl  # FerretDB: no TTL index, stored expiry instead
        assert len(repository.find_by_conversation_id(cid)) == 3
        time.sleep(2.5)
        assert repository.find_by_conversation_id(cid) == []
        assert repository.find_system_message(cid) is None
        assert repository.find_recent(cid, 10) == []
        assert cid not in repository.find_conversation_ids()
        assert repository.list_conversations(owner=cid.split(":")[0]).conversation_ids == []
        assert repository.purge_expired() == 1
        assert repository._messages.count_documents({"conversation_id": cid}) == 0
        assert repository._conversations.count_documents({"_id": cid}) == 0


def test_round_trips_per_append_and_read(url: str, prefix: str) -> None:
    counter = CommandCounter()
    with MongoChatMemoryRepository.from_url(
        url, collection_prefix=prefix, event_listeners=[counter]
    ) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        cid = f"rt-{uuid.uuid4()}"
        memory.add(cid, [SystemMessage("s"), UserMessage("u0"), AssistantMessage("a0")])
        counter.names.clear()
        memory.add(cid, UserMessage("u1"))
        assert counter.names == ["findAndModify", "insert"]
        counter.names.clear()
        memory.get(cid)
        assert len(counter.names) == 2  # system message, then the window


@pytest.mark.skipif(not (SERVER_SCRIPTS / "stop.sh").exists(), reason="no FerretDB scripts")
def test_stopped_server_gives_connection_error_in_bounded_time(url: str, prefix: str) -> None:
    repository = MongoChatMemoryRepository.from_url(
        url, collection_prefix=prefix, serverSelectionTimeoutMS=2000
    )
    cid = f"fault-{uuid.uuid4()}"
    try:
        repository.append(cid, [UserMessage("before")])
        subprocess.run([str(SERVER_SCRIPTS / "stop.sh")], check=True, capture_output=True)
        started = time.monotonic()

        def keep_appending() -> None:
            for i in range(100):  # the first call may still find a pooled socket
                repository.append(cid, [UserMessage(f"during {i}")])

        with pytest.raises(RepositoryConnectionError):
            keep_appending()
        elapsed = time.monotonic() - started
        print(f"RepositoryConnectionError after {elapsed:.2f}s")
        assert elapsed < 10, f"took {elapsed:.1f}s"
    finally:
        subprocess.run(
            [str(SERVER_SCRIPTS / "start.sh"), "--keep-data"],
            check=True,
            capture_output=True,
            env={**os.environ},
        )
    texts = [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]
    assert texts == ["before"]
    repository.close()
