"""Cassandra-specific behaviour: options, ownership, round trips, faults."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.cluster import Cluster, Session

from chatmem import AssistantMessage, SystemMessage, UserMessage
from chatmem.conversation_ids import scoped_conversation_id
from chatmem.exceptions import ConfigurationError, RepositoryConnectionError
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
)
from tests.conftest import server_url

pytestmark = pytest.mark.backend("cassandra")


@pytest.fixture(scope="module")
def url() -> str:
    return server_url("cassandra")


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture(scope="module")
def session(url: str) -> Iterator[Session]:
    with CassandraChatMemoryRepository.from_url(url, create_keyspace=True) as repository:
        repository.find_conversation_ids()  # creates the keyspace and tables
    cluster = Cluster(["127.0.0.1"], port=_port(url))
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def cid() -> str:
    return f"cassandra-{uuid.uuid4()}"


# -- options -------------------------------------------------------------------------------------


def test_unknown_option_is_named_with_a_suggestion() -> None:
    with pytest.raises(ConfigurationError, match=r"'tll'.*did you mean 'ttl'"):
        CassandraChatMemoryRepository.from_url("cassandra://127.0.0.1/ks?tll=5")


@pytest.mark.parametrize(
    "bad",
    [
        "cassandra://127.0.0.1/bad-keyspace",
        "cassandra://127.0.0.1/",
        "cassandra://127.0.0.1:notaport/ks",
        "cassandra://127.0.0.1/ks?replication=dc1",
        "cassandra://127.0.0.1/ks?read_consistency=MOST",
        "cassandra://127.0.0.1/ks?table_prefix=x;drop",
    ],
)
def test_bad_urls_fail_before_io(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        CassandraChatMemoryRepository.from_url(bad)


def test_url_hosts_and_password_stay_out_of_repr() -> None:
    repository = AsyncCassandraChatMemoryRepository.from_url(
        "cassandra://app:s3cret@10.0.0.1,10.0.0.2:9043/chat?ttl=60&local_datacenter=dc1"
    )
    text = repr(repository)
    assert "10.0.0.2" in text
    assert "chat" in text
    assert "s3cret" not in text
    assert repository._db.settings is not None
    assert repository._db.settings.port == 9043
    assert repository._ttl == 60


def test_bad_position_is_a_configuration_error(url: str) -> None:
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        pytest.raises(ConfigurationError),
    ):
        repository.find_recent(cid(), 5, before="not-a-position")


# -- construction and ownership ---------------------------------------------------------------


def test_create_repository_by_scheme(url: str) -> None:
    with create_repository(url, create_keyspace=True) as repository:
        assert isinstance(repository, CassandraChatMemoryRepository)
        conversation = cid()
        repository.append(conversation, [UserMessage("hi")])
        assert [m.text for m in repository.find_by_conversation_id(conversation)] == ["hi"]  # type: ignore[union-attr]


async def test_create_async_repository_by_scheme(url: str) -> None:
    async with create_async_repository(url) as repository:
        assert isinstance(repository, AsyncCassandraChatMemoryRepository)
        conversation = cid()
        await repository.append(conversation, [UserMessage("hi")])
        assert len(await repository.find_recent(conversation, 5)) == 1


def test_borrowed_session_stays_open(session: Session) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test", ttl=3600)
    conversation = cid()
    repository.append(conversation, [SystemMessage("s"), UserMessage("u")])
    repository.close()
    assert session.execute("SELECT release_version FROM system.local").one() is not None


async def test_async_over_borrowed_session(session: Session) -> None:
    async with AsyncCassandraChatMemoryRepository(session, keyspace="chatmem_test") as repository:
        conversation = cid()
        await repository.append(conversation, [UserMessage("u"), AssistantMessage("a")])
        assert len(await repository.find_by_conversation_id(conversation)) == 2
    assert not session.is_shutdown


# -- round trips: counted with the driver's request listener --------------------------------


class Counter:
    def __init__(self, session: Session) -> None:
        self.count = 0
        session.add_request_init_listener(self)
        self._session = session

    def __call__(self, response_future: Any) -> None:
        self.count += 1

    def measure(self, call: Any) -> int:
        before = self.count
        call()
        return self.count - before

    def remove(self) -> None:
        self._session.remove_request_init_listener(self)


@pytest.mark.parametrize("stored", [10, 2_000])
def test_round_trips_do_not_depend_on_history(session: Session, stored: int) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    conversation = cid()
    repository.append(conversation, [SystemMessage("be brief")])
    for start in range(0, stored, 500):
        repository.append(
            conversation,
            [UserMessage(f"m{i}") for i in range(start, start + 500)][: stored - start],
        )
    repository.find_recent(conversation, 1)  # set-up (prepare) happens before counting
    counter = Counter(session)
    try:
        assert counter.measure(lambda: repository.find_recent(conversation, 20)) == 1
        assert counter.measure(lambda: repository.find_system_message(conversation)) == 1
        # The memory read: system message and window in one query.
        assert counter.measure(lambda: repository.find_window(conversation, 20)) == 1
        system, window = repository.find_window(conversation, 20)
        assert system is not None
        assert len(window) == min(20, stored)
        # One conditional batch plus the listing row, sent together: one round trip.
        assert counter.measure(lambda: repository.append(conversation, [UserMessage("x")])) == 2
    finally:
        counter.remove()
        repository.delete_by_conversation_id(conversation)
        repository.close()


def test_round_trips_with_ttl(session: Session) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test", ttl=3600)
    conversation = cid()
    repository.find_recent(conversation, 1)  # set-up happens before counting
    counter = Counter(session)
    try:
        # The first append finds no liveness cell and starts the conversation: two rounds.
        assert counter.measure(lambda: repository.append(conversation, [UserMessage("a")])) == 4
        # Every later append is one round (the batch and the listing rows, sent together).
        assert counter.measure(lambda: repository.append(conversation, [UserMessage("b")])) == 2
        assert counter.measure(lambda: repository.find_window(conversation, 20)) == 1
    finally:
        counter.remove()
        repository.delete_by_conversation_id(conversation)
        repository.close()


# -- TTL: a conversation lives while it is appended to ---------------------------------------


def _texts(messages: Any) -> list[str]:
    return [m.text for m in messages]


def _partition_rows(session: Session, conversation_id: str) -> list[Any]:
    return list(
        session.execute(
            "SELECT * FROM chatmem_test.chatmem_messages WHERE conversation_id = %s",
            (conversation_id,),
        )
    )


def test_ttl_keeps_an_active_conversation_whole_then_expires_it(session: Session) -> None:
    owner = f"ttl-{uuid.uuid4()}"
    conversation = scoped_conversation_id(owner, "c")
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test", ttl=2)
    try:
        repository.append(conversation, [SystemMessage("be brief"), UserMessage("u0")])
        expected = ["be brief", "u0"]
        began = time.monotonic()
        turn = 0
        while time.monotonic() - began < 3.5:  # longer than the TTL, never idle for it
            time.sleep(0.7)
            turn += 1
            repository.append(conversation, [AssistantMessage(f"a{turn}")])
            expected.append(f"a{turn}")
            system, window = repository.find_window(conversation, 100)
            assert system is not None
            assert system.message.text == "be brief"  # type: ignore[union-attr]
            assert _texts(s.message for s in window) == expected[1:]
        assert _texts(repository.find_by_conversation_id(conversation)) == expected
        assert repository.find_system_message(conversation) is not None
        assert repository.list_conversations(owner=owner).conversation_ids == [conversation]

        time.sleep(3.2)  # idle for longer than the TTL (plus Cassandra's one-second grain)
        assert repository.find_window(conversation, 100) == (None, [])
        assert repository.find_recent(conversation, 100) == []
        assert repository.find_system_message(conversation) is None
        assert repository.find_by_conversation_id(conversation) == []
        assert repository.find_history(conversation) == []
        assert repository.list_conversations(owner=owner).conversation_ids == []
        assert conversation not in repository.find_conversation_ids()

        # Appending again starts a new conversation: nothing of the expired one comes back.
        repository.append(conversation, [UserMessage("again")])
        assert _texts(repository.find_by_conversation_id(conversation)) == ["again"]
        assert repository.find_window(conversation, 100)[0] is None
        assert repository.list_conversations(owner=owner).conversation_ids == [conversation]
    finally:
        repository.delete_by_conversation_id(conversation)
        repository.close()


def test_purge_expired_deletes_expired_data(session: Session) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test", ttl=1)
    expired, alive = cid(), cid()
    try:
        repository.append(expired, [SystemMessage("s"), UserMessage("u")])
        time.sleep(2.5)
        repository.append(alive, [UserMessage("still here")])
        assert _partition_rows(session, expired)  # invisible to reads, still on disk
        assert repository.purge_expired() >= 1
        assert _partition_rows(session, expired) == []
        assert _texts(repository.find_by_conversation_id(alive)) == ["still here"]
    finally:
        repository.delete_by_conversation_id(expired)
        repository.delete_by_conversation_id(alive)
        repository.close()


async def test_ttl_async_revives_an_expired_conversation(session: Session) -> None:
    repository = AsyncCassandraChatMemoryRepository(session, keyspace="chatmem_test", ttl=1)
    conversation = cid()
    try:
        await repository.append(conversation, [SystemMessage("s"), UserMessage("u")])
        system, window = await repository.find_window(conversation, 10)
        assert system is not None
        assert _texts(s.message for s in window) == ["u"]
        await asyncio.sleep(2.5)
        assert await repository.find_window(conversation, 10) == (None, [])
        await repository.append(conversation, [UserMessage("again")])
        assert _texts(await repository.find_by_conversation_id(conversation)) == ["again"]
    finally:
        await repository.delete_by_conversation_id(conversation)
        await repository.aclose()


# -- faults ----------------------------------------------------------------------------------------


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of the server; ``kill`` makes the server vanish."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._killed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            with self._lock:
                if self._killed:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_RDWR)

    def kill(self) -> None:
        with self._lock:
            self._killed = True
            self._listener.close()
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


FAULT_OPTIONS = "connect_timeout=2&request_timeout=3"
BOUND_SECONDS = 10.0


def test_server_gone_mid_run_raises_connection_error(url: str) -> None:
    proxy = Proxy(_port(url))
    repository = CassandraChatMemoryRepository.from_url(
        f"cassandra://127.0.0.1:{proxy.port}/chatmem_test?{FAULT_OPTIONS}"
    )
    try:
        conversation = cid()
        repository.append(conversation, [UserMessage("before")])
        proxy.kill()
        for call in (
            lambda: repository.append(conversation, [UserMessage("after")]),
            lambda: repository.find_recent(conversation, 5),
        ):
            started = time.monotonic()
            with pytest.raises(RepositoryConnectionError) as caught:
                call()
            assert time.monotonic() - started < BOUND_SECONDS
            assert caught.value.backend == "cassandra"
            assert caught.value.__cause__ is not None
    finally:
        proxy.kill()
        repository.close()


async def test_server_gone_mid_run_raises_connection_error_async(url: str) -> None:
    proxy = Proxy(_port(url))
    repository = AsyncCassandraChatMemoryRepository.from_url(
        f"cassandra://127.0.0.1:{proxy.port}/chatmem_test?{FAULT_OPTIONS}"
    )
    try:
        conversation = cid()
        await repository.append(conversation, [UserMessage("before")])
        proxy.kill()
        started = time.monotonic()
        with pytest.raises(RepositoryConnectionError):
            await repository.append(conversation, [UserMessage("after")])
        assert time.monotonic() - started < BOUND_SECONDS
    finally:
        proxy.kill()
        await repository.aclose()


def test_no_server_raises_connection_error_quickly() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    repository = CassandraChatMemoryRepository.from_url(
        f"cassandra://127.0.0.1:{port}/chatmem_test?connect_timeout=1"
    )
    started = time.monotonic()
    try:
        with pytest.raises(RepositoryConnectionError):
            repository.find_recent(cid(), 5)
    finally:
        repository.close()
    assert time.monotonic() - started < BOUND_SECONDS
