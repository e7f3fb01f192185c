"""MongoDB sessions on FerretDB 1.24: checked appends across repositories, delete_between."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import pytest
from pymongo import monitoring

from chatmem.exceptions import VersionConflictError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Message,
    SystemMessage,
    UserMessage,
)
from chatmem_repositories.mongodb import MongoChatMemoryRepository

pytestmark = pytest.mark.backend("mongodb")


class _Commands(monitoring.CommandListener):
    """Records ``(command, collection suffix)`` and runs ``before_reserve`` once, if armed."""

    def __init__(self) -> None:
        self.targets: list[tuple[str, str]] = []
        self.before_reserve: Any = None

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        target = str(event.command.get(event.command_name, ""))
        self.targets.append((event.command_name, target.rsplit("_", 1)[-1]))
        if event.command_name == "findAndModify" and self.before_reserve is not None:
            run, self.before_reserve = self.before_reserve, None
            run()

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def open_repository(mongodb_url: str, mongodb_prefix: str) -> Iterator[Any]:
    with ExitStack() as stack:

        def open_one(**options: Any) -> MongoChatMemoryRepository:
            repository = MongoChatMemoryRepository.from_url(
                mongodb_url, collection_prefix=mongodb_prefix, **options
            )
            return stack.enter_context(repository)

        yield open_one


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]  # type: ignore[union-attr]


def test_checked_appends_of_separate_repositories_at_one_version_one_wins(
    open_repository: Any,
) -> None:
    # Separate repositories do not share the per-conversation lock, as separate processes
    # would not: the unique position index alone decides.
    repositories = [open_repository() for _ in range(6)]
    cid = f"cas-{uuid.uuid4()}"
    repositories[0].append(cid, [UserMessage("start")])
    version = repositories[0].find_version(cid)
    ready = threading.Barrier(len(repositories))
    refused: list[VersionConflictError] = []

    def write(w: int) -> bool:
        ready.wait()
        try:
            repositories[w].append(cid, [AssistantMessage(f"w{w}")], expected_version=version)
        except VersionConflictError as exc:
            refused.append(exc)
            return False
        return True

    with ThreadPoolExecutor(len(repositories)) as pool:
        won = list(pool.map(write, range(len(repositories))))
    assert won.count(True) == 1
    assert {exc.expected_version for exc in refused} == {version}
    history = repositories[0].find_by_conversation_id(cid)
    assert _texts(history) == ["start", f"w{won.index(True)}"]
    assert repositories[0].find_version(cid) > version


def test_a_write_landing_after_the_check_refuses_the_checked_append(
    open_repository: Any,
) -> None:
    commands = _Commands()
    checked = open_repository(driver_options={"event_listeners": [commands]})
    other = open_repository()
    cid = f"late-{uuid.uuid4()}"
    checked.append(cid, [UserMessage("q")])
    version = checked.find_version(cid)
    # Another process appends between the version check and the insert: it reserves the
    # position right after the version, the one the checked append stores at.
    commands.before_reserve = lambda: other.append(cid, [AssistantMessage("other")])
    refused = UserMessage("refused")
    with pytest.raises(VersionConflictError) as raised:
        checked.append(cid, [refused, EventMessage("acme.x", {})], expected_version=version)
    assert raised.value.actual_version == other.find_version(cid) > version
    assert _texts(checked.find_by_conversation_id(cid)) == ["q", "other"]
    now = checked.find_version(cid)
    assert [s.message for s in checked.append(cid, [refused], expected_version=now)] == [refused]


def test_round_trips_of_versions(open_repository: Any) -> None:
    commands = _Commands()
    repository = open_repository(driver_options={"event_listeners": [commands]})
    cid = f"vrt-{uuid.uuid4()}"
    repository.append(cid, [UserMessage("q")])
    commands.targets.clear()
    version = repository.find_version(cid)
    read = [("find", "conversations"), ("find", "messages")]
    assert commands.targets == read
    commands.targets.clear()
    repository.append(cid, [AssistantMessage("a")], expected_version=version)
    assert commands.targets == [*read, ("findAndModify", "conversations"), ("insert", "messages")]
    commands.targets.clear()
    with pytest.raises(VersionConflictError):
        repository.append(cid, [UserMessage("stale")], expected_version=version)
    assert commands.targets == read  # refused before anything is written


def test_delete_between_keeps_what_stays_of_a_batch_readable_and_the_version(
    open_repository: Any,
) -> None:
    repository = open_repository()
    cid = f"between-{uuid.uuid4()}"
    event = EventMessage("acme.audit", {"n": 1})
    batch: list[Message] = [UserMessage("u1"), AssistantMessage("a1"), event]
    batch += [SystemMessage("s"), UserMessage("u2"), AssistantMessage("a2")]
    stored = repository.append(cid, batch)
    assert repository.delete_between(cid, stored[0].position, stored[4].position) == 2
    assert repository.find_by_conversation_id(cid) == [batch[i] for i in (0, 2, 3, 5)]
    assert [s.message for s in repository.find_recent(cid, 10)] == [batch[0], batch[5]]
    assert repository.count_messages(cid) == 4
    version = repository.find_version(cid)
    assert version == stored[5].position
    # Deleting the newest message leaves the version where it was: no position is reused.
    assert repository.delete_between(cid, stored[4].position, stored[5].position) == 1
    assert repository.find_version(cid) == version
    again = repository.append(cid, [UserMessage("again")], expected_version=version)
    assert again[0].position > stored[5].position
    assert repository.delete_between(cid, None, stored[5].position) == 1  # u1; none left
    assert repository.delete_between(cid, None, stored[5].position) == 0
    assert repository.find_by_conversation_id(cid) == [event, batch[3], again[0].message]
