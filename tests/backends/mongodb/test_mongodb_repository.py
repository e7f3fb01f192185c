"""MongoDB-specific behaviour on FerretDB 1.24: options, TTL and purges, round trips, faults."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId
from pymongo import monitoring

from chatmem import MessageWindowChatMemory
from chatmem.exceptions import ConfigurationError, RepositoryConnectionError
from chatmem.messages import AssistantMessage, Message, SystemMessage, UserMessage
from chatmem.testing import ManualClock
from chatmem_repositories import create_repository
from chatmem_repositories.mongodb import AsyncMongoChatMemoryRepository, MongoChatMemoryRepository
from chatmem_repositories.mongodb._codec import whole_batches

pytestmark = pytest.mark.backend("mongodb")
SERVER_SCRIPTS = Path(__file__).resolve().parents[3] / "scripts" / "servers" / "ferretdb"


class CommandCounter(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_options_split_between_chatmem_and_pymongo(mongodb_url: str, mongodb_prefix: str) -> None:
    repository = create_repository(
        f"{mongodb_url}?collection_prefix={mongodb_prefix}&appName=chatmem-test&ttl=60",
        socketTimeoutMS=3000,
    )
    try:
        assert isinstance(repository, MongoChatMemoryRepository)
        assert repository._messages.name == mongodb_prefix + "messages"
        assert repository._client.options.pool_options.socket_timeout == 3.0
        assert repository._client.options.server_selection_timeout == 5.0  # bounded default
    finally:
        repository.close()
    with pytest.raises(ConfigurationError, match="colection_prefix"):
        create_repository(f"{mongodb_url}?colection_prefix=x")
    with pytest.raises(ConfigurationError, match="nosuchoption"):
        create_repository(mongodb_url, nosuchoption=1)
    with pytest.raises(ConfigurationError, match="ttl"):
        create_repository(mongodb_url, ttl=-1)


def test_password_never_shown() -> None:
    repository = MongoChatMemoryRepository.from_url("mongodb://u:s3cret@127.0.0.1:1/db")
    try:
        assert "s3cret" not in repr(repository)
    finally:
        repository.close()


def test_hostile_id_is_a_value_not_a_query(mongodb_url: str, mongodb_prefix: str) -> None:
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix
    ) as repository:
        repository.append("victim", [UserMessage("private")])
        hostile = '{"$ne": null}'
        repository.append(hostile, [UserMessage("mine")])
        assert [m.text for m in repository.find_by_conversation_id(hostile)] == ["mine"]  # type: ignore[union-attr]
        assert repository.find_history(hostile, text=".*") == []
        assert repository.find_history("victim", text="PRIV")[0].message.text == "private"  # type: ignore[union-attr]


def test_two_second_ttl_removes_everything(mongodb_url: str, mongodb_prefix: str) -> None:
    # FerretDB has no TTL index: the stored expiry decides, against the repository's clock.
    clock = ManualClock()
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=2, clock=clock
    ) as repository:
        cid = f"owner-{uuid.uuid4().hex}:c"
        repository.append(cid, [SystemMessage("s"), UserMessage("u"), AssistantMessage("a")])
        assert not repository.native_ttl  # FerretDB: no TTL index, stored expiry instead
        assert len(repository.find_by_conversation_id(cid)) == 3
        clock.advance(1.9)
        assert len(repository.find_by_conversation_id(cid)) == 3
        clock.advance(0.2)
        assert repository.find_by_conversation_id(cid) == []
        assert repository.find_system_message(cid) is None
        assert repository.find_recent(cid, 10) == []
        assert cid not in repository.find_conversation_ids()
        assert repository.list_conversations(owner=cid.split(":")[0]).conversation_ids == []
        assert repository.purge_expired() == 1
        assert repository._messages.count_documents({"conversation_id": cid}) == 0
        assert repository._conversations.count_documents({"_id": cid}) == 0


REVIVED = 30  # conversations revived while purges run; each race is a chance to lose one
REVIVERS = 4


def _expire_conversations(mongodb_url: str, mongodb_prefix: str) -> tuple[list[str], ManualClock]:
    # Written with a 1-second TTL; the tests revive them through a long-TTL repository on the
    # same collections and the same clock, so the revived conversations cannot expire again
    # before the checks. FerretDB has no TTL index: the stored expiry and the clock decide.
    cids = [f"revive-{i}-{uuid.uuid4().hex[:8]}" for i in range(REVIVED)]
    clock = ManualClock()
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=1, clock=clock
    ) as short:
        assert not short.native_ttl
        for cid in cids:
            short.append(cid, [UserMessage("old")])
    clock.advance(1.5)  # every conversation has expired; none is purged yet
    return cids, clock


def test_append_reviving_an_expired_conversation_survives_concurrent_purges(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    cids, clock = _expire_conversations(mongodb_url, mongodb_prefix)
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60, clock=clock
    ) as repository:
        stop = threading.Event()
        errors: list[BaseException] = []

        def purge() -> None:
            try:
                while not stop.is_set():
                    repository.purge_expired()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        purgers = [threading.Thread(target=purge) for _ in range(2)]
        for thread in purgers:
            thread.start()

        def revive(cid: str) -> list[str | None]:
            repository.append(cid, [UserMessage("again")])
            return [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]

        try:
            # Several revivers at once, so more appends land inside a purge's first pass.
            with ThreadPoolExecutor(REVIVERS) as pool:
                during = dict(zip(cids, pool.map(revive, cids), strict=True))
        finally:
            stop.set()
            for thread in purgers:
                thread.join()
        assert errors == []
        after = {cid: [m.text for m in repository.find_by_conversation_id(cid)] for cid in cids}  # type: ignore[union-attr]
        assert {cid: t for cid, t in during.items() if t != ["again"]} == {}
        assert {cid: t for cid, t in after.items() if t != ["again"]} == {}
        assert repository.purge_expired() == 0
        assert repository._messages.count_documents({"text": "old"}) == 0


async def test_async_append_reviving_an_expired_conversation_survives_concurrent_purges(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    cids, clock = _expire_conversations(mongodb_url, mongodb_prefix)
    async with AsyncMongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60, clock=clock
    ) as repository:
        stop = asyncio.Event()

        async def purge() -> None:
            while not stop.is_set():
                await repository.purge_expired()

        async def texts(cid: str) -> list[str | None]:
            return [m.text for m in await repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]

        async def revive(cid: str) -> list[str | None]:
            await repository.append(cid, [UserMessage("again")])
            return await texts(cid)

        purgers = [asyncio.create_task(purge()) for _ in range(2)]
        try:
            reviving = asyncio.Semaphore(REVIVERS)

            async def revive_one(cid: str) -> list[str | None]:
                async with reviving:
                    return await revive(cid)

            revived = await asyncio.gather(*(revive_one(cid) for cid in cids))
            during = dict(zip(cids, revived, strict=True))
        finally:
            stop.set()
            await asyncio.gather(*purgers)
        after = {cid: await texts(cid) for cid in cids}
        assert {cid: t for cid, t in during.items() if t != ["again"]} == {}
        assert {cid: t for cid, t in after.items() if t != ["again"]} == {}
        assert await repository.purge_expired() == 0
        assert await repository._messages.count_documents({"text": "old"}) == 0


def test_live_messages_outlive_their_deleted_conversation_document(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    # FerretDB deletes by _id what a conditional delete's earlier read matched, so a purge can
    # delete the document of a conversation revived an instant after it read it as expired.
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60
    ) as repository:
        cid = f"orphaned-{uuid.uuid4()}"

        def texts() -> list[str | None]:
            return [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]

        repository.append(cid, [UserMessage("again")])
        repository._conversations.delete_one({"_id": cid})  # what the late delete does
        assert texts() == ["again"]
        assert repository.count_messages(cid) == 1
        assert [s.message.text for s in repository.find_recent(cid, 5)] == ["again"]  # type: ignore[union-attr]
        repository.append(cid, [UserMessage("next")])  # re-creates the document, keeps "again"
        assert texts() == ["again", "next"]
        assert cid in repository.find_conversation_ids()
        repository._conversations.delete_one({"_id": cid})
        repository.save_all(cid, [UserMessage("replaced")])  # a replacement keeps nothing
        assert texts() == ["replaced"]


def test_whole_batches_tells_a_hole_from_a_window_edge() -> None:
    def batch(first: int, size: int, *, system: tuple[int, ...] = ()) -> list[dict[str, Any]]:
        tag: dict[str, Any] = {"id": first, "first": first, "size": size}
        if system:
            tag["system"] = list(system)
        return [{"position": first + i, "batch": tag} for i in range(size)]

    def positions(documents: list[dict[str, Any]]) -> list[int]:
        return [d["position"] for d in documents]

    single = [{"position": 1}]
    pair, triple = batch(2, 2), batch(4, 3)
    assert positions(whole_batches(single + pair + triple)) == [1, 2, 3, 4, 5, 6]
    holed = single + pair + [triple[0], triple[2]]
    assert positions(whole_batches(holed)) == [1, 2, 3]
    # Newest first, cut by the limit at position 5: the window's far edge, not a hole.
    window = list(reversed(triple))[:2]
    assert positions(whole_batches(window, low=5)) == [6, 5]
    assert positions(whole_batches(window)) == []
    # Reads without system messages expect none; a page ending at position 5 expects no more.
    system_first = batch(7, 3, system=(0,))
    assert positions(whole_batches(system_first[1:], chat_only=True)) == [8, 9]
    assert positions(whole_batches(system_first[1:])) == []
    assert positions(whole_batches(triple[:2], high=5)) == [4, 5]


class DeleteAfterLookup(monitoring.CommandListener):
    """Deletes a conversation through another repository at one chosen moment of a retry.

    Right after the first ``find`` on the messages collection that follows an insert stopped
    by a duplicate key: the moment an append looks at which ids of its batch are stored. The
    delete runs on the driver's thread, before the append sends its next command.
    """

    def __init__(self) -> None:
        self.delete: Any = None  # set to a callable when the test is ready
        self.armed = False
        self.fired = False
        self._finds: set[int] = set()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        if event.command_name == "find" and str(command.get("find", "")).endswith("messages"):
            self._finds.add(event.request_id)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name == "insert" and event.reply.get("writeErrors"):
            self.armed = self.delete is not None and not self.fired
        elif self.armed and event.request_id in self._finds:
            self.armed, self.fired = False, True
            self.delete()

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_retry_racing_a_delete_never_leaves_part_of_its_batch(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    # The retry of a stored batch used to check its ids one by one and insert the rest; a
    # delete in between (memory.clear here, a purge of expired messages alike) removed the
    # ids it had found, and the rest was stored alone: reads showed part of the batch.
    listener = DeleteAfterLookup()
    cid = f"torn-{uuid.uuid4()}"
    batch = [UserMessage("u"), AssistantMessage("a"), AssistantMessage("b")]
    with (
        MongoChatMemoryRepository.from_url(
            mongodb_url,
            collection_prefix=mongodb_prefix,
            driver_options={"event_listeners": [listener]},
        ) as repository,
        MongoChatMemoryRepository.from_url(mongodb_url, collection_prefix=mongodb_prefix) as other,
    ):
        assert [s.message.id for s in repository.append(cid, batch)] == [m.id for m in batch]
        listener.delete = lambda: other.delete_by_conversation_id(cid)
        stored = repository.append(cid, batch)  # a retry: every id is stored
        assert listener.fired

        def texts() -> list[str | None]:
            return [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]

        # The delete may come before the retry or after it, never in the middle.
        assert (texts(), [s.message.text for s in stored]) in (
            ([], []),
            (["u", "a", "b"], ["u", "a", "b"]),
        )
        assert [s.message.text for s in repository.find_recent(cid, 10)] in ([], ["u", "a", "b"])  # type: ignore[union-attr]
        again = repository.append(cid, batch)  # exactly once: all of it now, or nothing
        assert texts() == ["u", "a", "b"]
        assert len(again) in (0, 3)


def test_reads_hide_part_of_a_batch_and_a_retry_stores_it_whole(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60
    ) as repository:
        cid = f"part-{uuid.uuid4()}"
        repository.append(cid, [UserMessage("u0"), AssistantMessage("a0")])
        batch = [SystemMessage("s"), UserMessage("u"), AssistantMessage("a"), AssistantMessage("b")]
        repository.append(cid, batch)
        # What a multi-document delete racing the insert can leave on MongoDB.
        repository._messages.delete_one({"conversation_id": cid, "message_id": batch[2].id})

        def texts() -> list[str | None]:
            return [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]

        assert texts() == ["u0", "a0"]
        assert repository.count_messages(cid) == 2
        assert [s.message.text for s in repository.find_recent(cid, 2)] == ["u0", "a0"]  # type: ignore[union-attr]
        assert [s.message.text for s in repository.find_history(cid)] == ["u0", "a0"]  # type: ignore[union-attr]
        assert [s.message.text for s in repository.find_history(cid, text="u")] == ["u0"]  # type: ignore[union-attr]
        stored = repository.append(cid, batch)
        assert [s.message.text for s in stored] == ["s", "u", "a", "b"]  # type: ignore[union-attr]
        positions = [s.position for s in stored]
        assert positions == list(range(int(positions[0]), int(positions[0]) + 4))
        assert texts() == ["u0", "a0", "s", "u", "a", "b"]
        assert repository.count_messages(cid) == 6
        assert [s.message.text for s in repository.find_recent(cid, 2)] == ["a", "b"]  # type: ignore[union-attr]
        assert repository.append(cid, batch) == []


def test_a_retry_takes_live_copies_of_another_life_into_this_one(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60
    ) as repository:
        cid = f"stray-{uuid.uuid4()}"
        batch = [UserMessage("u"), AssistantMessage("a")]
        first = repository.append(cid, batch)
        # As if a purge had taken the document from under them and it had been re-created.
        repository._messages.update_many({"conversation_id": cid}, {"$set": {"gen": ObjectId()}})
        assert repository.find_by_conversation_id(cid) == []
        assert repository.count_messages(cid) == 0
        assert repository.append(cid, batch) == []  # stored already: they join this life
        assert repository.count_messages(cid) == 2
        assert repository.find_recent(cid, 5) == first  # where they were


def test_appends_after_a_retry_that_adopted_its_batch_come_after_it(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    # A delete racing an append can remove the conversation document and leave that append's
    # messages, live, at their positions. The retry that re-creates the document adopts them
    # and finds its batch stored; the counter must still pass them, or the next append would
    # be positioned (and read) before messages acknowledged earlier.
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, ttl=60
    ) as repository:
        cid = f"adopted-{uuid.uuid4()}"
        for n in range(4):
            repository.append(cid, [UserMessage(f"u{n}"), AssistantMessage(f"a{n}")])
        last = [UserMessage("u4"), AssistantMessage("a4")]
        repository.append(cid, last)
        # The delete: the messages it found, then the document; the last batch landed between.
        repository._messages.delete_many({"conversation_id": cid, "text": {"$nin": ["u4", "a4"]}})
        repository._conversations.delete_one({"_id": cid})
        assert repository.append(cid, last) == []  # stored already: they join this life
        repository.append(cid, [UserMessage("after")])
        texts = [m.text for m in repository.find_by_conversation_id(cid)]
        assert texts == ["u4", "a4", "after"]
        assert [s.message.text for s in repository.find_recent(cid, 2)] == ["a4", "after"]  # type: ignore[union-attr]


def test_delete_before_keeps_what_stays_of_a_batch_readable(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix
    ) as repository:
        cid = f"cut-{uuid.uuid4()}"
        first = repository.append(
            cid, [SystemMessage("s"), UserMessage("u1"), AssistantMessage("a1")]
        )
        repository.append(cid, [UserMessage("u2"), AssistantMessage("a2")])
        assert repository.delete_before(cid, first[2].position) == 1  # u1
        texts = [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]
        assert texts == ["s", "a1", "u2", "a2"]
        assert repository.count_messages(cid) == 4
        assert [s.message.text for s in repository.find_recent(cid, 3)] == ["a1", "u2", "a2"]  # type: ignore[union-attr]
        assert repository.find_system_message(cid).message.text == "s"  # type: ignore[union-attr]


class CommandTargets(CommandCounter):
    """Records each command and the suffix of its collection, as ``("find", "messages")``."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[tuple[str, str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        super().started(event)
        target = str(event.command.get(event.command_name, ""))
        self.targets.append((event.command_name, target.rsplit("_", 1)[-1]))


