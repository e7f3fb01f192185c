"""An append whose applied batch is sent again reports what it stored.

cassandra-driver sends a request again to another node when the connection to the first one
breaks with the request in flight, applied or not; chatmem re-sends a batch whose Paxos round
timed out. Either way the second send of an applied batch is rejected, because its own
claims hold the ids. These tests send every conditional batch of one call twice against the
real server, as the driver does after a lost connection, and check that the call reports the
messages as stored by it, at their positions, stored once, while another call appending the
same ids still learns they were stored before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from chatmem import AssistantMessage, Message, UserMessage
from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from tests.support.servers import server_url


def open_repository(ttl: int | None = None) -> CassandraChatMemoryRepository:
    options = {} if ttl is None else {"ttl": ttl}
    return CassandraChatMemoryRepository.from_url(
        server_url("cassandra"), create_keyspace=True, **options
    )


@pytest.fixture
def repository() -> Iterator[CassandraChatMemoryRepository]:
    with open_repository() as repo:
        yield repo


@pytest.fixture(params=[None, 600], ids=["no-ttl", "ttl"])
def any_repository(request: pytest.FixtureRequest) -> Iterator[CassandraChatMemoryRepository]:
    """With and without a TTL (whose appends also keep the liveness cell)."""
    with open_repository(ttl=request.param) as repo:
        yield repo


def send_writes_twice(
    monkeypatch: pytest.MonkeyPatch, repo: CassandraChatMemoryRepository
) -> list[bool]:
    """Make every write batch of ``repo`` go to the server twice; the caller sees the second.

    Returns a list that gains one entry per write whose first send applied.
    """
    db = repo._db
    db.setup()
    applied_first: list[bool] = []
    execute, execute_all = db.execute, db.execute_all

    def twice(statement: Any, *, write: bool = False) -> Any:
        if write:
            first = execute(statement, write=True)
            if first and first[0].get("[applied]"):
                applied_first.append(True)
        return execute(statement, write=write)

    def twice_all(statements: Any, *, write: bool = False) -> Any:
        if write:
            first = execute_all(statements, write=True)
            if first[0] and first[0][0].get("[applied]"):
                applied_first.append(True)
        return execute_all(statements, write=write)

    monkeypatch.setattr(db, "execute", twice)
    monkeypatch.setattr(db, "execute_all", twice_all)
    return applied_first


def conversation() -> str:
    return f"resent-{uuid.uuid4()}"


def test_an_append_sent_again_reports_its_messages_as_stored(
    monkeypatch: pytest.MonkeyPatch, any_repository: CassandraChatMemoryRepository
) -> None:
    repo = any_repository
    cid = conversation()
    repo.append(cid, [UserMessage("before")])
    applied_first = send_writes_twice(monkeypatch, repo)
    messages: list[Message] = [UserMessage("q"), AssistantMessage("a")]

    stored = repo.append(cid, messages)

    assert applied_first, "the first send did not apply: nothing was re-sent"
    assert [(s.position, s.message.id) for s in stored] == [
        (2, messages[0].id),
        (3, messages[1].id),
    ]
    history = repo.find_history(cid)
    assert [s.message.id for s in history][1:] == [m.id for m in messages]
    assert repo.find_version(cid) == 3
    monkeypatch.undo()
    # Another call appending the same ids did not store them: it says so.
    assert repo.append(cid, messages) == []


def test_a_new_conversation_sent_again_reports_its_messages_as_stored(
    monkeypatch: pytest.MonkeyPatch, any_repository: CassandraChatMemoryRepository
) -> None:
    repo = any_repository
    cid = conversation()
    send_writes_twice(monkeypatch, repo)
    message = UserMessage("first")

    stored = repo.append(cid, [message])

    assert [(s.position, s.message.id) for s in stored] == [(1, message.id)]
    assert [s.message.id for s in repo.find_history(cid)] == [message.id]
    assert cid in repo.find_conversation_ids()


def test_a_version_checked_append_sent_again_reports_its_messages_as_stored(
    monkeypatch: pytest.MonkeyPatch, repository: CassandraChatMemoryRepository
) -> None:
    cid = conversation()
    repository.append(cid, [UserMessage("before")])
    applied_first = send_writes_twice(monkeypatch, repository)
    message = UserMessage("checked")

    # Without the call's own claims recognised, the second send reads as a conflict
    # (the conversation is at version 2, not 1) although the append was stored.
    stored = repository.append(cid, [message], expected_version=1)

    assert applied_first
    assert [(s.position, s.message.id) for s in stored] == [(2, message.id)]
    assert [s.message.id for s in repository.find_history(cid)][1:] == [message.id]
