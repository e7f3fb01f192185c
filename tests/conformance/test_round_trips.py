"""Round trips per memory read and per append, per backend, on the real servers.

A chat turn's cost on a network backend is mostly its round trips, so their number is an
invariant: the memory advisor's read (``MessageWindowChatMemory.get``, window of 20) and its
append (one ``add`` of the user message and the answer) each take one round trip, whatever the
stored history's length. They are counted on the wire: the repository talks to its server
through a TCP proxy that counts a round trip each time the client sends after the server has
answered, so every layer (SQLAlchemy, the pool, the driver) is counted. MongoDB and Cassandra
drivers keep monitoring connections of their own, so there the drivers' own hooks count the
requests instead (pymongo's command listener, the Cassandra session's request listener); a
MongoDB append is two commands (the position counter, then the insert).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository
from tests.backends.neo4j.test_neo4j_faults import TcpProxy
from tests.support.servers import server_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
LENGTHS = (10, 300)
# Backends counted through the proxy, with the options their URL needs.
PROXIED = {
    "postgresql": {"initialize_schema": "always"},
    "mariadb": {"initialize_schema": "always"},
    "redis": {},
    "neo4j": {},
}


def history(n: int) -> list[Message]:
    return [SystemMessage("be brief")] + [
        (UserMessage if i % 2 == 0 else AssistantMessage)(TEXT) for i in range(n)
    ]


def pair() -> list[Message]:
    return [UserMessage(TEXT), AssistantMessage(TEXT)]


def through(url: str, port: int) -> str:
    """``url`` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    login = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{login}127.0.0.1:{port}"))


@pytest.fixture(params=sorted(PROXIED))
def proxied(request: pytest.FixtureRequest) -> Iterator[tuple[str, TcpProxy, dict[str, Any]]]:
    name = request.param
    url = server_url(name)
    parts = urlsplit(url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 0)
    options = {**PROXIED[name]}
    if name == "redis":
        options["key_prefix"] = f"trips-{uuid.uuid4().hex[:6]}"
    try:
        yield through(url, proxy.port), proxy, options
    finally:
        proxy.kill()


def counted(proxy: TcpProxy, call: Callable[[], object]) -> int:
    proxy.reset_count()
    call()
    return proxy.round_trips


def test_one_round_trip_per_read_and_per_append(
    proxied: tuple[str, TcpProxy, dict[str, Any]],
) -> None:
    url, proxy, options = proxied
    with create_repository(url, **options) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        for n in LENGTHS:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            messages = history(n)
            for start in range(0, len(messages), 1000):
                repository.append(cid, messages[start : start + 1000])
            memory.get(cid)  # warm: connections open, scripts loaded, statements prepared
            memory.add(cid, pair())
            reads = counted(proxy, lambda cid=cid: memory.get(cid))
            appends = counted(proxy, lambda cid=cid: memory.add(cid, pair()))
            repository.delete_by_conversation_id(cid)
            assert (n, reads, appends) == (n, 1, 1)


async def test_one_round_trip_per_read_and_per_append_async(
    proxied: tuple[str, TcpProxy, dict[str, Any]],
) -> None:
    url, proxy, options = proxied
    async with create_async_repository(url, **options) as repository:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
        for n in LENGTHS:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            messages = history(n)
            for start in range(0, len(messages), 1000):
                await repository.append(cid, messages[start : start + 1000])
            await memory.get(cid)
            await memory.add(cid, pair())
            proxy.reset_count()
            await memory.get(cid)
            reads = proxy.round_trips
            proxy.reset_count()
            await memory.add(cid, pair())
            appends = proxy.round_trips
            await repository.delete_by_conversation_id(cid)
            assert (n, reads, appends) == (n, 1, 1)


def test_mongodb_one_command_per_read_and_per_append() -> None:
    from pymongo import monitoring

    class Commands(monitoring.CommandListener):
        def __init__(self) -> None:
            self.names: list[str] = []

        def started(self, event: monitoring.CommandStartedEvent) -> None:
            self.names.append(event.command_name)

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            pass

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    commands = Commands()
    options = {
        "collection_prefix": f"rt{uuid.uuid4().hex[:6]}_",
        "driver_options": {"event_listeners": [commands]},
    }
    with create_repository(server_url("mongodb"), **options) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        for n in LENGTHS:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            repository.append(cid, history(n))
            memory.get(cid)
            memory.add(cid, pair())
            commands.names.clear()
            memory.get(cid)
            reads = list(commands.names)
            commands.names.clear()
            memory.add(cid, pair())
            appends = list(commands.names)
            repository.delete_by_conversation_id(cid)
            # An append takes the conversation's next position (findAndModify on its counter
            # document), then inserts the messages: two commands, one read.
            assert (n, reads, appends) == (n, ["find"], ["findAndModify", "insert"])


def test_cassandra_one_request_per_read_and_per_append() -> None:
    from cassandra.cluster import Cluster

    from chatmem_repositories.cassandra import CassandraChatMemoryRepository

    url = server_url("cassandra")
    parts = urlsplit(url)
    keyspace = parts.path.strip("/")
    with create_repository(url + "?create_keyspace=true") as setup:
        setup.find_conversation_ids()  # the keyspace and tables exist from here on
    cluster = Cluster([parts.hostname or "127.0.0.1"], port=parts.port or 9042)
    session = cluster.connect()
    sent: list[Any] = []
    try:
        repository = CassandraChatMemoryRepository(session, keyspace=keyspace)
        memory = MessageWindowChatMemory(repository, max_messages=20)
        for n in LENGTHS:
            cid = f"trips-{n}-{uuid.uuid4().hex[:8]}"
            repository.append(cid, history(n))
            memory.get(cid)
            memory.add(cid, pair())
            session.add_request_init_listener(sent.append)
            sent.clear()
            memory.get(cid)
            reads = len(sent)
            sent.clear()
            memory.add(cid, pair())
            appends = len(sent)
            session.remove_request_init_listener(sent.append)
            repository.delete_by_conversation_id(cid)
            assert (n, reads, appends) == (n, 1, 1)
    finally:
        cluster.shutdown()
