"""Cassandra-specific behaviour: options, ownership, round trips, faults."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cassandra.cluster import Cluster, Session

from chatmem import AssistantMessage, SystemMessage, UserMessage
from chatmem.conversation_ids import scoped_conversation_id
from chatmem.exceptions import ConfigurationError, RepositoryConnectionError
from chatmem.testing.vectors import HashingEmbeddingModel
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
    CassandraVectorStore,
)
from tests.support.polling import async_wait_until, wait_until
from tests.support.servers import server_url

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


def test_constructor_keywords_are_the_current_names_only() -> None:
    cluster = Cluster(["127.0.0.1"], port=1)
    repository = CassandraChatMemoryRepository(
        cluster, keyspace="ks", read_timeout=3, initialize_schema="never"
    )
    assert repository._options.read_timeout.total_seconds() == 3
    assert repository._options.initialize_schema == "never"
    store = CassandraVectorStore(
        cluster, HashingEmbeddingModel(), keyspace="ks", initialize_schema="never"
    )
    assert not store._initialize_schema
    with pytest.raises(TypeError, match="request_timeout"):
        CassandraChatMemoryRepository(cluster, keyspace="ks", request_timeout=3)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match=r"'initialize_schema'.*'always' or 'never'"):
        CassandraChatMemoryRepository(cluster, keyspace="ks", initialize_schema=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="create_schema"):
        CassandraVectorStore(cluster, HashingEmbeddingModel(), keyspace="ks", create_schema=False)  # type: ignore[call-arg]


def test_driver_options_reach_the_cluster_and_unknown_url_parameters_are_refused() -> None:
    repository = CassandraChatMemoryRepository.from_url(
        "cassandra://127.0.0.1:9043/ks", driver_options={"protocol_version": 5, "port": 9999}
    )
    assert repository._db.ref.get().protocol_version == 5
    assert repository._db.ref.get().port == 9999  # driver_options win over chatmem's
    repository.close()
    with pytest.raises(ConfigurationError, match=r"'protocol_version'.*driver_options"):
        CassandraChatMemoryRepository.from_url("cassandra://127.0.0.1/ks?protocol_version=5")


def test_server_version_and_db_system(url: str) -> None:
    assert CassandraChatMemoryRepository.db_system == "cassandra"
    with CassandraChatMemoryRepository.from_url(url) as repository:
        assert repository.server_version().startswith("Apache Cassandra 5.")


def test_url_hosts_and_password_stay_out_of_repr() -> None:
    repository = AsyncCassandraChatMemoryRepository.from_url(
        "cassandra://app:s3cret@10.0.0.1,10.0.0.2:9043/chat?ttl=60&local_datacenter=dc1"
    )
    text = repr(repository)
    assert "10.0.0.2" in text
    assert "chat" in text
    assert "s3cret" not in text
    assert repository._db.ref.built is None  # nothing resolved or connected yet
    assert repository._db.ref.get().port == 9043
    assert repository._ttl == 60


@pytest.mark.parametrize(
    "bad",
    # A TIMEUUID is a position of the version 1 layout, which this one does not read.
    ["not-a-position", "2b1c5f1e-cc8f-11f0-8000-000000000000", "-1", -1, True, 2**63, 1.5],
)
def test_bad_position_is_a_configuration_error(url: str, bad: Any) -> None:
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        pytest.raises(ConfigurationError),
    ):
        repository.find_recent(cid(), 5, before=bad)


def test_positions_are_integers_from_one(url: str) -> None:
    with CassandraChatMemoryRepository.from_url(url) as repository:
        conversation = cid()
        first = repository.append(conversation, [SystemMessage("s"), UserMessage("u")])
        second = repository.append(conversation, [AssistantMessage("a")])
        assert [s.position for s in first + second] == [1, 2, 3]
        # A position passed back as its decimal string is accepted too.
        older = repository.find_recent(conversation, 5, before="3")
        assert _texts(s.message for s in older) == ["u"]
        # save_all carries the counter on: positions are never handed out twice.
        repository.save_all(conversation, [UserMessage("x"), AssistantMessage("y")])
        assert [s.position for s in repository.find_history(conversation)] == [4, 5]
        assert [s.position for s in repository.append(conversation, [UserMessage("z")])] == [6]
        repository.delete_by_conversation_id(conversation)
        assert [s.position for s in repository.append(conversation, [UserMessage("new")])] == [1]
        repository.delete_by_conversation_id(conversation)


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
        # One conditional batch: the conversation is listed already (its first append did).
        assert counter.measure(lambda: repository.append(conversation, [UserMessage("x")])) == 1
    finally:
        counter.remove()
        repository.delete_by_conversation_id(conversation)
        repository.close()


def test_round_trips_when_another_writer_appended(session: Session) -> None:
    # Two repositories stand for two processes: each knows only the counter it last saw.
    mine = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    other = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    conversation = cid()
    mine.append(conversation, [UserMessage("a")])
    other.find_recent(conversation, 1)  # set-up happens before counting
    counter = Counter(session)
    try:
        # A stale guess costs one more round: the rejected batch answers with the counter.
        # (A repository that never saw the conversation sends the listing rows along.)
        assert counter.measure(lambda: other.append(conversation, [UserMessage("b")])) == 3
        assert counter.measure(lambda: other.append(conversation, [UserMessage("c")])) == 1
        assert counter.measure(lambda: mine.append(conversation, [UserMessage("d")])) == 2
        # The memory read brings the counter along, so the append after it is one round.
        other.find_window(conversation, 20)
        assert counter.measure(lambda: other.append(conversation, [UserMessage("e")])) == 1
        history = mine.find_history(conversation)
        assert [s.position for s in history] == [1, 2, 3, 4, 5]
        assert _texts(s.message for s in history) == ["a", "b", "c", "d", "e"]
    finally:
        counter.remove()
        mine.delete_by_conversation_id(conversation)
        mine.close()
        other.close()


def test_a_conversation_is_listed_again_after_another_process_deleted_it(
    session: Session,
) -> None:
    # Appends to a conversation known to exist skip the listing rows; one that finds the
    # counter gone (deleted by another process) starts it anew and lists it again.
    mine = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    other = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    owner = f"owner-{uuid.uuid4().hex[:8]}"
    conversation = scoped_conversation_id(owner, "relisted")
    try:
        mine.append(conversation, [UserMessage("a")])
        mine.append(conversation, [UserMessage("b")])  # mine now expects the counter at 3
        assert mine.list_conversations(owner=owner).conversation_ids == [conversation]
        other.delete_by_conversation_id(conversation)
        assert other.list_conversations(owner=owner).conversation_ids == []
        stored = mine.append(conversation, [UserMessage("c")])  # stale guess: starts anew
        assert [s.position for s in stored] == [1]
        assert mine.list_conversations(owner=owner).conversation_ids == [conversation]
        assert conversation in other.find_conversation_ids()
    finally:
        mine.delete_by_conversation_id(conversation)
        mine.close()
        other.close()


def test_round_trips_of_deletes(session: Session) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    conversation = cid()
    repository.append(conversation, [UserMessage("a"), UserMessage("b")])
    counter = Counter(session)
    try:
        # The count, then one conditional batch.
        assert counter.measure(lambda: repository.delete_before(conversation, 2)) == 2
        assert counter.measure(lambda: repository.delete_before(conversation, 2)) == 1  # none
        # One conditional batch, with the listing rows sent at the same time: one round.
        assert counter.measure(lambda: repository.save_all(conversation, [UserMessage("x")])) == 2
        assert counter.measure(lambda: repository.delete_by_conversation_id(conversation)) == 2
        assert repository.find_by_conversation_id(conversation) == []
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
        # The batch's condition tells whether the conversation is alive: no read for it.
        assert counter.measure(lambda: repository.delete_before(conversation, 2)) == 2
    finally:
        counter.remove()
        repository.delete_by_conversation_id(conversation)
        repository.close()


# -- reads that span both sections ------------------------------------------------------------


def test_a_history_read_never_shows_part_of_a_batch(session: Session) -> None:
    # Each batch puts a system message in section 's' and a user message in section 'c'.
    writer = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    reader = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    conversation = cid()
    stop = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        turn = 0
        try:
            while not stop.is_set():
                turn += 1
                writer.append(conversation, [SystemMessage(f"s{turn}"), UserMessage(f"u{turn}")])
                if turn % 8 == 0:
                    writer.delete_by_conversation_id(conversation)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        reads = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not failures:
            texts = _texts(reader.find_by_conversation_id(conversation))
            turns = sorted({int(text[1:]) for text in texts})
            assert texts == [f"{kind}{turn}" for turn in turns for kind in "su"]
            reads += 1
        assert reads > 50
    finally:
        stop.set()
        thread.join()
        writer.delete_by_conversation_id(conversation)
        writer.close()
        reader.close()
    assert not failures


@pytest.mark.parametrize(
    "shape",
    [
        # More system rows than a page: the first page ends in them.
        [("s", 230), ("u", 40), ("s", 3), ("u", 30)],
        # Few system rows, many chat rows: the first page ends in the chat rows.
        [("u", 150), ("s", 2), ("u", 120), ("s", 1), ("u", 5)],
    ],
)
def test_a_long_history_is_read_in_order(session: Session, shape: list[tuple[str, int]]) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace="chatmem_test")
    conversation = cid()
    kinds = {"s": SystemMessage, "u": UserMessage}
    messages = [
        kinds[kind](f"{kind}{n}:{i}") for n, (kind, count) in enumerate(shape) for i in range(count)
    ]
    try:
        for start in range(0, len(messages), 100):
            repository.append(conversation, messages[start : start + 100])
        expected = _texts(messages)
        assert _texts(repository.find_by_conversation_id(conversation)) == expected
        assert repository.count_messages(conversation) == len(messages)
        history = repository.find_history(conversation, after=7, limit=len(messages))
        assert _texts(s.message for s in history) == expected[7:]
        assert [s.position for s in history] == list(range(8, len(messages) + 1))
    finally:
        repository.delete_by_conversation_id(conversation)
        repository.close()


# -- TTL: a conversation lives while it is appended to ---------------------------------------


def _texts(messages: Any) -> list[str]:
    return [m.text for m in messages]


def _partition_rows(session: Session, conversation_id: str) -> list[Any]:
    return list(
        session.execute(
            "SELECT * FROM chatmem_test.chatmem_messages_v2 WHERE conversation_id = %s",
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
        # Cassandra's clock decides expiry, so staying active takes real time: an append
        # every 0.7 s for longer than the TTL, never idle for it.
        while time.monotonic() - began < 3.5:
            time.sleep(0.7)
            turn += 1
            repository.append(conversation, [AssistantMessage(f"a{turn}")])
            expected.append(f"a{turn}")
            system, window = repository.find_window(conversation, 100)
            assert system is not None
            assert system.message.text == "be brief"  # type: ignore[union-attr]
            assert _texts(s.message for s in window) == expected[1:]
        assert _texts(repository.find_by_conversation_id(conversation)) == expected
        assert repository.count_messages(conversation) == len(expected)
        assert repository.find_system_message(conversation) is not None
        assert repository.list_conversations(owner=owner).conversation_ids == [conversation]

        # Idle now: the server expires it once the TTL (plus its one-second grain) has passed.
        wait_until(
            lambda: repository.find_window(conversation, 100) == (None, []),
            within=30,
            reason="Cassandra expires an idle conversation with a 2 s TTL",
        )
        assert repository.find_recent(conversation, 100) == []
        assert repository.find_system_message(conversation) is None
        assert repository.find_by_conversation_id(conversation) == []
        assert repository.count_messages(conversation) == 0
        assert repository.find_history(conversation) == []
        assert repository.list_conversations(owner=owner).conversation_ids == []
        assert conversation not in repository.find_conversation_ids()

        # Appending again starts a new conversation: nothing of the expired one comes back.
        repository.append(conversation, [UserMessage("again")])
        assert _texts(repository.find_by_conversation_id(conversation)) == ["again"]
        assert repository.count_messages(conversation) == 1
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
        wait_until(
            lambda: repository.count_messages(expired) == 0,
            within=30,
            reason="Cassandra expires a conversation with a 1 s TTL",
        )
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

        async def expired() -> bool:
            return await repository.find_window(conversation, 10) == (None, [])

        await async_wait_until(
            expired, within=30, reason="Cassandra expires a conversation with a 1 s TTL"
        )
        await repository.append(conversation, [UserMessage("again")])
        assert _texts(await repository.find_by_conversation_id(conversation)) == ["again"]
    finally:
        await repository.delete_by_conversation_id(conversation)
        await repository.aclose()


# -- order across writers whose clocks differ ------------------------------------------------

# A writer in a process of its own: it connects, says "ready", then for each line read from
# stdin, [action, "conversation id", argument], calls the repository and answers with JSON:
# - "append", ["text", count]: appends count messages one at a time ("text" for one,
#   "text:0", "text:1", ... for more) and answers with the positions they got;
# - "delete", null: delete_by_conversation_id;
# - "save_all", ["text", ...]: replaces the conversation with user messages;
# - "delete_before", position: answers with the count delete_before returns.
_WRITER = """
import asyncio, json, sys
from chatmem import UserMessage
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
)

