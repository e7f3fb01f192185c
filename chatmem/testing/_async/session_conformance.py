"""Conformance of session logs: events, versions, rewinds and forks.

Part of :class:`~chatmem.testing.AsyncRepositoryConformance` (every backend runs it); kept
in its own module because it tests one capability, :class:`~chatmem.repository.AsyncSessionLog`,
and the session operations built on it (:class:`~chatmem.sessions.AsyncSessions`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem._async.memory import AsyncMessageWindowChatMemory
from chatmem._async.repository import AsyncSessionLog, AsyncSummaryStore
from chatmem._async.sessions import AsyncSessions
from chatmem._records import StoredMessage
from chatmem._sessions import FORKED_EVENT, REWIND_EVENT, REWOUND_EVENT, rewound_message
from chatmem._twins import async_run_all
from chatmem.exceptions import VersionConflictError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Message,
    MessageType,
    SystemMessage,
    UserMessage,
)

__all__ = ["AsyncSessionConformance"]


def _ids(stored: list[StoredMessage]) -> list[str]:
    return [s.message.id for s in stored]


def _turns(count: int, prefix: str = "") -> list[Message]:
    messages: list[Message] = []
    for i in range(count):
        messages += [UserMessage(f"{prefix}q{i}"), AssistantMessage(f"{prefix}a{i}")]
    return messages


class AsyncSessionConformance:
    """Events, versions, rewinds and forks: mixed into the repository conformance suite.

    Uses the ``repository`` and ``cid`` fixtures of
    :class:`~chatmem.testing.AsyncRepositoryConformance`.
    """

    # -- events -----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_events_are_kept_in_order_and_out_of_windows(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        audit = EventMessage("acme.audit", {"action": "login", "nested": {"n": [1, None]}})
        note = EventMessage("acme.note", {"text": "héllo \u2603"}, metadata={"k": "v"})
        written: list[Message] = [
            UserMessage("hi"),
            audit,
            SystemMessage("be brief"),
            AssistantMessage("hello"),
            note,
        ]
        stored = await repository.append(cid, written)
        assert _ids(stored) == [m.id for m in written]
        assert await repository.find_by_conversation_id(cid) == written
        assert [s.message for s in await repository.find_recent(cid, 10)] == [
            written[0],
            written[3],
        ]
        system, window = await repository.find_window(cid, 10)  # type: ignore[attr-defined]
        assert system is not None
        assert system.message == written[2]
        assert _ids(window) == [written[0].id, written[3].id]
        found = await repository.find_system_message(cid)
        assert found is not None
        assert found.message == written[2]
        latest = await repository.find_latest(cid, MessageType.EVENT)
        assert latest is not None
        assert latest.message == note
        events = await repository.find_history(cid, types=[MessageType.EVENT])
        assert [s.message for s in events] == [audit, note]
        assert [s.message for s in await repository.find_history(cid)] == written
        assert _ids(await repository.find_history(cid, text="LOGIN")) == [audit.id]
        count = getattr(repository, "count_messages", None)
        if count is not None:
            assert await count(cid) == 5

    @pytest.mark.asyncio
    async def test_events_are_idempotent_and_survive_eviction(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        event = EventMessage("acme.audit", {"n": 1})
        old = _turns(3)
        await repository.append(cid, [old[0], event, *old[1:]])
        assert await repository.append(cid, [event]) == []
        newest = (await repository.find_recent(cid, 1))[0]
        assert await repository.delete_before(cid, newest.position) == 5
        history = await repository.find_by_conversation_id(cid)
        assert history == [event, old[-1]]

    @pytest.mark.asyncio
    async def test_a_memory_never_reads_events(self, repository: AsyncSessionLog, cid: str) -> None:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=4)
        await memory.add(cid, [SystemMessage("sys"), *_turns(1)])
        await repository.append(cid, [EventMessage("acme.tick", {"i": i}) for i in range(6)])
        await memory.add(cid, _turns(1, "b"))
        got = await memory.get(cid)
        assert [m.text for m in got] == ["sys", "bq0", "ba0"]  # type: ignore[union-attr]

    # -- versions ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_versions_grow_with_every_stored_append(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        assert await repository.find_version(cid) == 0
        first = UserMessage("one")
        await repository.append(cid, [first])
        v1 = await repository.find_version(cid)
        assert v1 > 0
        assert await repository.append(cid, [first]) == []  # nothing stored: same version
        assert await repository.find_version(cid) == v1
        await repository.append(cid, [EventMessage("acme.audit", {})])
        v2 = await repository.find_version(cid)
        assert v2 > v1
        await repository.append(cid, [AssistantMessage("two")], expected_version=v2)
        v3 = await repository.find_version(cid)
        assert v3 > v2
        await repository.save_all(cid, [UserMessage("replaced")])
        assert await repository.find_version(cid) > v3
        await repository.delete_by_conversation_id(cid)
        assert await repository.find_version(cid) == 0

    @pytest.mark.asyncio
    async def test_a_stale_append_stores_nothing(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        await repository.append(cid, [UserMessage("q")], expected_version=0)
        stale = await repository.find_version(cid)
        await repository.append(cid, [AssistantMessage("a")])
        now = await repository.find_version(cid)
        late = UserMessage("late")
        with pytest.raises(VersionConflictError) as raised:
            await repository.append(cid, [late, EventMessage("acme.x", {})], expected_version=stale)
        assert raised.value.conversation_id == cid
        assert raised.value.expected_version == stale
        assert raised.value.actual_version == now
        assert [m.text for m in await repository.find_by_conversation_id(cid)] == ["q", "a"]  # type: ignore[union-attr]
        assert await repository.find_version(cid) == now
        with pytest.raises(VersionConflictError):
            await repository.append(cid, [late], expected_version=0)  # not empty any more
        # The refused message's id was not used up: it can still be appended.
        assert _ids(await repository.append(cid, [late], expected_version=now)) == [late.id]

    @pytest.mark.asyncio
    async def test_one_of_many_writers_at_one_version_wins(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        await repository.append(cid, [UserMessage("start")])
        version = await repository.find_version(cid)

        def writer(w: int) -> Callable[[], Awaitable[bool]]:
            async def run() -> bool:
                try:
                    await repository.append(
                        cid, [AssistantMessage(f"w{w}")], expected_version=version
                    )
                except VersionConflictError:
                    return False
                return True

            return run

        won = await async_run_all([writer(w) for w in range(8)])
        assert won.count(True) == 1
        texts = [m.text for m in await repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]
        assert texts == ["start", f"w{won.index(True)}"]

    # -- rewinds ----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_delete_between_keeps_system_messages_and_events(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        event = EventMessage("acme.audit", {})
        system = SystemMessage("sys")
        written: list[Message] = [UserMessage("u1"), AssistantMessage("a1"), event, system]
        written += [UserMessage("u2"), AssistantMessage("a2")]
        stored = await repository.append(cid, written)
        assert await repository.delete_between(cid, stored[0].position, stored[4].position) == 2
        kept = await repository.find_by_conversation_id(cid)
        assert [m.id for m in kept] == [written[i].id for i in (0, 2, 3, 5)]
        assert await repository.delete_between(cid, None, stored[5].position) == 2
        assert await repository.find_by_conversation_id(cid) == [event, system]

    @pytest.mark.asyncio
    async def test_rewind_takes_messages_back_into_the_history(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        sessions = AsyncSessions(repository)
        written = _turns(3)
        stored = await repository.append(cid, written)
        version = await repository.find_version(cid)
        taken = await sessions.rewind(cid, stored[1].position)
        assert [s.message for s in taken] == written[2:]
        assert [s.position for s in taken] == [s.position for s in stored[2:]]
        assert await repository.find_version(cid) > version
        window = await sessions.read_window(cid, 10)
        assert [s.message for s in window.messages] == written[:2]
        rewound = await sessions.read_history(cid, event_types=[REWOUND_EVENT])
        assert [rewound_message(s) for s in rewound.entries] == taken
        marks = await sessions.read_history(cid, event_types=[REWIND_EVENT])
        assert [e.message.payload["count"] for e in marks.entries] == [4]  # type: ignore[union-attr]
        assert await sessions.rewind(cid, stored[1].position) == []  # nothing after it now
        await repository.append(cid, [UserMessage("again")])
        window = await sessions.read_window(cid, 10)
        assert [s.message.text for s in window.messages] == ["q0", "a0", "again"]  # type: ignore[union-attr]
        with pytest.raises(VersionConflictError):
            await sessions.rewind(cid, None, expected_version=window.version - 1)
        assert (await sessions.read_window(cid, 10)).messages == window.messages

    @pytest.mark.asyncio
    async def test_pop_takes_back_the_newest_message(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        sessions = AsyncSessions(repository)
        assert await sessions.pop(cid) is None
        written = _turns(2)
        await repository.append(cid, [written[0], SystemMessage("s"), *written[1:]])
        popped = await sessions.pop(cid)
        assert popped is not None
        assert popped.message == written[-1]
        popped = await sessions.pop(cid)
        assert popped is not None
        assert popped.message == written[-2]
        window = await sessions.read_window(cid, 10)
        assert [s.message for s in window.messages] == written[:2]
        assert window.system is not None
        assert window.system.message.text == "s"  # type: ignore[union-attr]
        for _ in range(2):
            assert await sessions.pop(cid) is not None
        assert await sessions.pop(cid) is None
        assert len((await sessions.read_history(cid, event_types=[REWOUND_EVENT])).entries) == 4

    @pytest.mark.asyncio
    async def test_a_rewind_racing_appends_loses_nothing(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        sessions = AsyncSessions(repository)
        base = await repository.append(cid, _turns(2))
        appended = [UserMessage(f"late{i}") for i in range(12)]

        def appender(message: Message) -> Callable[[], Awaitable[Any]]:
            async def run() -> Any:
                return await repository.append(cid, [message])

            return run

        async def rewinder() -> Any:
            try:
                return await sessions.rewind(cid, base[1].position)
            except VersionConflictError:
                return None  # the appenders kept winning: allowed, nothing may be lost

        await async_run_all([rewinder, *(appender(m) for m in appended)])
        history = await repository.find_by_conversation_id(cid)
        in_chat = {m.id for m in history if not isinstance(m, EventMessage)}
        taken_back = {
            held.message.id
            for stored in (await sessions.read_history(cid, event_types=[REWOUND_EVENT])).entries
            if (held := rewound_message(stored)) is not None
        }
        for message in [*(s.message for s in base), *appended]:
            assert (message.id in in_chat) != (message.id in taken_back), message

    # -- forks ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_a_fork_starts_where_it_was_made_and_lives_on_its_own(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        sessions = AsyncSessions(repository, fork_carry=3)
        written: list[Message] = [SystemMessage("old rules"), *_turns(2)]
        written += [SystemMessage("new rules"), *_turns(2, "b")]
        stored = await repository.append(cid, written)
        fork_id = f"{cid}-fork"
        fork = await sessions.fork(cid, fork_id, at=stored[4].position)  # the reply a1
        assert (fork.conversation_id, fork.parent_id, fork.at) == (fork_id, cid, stored[4].position)
        window = await sessions.read_window(fork_id, 10)
        assert window.system is not None
        assert window.system.message == written[0]
        assert [s.message for s in window.messages] == written[2:5]  # the newest three
        parent = await sessions.find_parent(fork_id)
        assert parent is not None
        assert (parent.parent_id, parent.at) == (cid, stored[4].position)
        assert await sessions.find_parent(cid) is None
        assert [(f.conversation_id, f.at) for f in await sessions.list_forks(cid)] == [
            (fork_id, stored[4].position)
        ]
        with pytest.raises(VersionConflictError):
            await sessions.fork(cid, fork_id)
        await repository.append(fork_id, [UserMessage("only in the fork")])
        await repository.append(cid, [UserMessage("only in the parent")])
        fork_texts = [s.message.text for s in await repository.find_recent(fork_id, 2)]  # type: ignore[union-attr]
        parent_texts = [s.message.text for s in await repository.find_recent(cid, 1)]  # type: ignore[union-attr]
        assert fork_texts == ["a1", "only in the fork"]
        assert parent_texts == ["only in the parent"]
        # Deleting the parent leaves the fork whole.
        before = await repository.find_by_conversation_id(fork_id)
        await repository.delete_by_conversation_id(cid)
        assert await repository.find_by_conversation_id(fork_id) == before
        assert await sessions.list_forks(cid) == []
        still = await sessions.find_parent(fork_id)
        assert still is not None
        assert still.parent_id == cid
        memory = AsyncMessageWindowChatMemory(repository, max_messages=10)
        got = await memory.get(fork_id)
        assert got[0] == written[0]
        assert [m.text for m in got[-3:]] == ["q1", "a1", "only in the fork"]  # type: ignore[union-attr]

    @pytest.mark.asyncio
    async def test_a_fork_of_the_whole_conversation_carries_its_summary(
        self, repository: AsyncSessionLog, cid: str
    ) -> None:
        sessions = AsyncSessions(repository)
        stored = await repository.append(cid, _turns(3))
        summaries = repository if isinstance(repository, AsyncSummaryStore) else None
        if summaries is not None:
            assert await summaries.save_summary(
                cid, "they said hello", stored[1].position, expected_version=0
            )
        fork = await sessions.fork(cid, f"{cid}-whole")
        assert fork.at == stored[-1].position
        copied = await repository.find_recent(fork.conversation_id, 10)
        assert [s.message for s in copied] == [s.message for s in stored]
        if summaries is not None:
            summary = await summaries.find_summary(fork.conversation_id)
            assert summary is not None
            assert summary.text == "they said hello"
            assert summary.covers == copied[1].position
        events = await repository.find_history(cid, types=[MessageType.EVENT])
        assert [e.message.event_type for e in events] == [FORKED_EVENT]  # type: ignore[union-attr]