@pytest.mark.parametrize("ttl", [None, 3600])
def test_round_trips_per_append_and_read(
    mongodb_url: str, mongodb_prefix: str, ttl: int | None
) -> None:
    counter = CommandTargets()
    with MongoChatMemoryRepository.from_url(
        mongodb_url,
        collection_prefix=mongodb_prefix,
        ttl=ttl,
        driver_options={"event_listeners": [counter]},
    ) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=4)
        cid = f"rt-{uuid.uuid4()}"
        memory.add(cid, [SystemMessage("s"), UserMessage("u0"), AssistantMessage("a0")])
        for i in range(1, 6):
            counter.targets.clear()
            memory.add(cid, [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
            appended = [("findAndModify", "conversations"), ("insert", "messages")]
            if ttl is not None:  # FerretDB has no TTL index: the purge race check
                appended.append(("find", "conversations"))
            assert counter.targets == appended
            counter.targets.clear()
            texts = [m.text for m in memory.get(cid)]  # type: ignore[union-attr]
            # One find for the system message and the window, also once the system message
            # is older than the window; with a TTL, after the conversation document by _id
            # (its expiry and life), else near the newest position this repository wrote.
            read = [("find", "messages")]
            if ttl is not None:
                read.insert(0, ("find", "conversations"))
            assert counter.targets == read
            assert texts == ["s", f"u{i}", f"a{i}"]  # whole turns within the budget
            counter.targets.clear()
            assert repository.count_messages(cid) == 3 + 2 * i
            # The server counts: one aggregate, after the conversation document with a TTL.
            assert counter.targets == [*read[:-1], ("aggregate", "messages")]


def _window_history() -> list[list[Message]]:
    first: list[Message] = [
        SystemMessage("s1"),
        UserMessage("u0"),
        SystemMessage("s2"),
        AssistantMessage("a0"),
    ]
    return [first] + [[UserMessage(f"u{i}"), AssistantMessage(f"a{i}")] for i in range(1, 25)]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_window_read_when_the_counter_and_the_positions_disagree(
    mongodb_url: str, mongodb_prefix: str, is_async: bool
) -> None:
    # find_window reads near the conversation's position counter; when the stored
    # positions are not where the counter says (a counter behind them, as lost updates on
    # FerretDB leave it, or ahead of them after unused positions, or no document at all),
    # it reads what it could not tell and answers as the separate reads do. Each read is
    # by a repository that has not seen the conversation, so it reads the counter.
    counter = CommandCounter()
    options: dict[str, Any] = {
        "collection_prefix": mongodb_prefix,
        "initialize_schema": "never",
        "driver_options": {"event_listeners": [counter]},
    }
    cid = f"win-{uuid.uuid4()}"
    expected_commands = {"fits": 2, "behind": 3, "ahead": 3, "gap": 3, "no document": 3}

    def scenarios(repository: Any) -> Iterator[str]:
        for batch in _window_history():
            repository.append(cid, batch)
        messages, conversations = repository._messages, repository._conversations
        yield "fits"
        last = conversations.find_one({"_id": cid})["last_position"]
        conversations.update_one({"_id": cid}, {"$set": {"last_position": 3}})
        yield "behind"
        conversations.update_one({"_id": cid}, {"$set": {"last_position": last + 1000}})
        yield "ahead"
        conversations.update_one({"_id": cid}, {"$set": {"last_position": last}})
        messages.delete_many({"conversation_id": cid, "position": {"$gt": last - 12}})
        yield "gap"
        conversations.delete_one({"_id": cid})
        yield "no document"

    def check(name: str, window: Any, system: Any, recent: Any) -> None:
        assert len(counter.names) == expected_commands[name], (name, counter.names)
        assert window == (system, recent), name
        assert system is not None, name
        assert system.message.text == "s2", name
        assert len(recent) == 5, name

    with MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix
    ) as writer:
        for name in scenarios(writer):
            if is_async:

                async def read(name: str) -> None:
                    async with AsyncMongoChatMemoryRepository.from_url(
                        mongodb_url, **options
                    ) as fresh:
                        counter.names.clear()
                        window = await fresh.find_window(cid, 5)
                        sent = list(counter.names)
                        system = await fresh.find_system_message(cid)
                        recent = await fresh.find_recent(cid, 5)
                        counter.names[:] = sent
                        check(name, window, system, recent)

                asyncio.run(read(name))
                continue
            with MongoChatMemoryRepository.from_url(mongodb_url, **options) as fresh:
                counter.names.clear()
                window = fresh.find_window(cid, 5)
                sent = list(counter.names)
                system, recent = fresh.find_system_message(cid), fresh.find_recent(cid, 5)
                counter.names[:] = sent
                check(name, window, system, recent)


def test_window_read_after_another_process_wrote(mongodb_url: str, mongodb_prefix: str) -> None:
    # Without a TTL, a repository reads a window near the newest position it saw itself
    # (one find, no conversation document); another process appending many messages, or
    # deleting and re-creating the conversation, costs it one more query, never a wrong one.
    counter = CommandCounter()
    cid = f"hint-{uuid.uuid4()}"
    with (
        MongoChatMemoryRepository.from_url(
            mongodb_url,
            collection_prefix=mongodb_prefix,
            driver_options={"event_listeners": [counter]},
        ) as mine,
        MongoChatMemoryRepository.from_url(mongodb_url, collection_prefix=mongodb_prefix) as other,
    ):
        history = _window_history()
        for batch in history[:3]:
            mine.append(cid, batch)

        def read(commands: int) -> tuple[Any, list[Any]]:
            counter.names.clear()
            window = mine.find_window(cid, 5)
            assert len(counter.names) == commands, counter.names
            assert window == (mine.find_system_message(cid), mine.find_recent(cid, 5))
            return window

        assert read(1)[0].message.text == "s2"
        for batch in history[3:]:
            other.append(cid, batch)
        system, recent = read(2)  # far behind: the system message is read alone
        assert (system.message.text, recent[-1].message.text) == ("s2", "a24")
        assert read(1)[1] == recent
        other.delete_by_conversation_id(cid)
        other.append(cid, [SystemMessage("s3"), UserMessage("again"), AssistantMessage("ok")])
        system, recent = read(2)  # far ahead: the window is read again
        assert system.message.text == "s3"
        assert [s.message.text for s in recent] == ["again", "ok"]
        assert read(1)[1] == recent


@pytest.mark.skipif(not (SERVER_SCRIPTS / "stop.sh").exists(), reason="no FerretDB scripts")
def test_stopped_server_gives_connection_error_in_bounded_time(
    mongodb_url: str, mongodb_prefix: str
) -> None:
    repository = MongoChatMemoryRepository.from_url(
        mongodb_url, collection_prefix=mongodb_prefix, serverSelectionTimeoutMS=2000
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