url, flavour = sys.argv[1], sys.argv[2]


def texts(text, count):
    return [text] if count == 1 else [f"{text}:{i}" for i in range(count)]


def run_sync():
    with CassandraChatMemoryRepository.from_url(url) as repository:
        repository.find_recent("warm-up", 1)
        print(json.dumps("ready"), flush=True)
        for line in sys.stdin:
            action, conversation_id, argument = json.loads(line)
            answer = None
            if action == "append":
                answer = []
                for one in texts(*argument):
                    stored = repository.append(conversation_id, [UserMessage(one)])
                    answer += [s.position for s in stored]
            elif action == "delete":
                repository.delete_by_conversation_id(conversation_id)
            elif action == "save_all":
                repository.save_all(conversation_id, [UserMessage(t) for t in argument])
            else:
                answer = repository.delete_before(conversation_id, argument)
            print(json.dumps(answer), flush=True)


async def run_async():
    async with AsyncCassandraChatMemoryRepository.from_url(url) as repository:
        await repository.find_recent("warm-up", 1)
        print(json.dumps("ready"), flush=True)
        for line in sys.stdin:
            action, conversation_id, argument = json.loads(line)
            answer = None
            if action == "append":
                answer = []
                for one in texts(*argument):
                    stored = await repository.append(conversation_id, [UserMessage(one)])
                    answer += [s.position for s in stored]
            elif action == "delete":
                await repository.delete_by_conversation_id(conversation_id)
            elif action == "save_all":
                await repository.save_all(conversation_id, [UserMessage(t) for t in argument])
            else:
                answer = await repository.delete_before(conversation_id, argument)
            print(json.dumps(answer), flush=True)


