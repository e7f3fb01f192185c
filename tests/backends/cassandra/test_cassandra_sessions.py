"""Cassandra's session log: events in their own section, versions from the position counter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.cluster import Cluster, Session

from chatmem import AssistantMessage, SystemMessage, UserMessage
from chatmem.exceptions import VersionConflictError
from chatmem.messages import EventMessage, Message, MessageType
from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from tests.support.polling import wait_until
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("cassandra")

KEYSPACE = "chatmem_test"


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    url = server_url("cassandra")
    with CassandraChatMemoryRepository.from_url(url, create_keyspace=True) as repository:
        repository.find_conversation_ids()  # creates the keyspace and tables
    cluster = Cluster(["127.0.0.1"], port=int(url.rsplit(":", 1)[1].split("/")[0]))
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


@pytest.fixture
def repository(session: Session) -> Iterator[CassandraChatMemoryRepository]:
    with CassandraChatMemoryRepository(session, keyspace=KEYSPACE) as repository:
        yield repository


def cid() -> str:
    return f"cassandra-sessions-{uuid.uuid4()}"


def _label(message: Message) -> str:
    if isinstance(message, EventMessage):
        return str(message.payload["label"])
    return message.text  # type: ignore[union-attr]


def _rows(session: Session, conversation_id: str) -> list[Any]:
    return list(
        session.execute(
            f"SELECT section, position, message_id FROM {KEYSPACE}.chatmem_messages_v2"
            " WHERE conversation_id = %s",
            (conversation_id,),
        )
    )


class Counter:
    """Counts the requests a session sends (the driver's request listener)."""

    def __init__(self, session: Session) -> None:
        self.count = 0
        self._session = session
        session.add_request_init_listener(self)

    def __call__(self, response_future: Any) -> None:
        self.count += 1

    def measure(self, call: Any) -> int:
        before = self.count
        call()
        return self.count - before

    def remove(self) -> None:
        self._session.remove_request_init_listener(self)


def test_events_are_rows_of_their_own_section(
    session: Session, repository: CassandraChatMemoryRepository
) -> None:
    conversation = cid()
    event = EventMessage("acme.audit", {"label": "e"})
    stored = repository.append(conversation, [UserMessage("u"), event, SystemMessage("s")])
    rows = [row for row in _rows(session, conversation) if row.section != "i"]  # not claims
    sections = {row.message_id: (row.section, row.position) for row in rows}
    assert [sections[s.message.id] for s in stored] == [
        ("c", stored[0].position),
        ("e", stored[1].position),
        ("s", stored[2].position),
    ]
    latest = repository.find_latest(conversation, MessageType.EVENT)
    assert latest is not None
    assert latest.message == event
    assert latest.position == stored[1].position
    repository.delete_by_conversation_id(conversation)


@pytest.mark.parametrize(
    "shape",
    [
        # The first page ends in the event rows: the system rows are whole in it.
        [("e", 230), ("u", 40), ("s", 3), ("e", 3), ("u", 30)],
        # The first page ends in the chat rows: system and event rows are whole in it.
        [("u", 150), ("e", 20), ("s", 2), ("u", 120), ("e", 1), ("u", 5)],
        # The first page ends in the system rows: events and chat rows are read by pages.
        [("s", 150), ("e", 100), ("u", 60), ("s", 90)],
    ],
)
def test_a_long_history_with_events_is_read_in_order(
    repository: CassandraChatMemoryRepository, shape: list[tuple[str, int]]
) -> None:
    conversation = cid()

    def make(kind: str, label: str) -> Message:
        if kind == "e":
            return EventMessage("acme.tick", {"label": label})
        return (SystemMessage if kind == "s" else UserMessage)(label)

    messages = [
        make(kind, f"{kind}{n}:{i}") for n, (kind, count) in enumerate(shape) for i in range(count)
    ]
    try:
        for start in range(0, len(messages), 100):
            repository.append(conversation, messages[start : start + 100])
        expected = [_label(m) for m in messages]
        assert [_label(m) for m in repository.find_by_conversation_id(conversation)] == expected
        assert repository.count_messages(conversation) == len(messages)
        history = repository.find_history(conversation, after=7, limit=len(messages))
        assert [_label(s.message) for s in history] == expected[7:]
        assert [s.position for s in history] == list(range(8, len(messages) + 1))
        events = repository.find_history(conversation, types=[MessageType.EVENT], limit=1000)
        assert [_label(s.message) for s in events] == [
            _label(m) for m in messages if isinstance(m, EventMessage)
        ]
    finally:
        repository.delete_by_conversation_id(conversation)


def test_delete_between_keeps_the_current_system_message_and_claims(
    session: Session, repository: CassandraChatMemoryRepository
) -> None:
    conversation = cid()
    written: list[Message] = [UserMessage("u1"), SystemMessage("s"), AssistantMessage("a1")]
    written += [EventMessage("acme.x", {"label": "e"}), UserMessage("u2")]
    stored = repository.append(conversation, written)
    version = repository.find_version(conversation)
    assert repository.delete_between(conversation, None, stored[2].position) == 2
    assert repository.delete_between(conversation, stored[4].position, 10**9) == 0
    assert repository.delete_between(conversation, stored[4].position, stored[0].position) == 0
    assert [_label(m) for m in repository.find_by_conversation_id(conversation)] == ["s", "e", "u2"]
    system, window = repository.find_window(conversation, 10)
    assert system is not None
    assert system.message == written[1]
    assert [s.message for s in window] == [written[4]]
    assert repository.count_messages(conversation) == 3
    assert repository.find_version(conversation) == version  # deletes keep the counter
    # The claims stay: a late retry of a deleted message stores nothing.
    assert repository.append(conversation, [written[0]]) == []
    assert repository.find_version(conversation) == version
    repository.delete_by_conversation_id(conversation)
    assert repository.delete_between(conversation, None, 10) == 0


def test_a_checked_append_skips_stored_ids_at_its_version(
    repository: CassandraChatMemoryRepository,
) -> None:
    conversation = cid()
    first = UserMessage("q")
    repository.append(conversation, [first])
    fresh = AssistantMessage("a")
    stored = repository.append(conversation, [first, fresh], expected_version=1)
    assert [(s.position, s.message) for s in stored] == [(2, fresh)]
    assert repository.append(conversation, [first, fresh], expected_version=2) == []
    assert repository.find_version(conversation) == 2
    with pytest.raises(VersionConflictError) as raised:
        repository.append(conversation, [], expected_version=1)
    assert raised.value.actual_version == 2
    assert repository.append(conversation, [], expected_version=2) == []
    repository.delete_by_conversation_id(conversation)


def test_another_process_sees_the_version_and_checks_against_it(session: Session) -> None:
    # Two repositories stand for two processes: each knows only the counter it last saw.
    mine = CassandraChatMemoryRepository(session, keyspace=KEYSPACE)
    other = CassandraChatMemoryRepository(session, keyspace=KEYSPACE)
    conversation = cid()
    try:
        mine.append(conversation, [UserMessage("a"), AssistantMessage("b")])
        assert other.find_version(conversation) == 2
        other.append(conversation, [UserMessage("c")], expected_version=2)
        with pytest.raises(VersionConflictError) as raised:
            mine.append(conversation, [UserMessage("late")], expected_version=2)
        assert raised.value.actual_version == 3
        mine.append(conversation, [UserMessage("d")])  # the rejected batch told the counter
        other.save_all(conversation, [UserMessage("x")])  # other's guess is stale: one more round
        assert mine.find_version(conversation) == 5
        assert [s.position for s in mine.find_history(conversation)] == [5]
        mine.delete_by_conversation_id(conversation)
        assert other.find_version(conversation) == 0
        assert [
            s.position for s in other.append(conversation, [UserMessage("new")], expected_version=0)
        ] == [1]
    finally:
        mine.delete_by_conversation_id(conversation)
        mine.close()
        other.close()


@pytest.mark.parametrize("ttl", [None, 3600])
def test_round_trips_of_the_session_log(session: Session, ttl: int | None) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace=KEYSPACE, ttl=ttl)
    conversation = cid()
    repository.append(conversation, [UserMessage("a"), UserMessage("b")])
    counter = Counter(session)
    # With a TTL every write also sends the listing rows, at the same time.
    alongside = 1 if ttl else 0
    try:
        assert counter.measure(lambda: repository.find_version(conversation)) == 1
        # The version check is the batch's own condition: no read before it.
        checked = repository.append
        assert (
            counter.measure(lambda: checked(conversation, [UserMessage("c")], expected_version=2))
            == 1 + alongside
        )
        # A stale one is refused by the same one batch.
        before = counter.count
        with pytest.raises(VersionConflictError):
            checked(conversation, [UserMessage("x")], expected_version=2)
        assert counter.count - before == 1 + alongside
        # The count, then one conditional batch.
        assert counter.measure(lambda: repository.delete_between(conversation, 1, 2)) == 2
        assert counter.measure(lambda: repository.save_all(conversation, [UserMessage("y")])) == 2
        assert repository.find_version(conversation) == 4
    finally:
        counter.remove()
        repository.delete_by_conversation_id(conversation)
        repository.close()