run_sync() if flavour == "sync" else asyncio.run(run_async())
"""

_ROOT = Path(__file__).resolve().parents[3]


def _faketime() -> str:
    found = shutil.which("faketime")
    if found is None:
        message = "faketime is not installed (scripts/servers/cassandra/start.sh installs it)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return found


class Writer:
    """A warm writer process; with ``skew`` its clock is offset by libfaketime (``-30s``)."""

    def __init__(self, url: str, skew: str | None, flavour: str) -> None:
        command = [sys.executable, "-c", _WRITER, url, flavour]
        if skew is not None:
            command = [_faketime(), "-f", skew, *command]
        self._process = subprocess.Popen(
            command, cwd=_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def send(self, conversation_id: str, text: str, count: int = 1) -> None:
        self.request("append", conversation_id, [text, count])

    def request(self, action: str, conversation_id: str, argument: Any = None) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps([action, conversation_id, argument]) + "\n")
        self._process.stdin.flush()

    def call(self, action: str, conversation_id: str, argument: Any = None) -> Any:
        """Make the writer call the repository and return its answer."""
        self.request(action, conversation_id, argument)
        return self.receive()

    def receive(self) -> Any:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise AssertionError(f"the writer exited with status {self._process.wait(30)}")
        return json.loads(line)

    def append(self, conversation_id: str, text: str) -> list[int]:
        self.send(conversation_id, text)
        positions: list[int] = self.receive()
        return positions

    def close(self) -> None:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()  # end of input: the writer closes its repository and exits
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()


@contextlib.contextmanager
def writers(url: str, *specs: tuple[str | None, str]) -> Iterator[list[Writer]]:
    """Start one writer per (skew, "sync" | "async") and wait until all are connected."""
    started: list[Writer] = []
    try:
        for skew, flavour in specs:
            started.append(Writer(url, skew, flavour))
        for writer in started:
            assert writer.receive() == "ready"
        yield started
    finally:
        for writer in started:
            writer.close()


@pytest.mark.parametrize("skew", ["-30s", "-1s"])
def test_a_writer_whose_clock_is_behind_appends_after(url: str, skew: str) -> None:
    conversation = cid()
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        writers(url, (skew, "sync")) as (behind,),
    ):
        repository.find_recent(conversation, 1)  # connected before the first append
        repository.append(conversation, [UserMessage("turn 1")])
        behind.append(conversation, "turn 2")
        assert _texts(repository.find_by_conversation_id(conversation)) == ["turn 1", "turn 2"]
        recent = repository.find_recent(conversation, 5)
        assert _texts(s.message for s in recent) == ["turn 1", "turn 2"]
        repository.delete_by_conversation_id(conversation)


def test_alternating_writers_with_skewed_clocks_keep_append_order(url: str) -> None:
    conversation = cid()
    specs: list[tuple[str | None, str]] = [(None, "sync"), ("-30s", "async"), ("+30s", "sync")]
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        writers(url, *specs) as started,
    ):
        expected: list[str] = []
        positions: list[int] = []
        for turn in range(12):
            text = f"turn {turn + 1}"
            positions += started[turn % len(started)].append(conversation, text)
            expected.append(text)
            if turn % 4 == 3:  # read by yet another process, between appends
                assert _texts(repository.find_by_conversation_id(conversation)) == expected
        assert positions == sorted(positions)
        assert len(set(positions)) == len(expected)
        system, window = repository.find_window(conversation, 5)
        assert system is None
        assert _texts(s.message for s in window) == expected[-5:]
        older = repository.find_recent(conversation, 5, before=window[0].position)
        assert _texts(s.message for s in older) == expected[-10:-5]
        assert [s.position for s in repository.find_history(conversation, limit=100)] == positions
        repository.delete_by_conversation_id(conversation)


def test_concurrent_writer_processes_with_skewed_clocks_lose_nothing(url: str) -> None:
    conversation = cid()
    specs: list[tuple[str | None, str]] = [
        (None, "sync"),
        ("-30s", "sync"),
        ("+30s", "async"),
        ("-1s", "async"),
    ]
    per_writer = 25
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        writers(url, *specs) as started,
    ):
        for number, writer in enumerate(started):
            writer.send(conversation, f"w{number}", per_writer)
        answers = [writer.receive() for writer in started]
        history = repository.find_history(conversation, limit=1000)
        texts = _texts(s.message for s in history)
        assert len(texts) == len(set(texts)) == len(specs) * per_writer
        for number, positions in enumerate(answers):
            own = [t for t in texts if t.startswith(f"w{number}:")]
            assert own == [f"w{number}:{i}" for i in range(per_writer)]
            assert positions == sorted(positions)
        # Every acknowledged position is in the history, in the history's order.
        assert sorted(p for positions in answers for p in positions) == [
            s.position for s in history
        ]
        repository.delete_by_conversation_id(conversation)


# -- deletes by processes whose clocks differ -------------------------------------------------
#
# Each delete below is acknowledged before the next call starts, so the order is the real one:
# a delete must remove every message appended before it and none appended after it, whatever
# the clock of the process that deleted says.


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_deleter_whose_clock_is_ahead_removes_no_later_append(url: str, flavour: str) -> None:
    deleted, replaced, trimmed = cid(), cid(), cid()
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        writers(url, ("+30s", flavour)) as (ahead,),
    ):
        for conversation in (deleted, replaced, trimmed):
            repository.append(conversation, [UserMessage("a"), UserMessage("b")])
        ahead.call("delete", deleted)
        ahead.call("save_all", replaced, ["x"])
        # A cutoff past the newest message: only the order of the delete keeps it from
        # covering the positions appended after it.
        assert ahead.call("delete_before", trimmed, 100) == 2
        after = [
            repository.append(conversation, [UserMessage("after")])[0].position
            for conversation in (deleted, replaced, trimmed)
        ]
        assert after == [1, 4, 3]  # save_all carried the counter on, from "x" at 3
        assert _texts(repository.find_by_conversation_id(deleted)) == ["after"]
        assert _texts(repository.find_by_conversation_id(replaced)) == ["x", "after"]
        assert _texts(repository.find_by_conversation_id(trimmed)) == ["after"]
        assert _texts(s.message for s in repository.find_window(replaced, 10)[1]) == [
            "x",
            "after",
        ]
        for conversation in (deleted, replaced, trimmed):
            repository.delete_by_conversation_id(conversation)


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_deleter_whose_clock_is_behind_removes_every_earlier_append(
    url: str, flavour: str
) -> None:
    deleted, replaced, trimmed = cid(), cid(), cid()
    with (
        CassandraChatMemoryRepository.from_url(url) as repository,
        writers(url, ("-30s", flavour)) as (behind,),
    ):
        for conversation in (deleted, replaced, trimmed):
            repository.append(conversation, [UserMessage("a"), UserMessage("b")])
            repository.append(conversation, [UserMessage("c")])
        behind.call("delete", deleted)
        behind.call("save_all", replaced, ["x"])
        assert behind.call("delete_before", trimmed, 3) == 2
        assert repository.find_by_conversation_id(deleted) == []
        assert repository.find_window(deleted, 10) == (None, [])
        assert _texts(repository.find_by_conversation_id(replaced)) == ["x"]
        assert _texts(repository.find_by_conversation_id(trimmed)) == ["c"]
        # The counter went with the deleted conversation; save_all carried it on ("x" at
        # 4) and delete_before kept it.
        after = [
            repository.append(conversation, [UserMessage("d")])[0].position
            for conversation in (deleted, replaced, trimmed)
        ]
        assert after == [1, 5, 4]
        assert _texts(repository.find_by_conversation_id(replaced)) == ["x", "d"]
        for conversation in (deleted, replaced, trimmed):
            repository.delete_by_conversation_id(conversation)


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


FAULT_OPTIONS = "connect_timeout=2&read_timeout=3"
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