def test_ttl_versions_and_events_expire_with_the_conversation(session: Session) -> None:
    repository = CassandraChatMemoryRepository(session, keyspace=KEYSPACE, ttl=1)
    conversation = cid()
    try:
        event = EventMessage("acme.audit", {"label": "e"})
        repository.append(conversation, [UserMessage("u"), event], expected_version=0)
        assert repository.find_version(conversation) == 2
        wait_until(
            lambda: repository.find_version(conversation) == 0,
            within=30,
            reason="Cassandra expires a conversation with a 1 s TTL",
        )
        assert repository.find_by_conversation_id(conversation) == []
        assert repository.find_latest(conversation, MessageType.EVENT) is None
        assert repository.count_messages(conversation) == 0
        assert _rows(session, conversation)  # invisible to reads, still on disk
        with pytest.raises(VersionConflictError) as raised:
            repository.append(conversation, [UserMessage("stale")], expected_version=2)
        assert raised.value.actual_version == 0
        # Version 0 holds for an expired conversation: it starts anew, nothing comes back.
        stored = repository.append(conversation, [event, UserMessage("again")], expected_version=0)
        assert [s.position for s in stored] == [1, 2]
        assert [_label(m) for m in repository.find_by_conversation_id(conversation)] == [
            "e",
            "again",
        ]
        assert repository.find_version(conversation) == 2
    finally:
        repository.delete_by_conversation_id(conversation)
        repository.close()
