"""The repository conformance suite. Every backend, built-in or third-party, runs it.

Subclass :class:`AsyncRepositoryConformance` in a test module and provide one fixture,
``repository_factory``: a callable that takes repository options (``ttl``, and ``clock`` when
``supports_clock`` is set) and returns a new, ready repository. Each test uses fresh
conversation ids, so the store need not be emptied between tests.

Example:
    ```python
    class TestMyBackend(AsyncRepositoryConformance):
        @pytest.fixture
        def repository_factory(self):
            async def factory(**options):
                return AsyncMyRepository(url, **options)
            return factory
    ```
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from chatmem._async.memory import AsyncMessageWindowChatMemory
from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncMessageCounter,
    AsyncWindowReader,
)
from chatmem._records import Position, StoredMessage
from chatmem._twins import async_run_all, async_sleep
from chatmem.conversation_ids import scoped_conversation_id
from chatmem.exceptions import InvalidConversationIdError, MessageDecodeError
from chatmem.messages import (
    AssistantMessage,
    Message,
    MessageType,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem.testing._async.session_conformance import AsyncSessionConformance
from chatmem.testing._clock import ManualClock
from chatmem.testing._samples import (
    HOSTILE_CONVERSATION_IDS,
    PREVIOUS_CODEC_RECORD,
    every_kind_of_message,
    reasoning_turns,
    tool_turn,
)

__all__ = ["AsyncRepositoryConformance"]

Factory = Callable[..., Awaitable[AsyncChatMemoryLog]]


def _ids(stored: list[StoredMessage]) -> list[str]:
    return [s.message.id for s in stored]


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m, "text", "") for m in messages]


def _assert_exact(read: Sequence[Message], written: Sequence[Message]) -> None:
    """Equal messages that encode to the same text: nothing added, dropped or reordered."""
    assert list(read) == list(written)
    assert [encode_message(m) for m in read] == [encode_message(m) for m in written]


class AsyncRepositoryConformance(AsyncSessionConformance):
    """Behaviour every repository must have. Subclass and provide ``repository_factory``.

    Includes the session log's behaviour (events, versions, rewinds and forks), from
    :class:`AsyncSessionConformance`.
    """

    concurrent_writers: ClassVar[int] = 16
    """Writers in the concurrency test."""
    appends_per_writer: ClassVar[int] = 200
    """Appends each writer makes in the concurrency test."""
    ttl_seconds: ClassVar[float] = 2.0
    """TTL used by the expiry tests; without a clock the test waits a little over twice as long."""
    supports_clock: ClassVar[bool] = False
    """True when ``repository_factory(clock=...)`` makes a repository that reads the time from
    ``clock`` (a callable returning an aware UTC datetime) for every expiry decision. The
    expiry tests then advance a :class:`~chatmem.testing.ManualClock` instead of sleeping.
    Leave it False for stores whose server enforces the TTL (Redis, Cassandra)."""

    @pytest.fixture
    async def repository(self, repository_factory: Factory) -> AsyncIterator[AsyncChatMemoryLog]:
        """A ready repository, closed after the test."""
        repository = await repository_factory()
        try:
            yield repository
        finally:
            await repository.aclose()

    @pytest.fixture
    def cid(self) -> str:
        """A conversation id no other test uses."""
        return f"conformance-{uuid.uuid4()}"

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        """Overwrite one stored record with bytes that do not decode.

        Backends that store encoded messages override this with a raw write.
        """
        pytest.skip("this backend stores message objects; there is nothing to corrupt")

    # -- the four methods ---------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_every_message_type_round_trips(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        messages = every_kind_of_message()
        stored = await repository.append(cid, messages)
        assert [s.message for s in stored] == messages
        assert await repository.find_by_conversation_id(cid) == messages
        recent = await repository.find_recent(cid, 10)
        assert [s.message for s in recent] == [m for m in messages if m.type != "system"]
        history = await repository.find_history(cid)
        assert [s.message for s in history] == messages

    @pytest.mark.asyncio
    async def test_large_and_empty_texts_round_trip(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        big = "🦆 ünïcode " + "x" * (1024 * 1024)
        messages: list[Message] = [UserMessage(big), AssistantMessage(""), UserMessage("")]
        await repository.append(cid, messages)
        assert await repository.find_by_conversation_id(cid) == messages

    @pytest.mark.asyncio
    async def test_nul_characters_round_trip_and_are_searchable(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        # Some stores reject NUL inside text; a message must still come back exactly.
        messages: list[Message] = [
            SystemMessage("sys\x00tem", metadata={"k\x00ey": "v\x00alue"}),
            UserMessage("a\x00b", metadata={"nested": ["x\x00y"]}),
            AssistantMessage(
                tool_calls=[ToolCall(id="call_nul", name="look\x00up", arguments='{"q":"c\x00d"}')]
            ),
            ToolResponseMessage(
                responses=[ToolResponse(id="call_nul", name="look\x00up", response_data="e\x00f")]
            ),
            AssistantMessage("ab, without NUL", metadata={"\x00": "\x00"}),
        ]
        # Two appends: with and without a system message, which some backends store apart.
        await repository.append(cid, messages[:1])
        await repository.append(cid, messages[1:])
        chat = [m for m in messages if not isinstance(m, SystemMessage)]
        assert await repository.find_by_conversation_id(cid) == messages
        assert [s.message for s in await repository.find_recent(cid, 10)] == chat
        if isinstance(repository, AsyncWindowReader):
            system, recent = await repository.find_window(cid, 10)
            assert system is not None
            assert system.message == messages[0]
            assert [s.message for s in recent] == chat
        assert [s.message for s in await repository.find_history(cid)] == messages

        async def hits(text: str) -> list[Message]:
            return [s.message for s in await repository.find_history(cid, text=text)]

        assert await hits("A\x00B") == [messages[1]]
        assert await hits('"c\x00d"') == [messages[2]]
        assert await hits("e\x00f") == [messages[3]]
        assert await hits("\x00tem") == [messages[0]]
        assert await hits("\x00") == messages[:4]
        assert await hits("ab") == [messages[4]]

    @pytest.mark.asyncio
    async def test_unknown_conversation_is_empty(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        assert await repository.find_by_conversation_id(cid) == []
        assert await repository.find_recent(cid, 5) == []
        assert await repository.find_system_message(cid) is None
        assert await repository.find_latest(cid, MessageType.USER) is None
        assert await repository.find_history(cid) == []
        assert await repository.delete_before(cid, (await self._one_position(repository))) == 0
        await repository.delete_by_conversation_id(cid)  # not an error
        assert cid not in await repository.find_conversation_ids()

    async def _one_position(self, repository: AsyncChatMemoryLog) -> Position:
        # A real position from another conversation, so any backend's type is valid here.
        other = f"conformance-{uuid.uuid4()}"
        stored = await repository.append(other, [UserMessage("x")])
        return stored[0].position

    @pytest.mark.asyncio
    async def test_save_all_replaces_and_empty_deletes(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        await repository.save_all(cid, [UserMessage("old"), AssistantMessage("old")])
        new: list[Message] = [SystemMessage("s"), UserMessage("new"), AssistantMessage("new")]
        await repository.save_all(cid, new)
        assert await repository.find_by_conversation_id(cid) == new
        assert cid in await repository.find_conversation_ids()
        await repository.save_all(cid, [])
        assert await repository.find_by_conversation_id(cid) == []
        assert cid not in await repository.find_conversation_ids()

    @pytest.mark.asyncio
    async def test_delete_is_exact(self, repository: AsyncChatMemoryLog, cid: str) -> None:
        for suffix in ("", ":b", "b", "%", "_"):
            await repository.append(cid + suffix, [UserMessage(suffix or "plain")])
        await repository.delete_by_conversation_id(cid)
        assert await repository.find_by_conversation_id(cid) == []
        for suffix in (":b", "b", "%", "_"):
            assert _texts(await repository.find_by_conversation_id(cid + suffix)) == [suffix]
        ids = await repository.find_conversation_ids()
        assert cid not in ids
        assert {cid + ":b", cid + "b"} <= set(ids)

    # -- appends, positions, idempotency -----------------------------------------------------

    @pytest.mark.asyncio
    async def test_positions_follow_append_order_not_clock(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        same = datetime(2030, 1, 1, tzinfo=UTC)
        earlier = datetime(2000, 1, 1, tzinfo=UTC)
        batch: list[Message] = [UserMessage(f"tie {i}", created_at=same) for i in range(5)]
        batch.append(UserMessage("from the past", created_at=earlier))
        first = await repository.append(cid, batch[:3])
        second = await repository.append(cid, batch[3:])
        positions = [s.position for s in first + second]
        assert len(set(positions)) == len(positions)
        if all(isinstance(p, int) for p in positions):
            assert positions == sorted(positions)
        assert await repository.find_by_conversation_id(cid) == batch
        assert [s.message for s in await repository.find_recent(cid, 10)] == batch

    @pytest.mark.asyncio
    async def test_reappending_same_ids_adds_nothing(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        messages: list[Message] = [UserMessage("a"), AssistantMessage("b")]
        assert len(await repository.append(cid, messages)) == 2
        assert await repository.append(cid, messages) == []
        again = await repository.append(cid, [messages[1], UserMessage("c")])
        assert [s.message.text for s in again] == ["c"]  # type: ignore[union-attr]
        assert _texts(await repository.find_by_conversation_id(cid)) == ["a", "b", "c"]
        duplicate_in_batch = UserMessage("d")
        added = await repository.append(cid, [duplicate_in_batch, duplicate_in_batch])
        assert len(added) == 1
        assert _texts(await repository.find_by_conversation_id(cid)) == ["a", "b", "c", "d"]
        assert await repository.append(cid, []) == []

    @pytest.mark.asyncio
    async def test_concurrent_writers_lose_nothing(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        writers, per_writer = self.concurrent_writers, self.appends_per_writer

        def writer(w: int) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                for i in range(per_writer):
                    await repository.append(cid, [UserMessage(f"{w}:{i}")])

            return run

        await async_run_all([writer(w) for w in range(writers)])
        history = await repository.find_by_conversation_id(cid)
        texts = _texts(history)
        assert len(texts) == writers * per_writer
        assert len(set(texts)) == writers * per_writer
        assert len({m.id for m in history}) == writers * per_writer
        for w in range(writers):  # each writer's own appends stay in its order
            own = [int(t.split(":")[1]) for t in texts if t.startswith(f"{w}:")]
            assert own == list(range(per_writer))
        recent = await repository.find_recent(cid, 50)
        assert [s.message for s in recent] == history[-50:]

    # -- bounded reads ----------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_find_recent_pages_backwards_skipping_system(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        messages: list[Message] = [SystemMessage("s1")]
        messages += [UserMessage(f"m{i}") for i in range(10)]
        messages.insert(5, SystemMessage("s2"))
        await repository.append(cid, messages)
        chat = [m for m in messages if not isinstance(m, SystemMessage)]
        newest = await repository.find_recent(cid, 4)
        assert [s.message for s in newest] == chat[-4:]
        older = await repository.find_recent(cid, 4, before=newest[0].position)
        assert [s.message for s in older] == chat[-8:-4]
        oldest = await repository.find_recent(cid, 4, before=older[0].position)
        assert [s.message for s in oldest] == chat[:-8]
        assert await repository.find_recent(cid, 0) == []
        assert [s.message for s in await repository.find_recent(cid, 100)] == chat

    @pytest.mark.asyncio
    async def test_system_message_and_latest_by_type(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        await repository.append(cid, [UserMessage("u1")])
        assert await repository.find_system_message(cid) is None
        await repository.append(cid, [SystemMessage("first"), AssistantMessage("a1")])
        await repository.append(cid, [SystemMessage("second"), UserMessage("u2")])
        system = await repository.find_system_message(cid)
        assert system is not None
        assert system.message.text == "second"  # type: ignore[union-attr]
        latest_user = await repository.find_latest(cid, MessageType.USER)
        assert latest_user is not None
        assert latest_user.message.text == "u2"  # type: ignore[union-attr]
        latest_assistant = await repository.find_latest(cid, MessageType.ASSISTANT)
        assert latest_assistant is not None
        assert latest_assistant.message.text == "a1"  # type: ignore[union-attr]
        assert await repository.find_latest(cid, MessageType.TOOL) is None

    @pytest.mark.asyncio
    async def test_find_window_matches_separate_reads(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        if not isinstance(repository, AsyncWindowReader):
            pytest.skip("optional capability: this repository has no combined window read")
        assert await repository.find_window(cid, 5) == (None, [])
        await repository.append(cid, [UserMessage(f"u{i}") for i in range(3)])
        assert await repository.find_window(cid, 5) == (None, await repository.find_recent(cid, 5))
        await repository.append(
            cid, [SystemMessage("s1"), AssistantMessage("a"), SystemMessage("s2")]
        )
        system, recent = await repository.find_window(cid, 2)
        assert system == await repository.find_system_message(cid)
        assert system is not None
        assert system.message.text == "s2"  # type: ignore[union-attr]
        assert recent == await repository.find_recent(cid, 2)
        assert _texts([s.message for s in recent]) == ["u2", "a"]
        assert (await repository.find_window(cid, 0))[1] == []

    @pytest.mark.asyncio
    async def test_count_messages_matches_the_history(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        if not isinstance(repository, AsyncMessageCounter):
            pytest.skip("optional capability: this repository does not count messages")
        assert await repository.count_messages(cid) == 0
        first: list[Message] = [SystemMessage("s"), UserMessage("u1"), AssistantMessage("a1")]
        await repository.append(cid, first)
        stored = await repository.append(cid, [*first, UserMessage("u2"), AssistantMessage("a2")])
        assert await repository.count_messages(cid) == 5
        assert await repository.delete_before(cid, stored[0].position) == 2
        assert await repository.count_messages(cid) == 3
        assert len(await repository.find_by_conversation_id(cid)) == 3
        await repository.save_all(cid, [UserMessage("only")])
        assert await repository.count_messages(cid) == 1
        await repository.delete_by_conversation_id(cid)
        assert await repository.count_messages(cid) == 0

    # -- listing and owners ------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_list_conversations_pages_by_owner(self, repository: AsyncChatMemoryLog) -> None:
        owner = f"owner-{uuid.uuid4()}"
        other = f"other-{uuid.uuid4()}"
        mine = {scoped_conversation_id(owner, f"c{i}") for i in range(7)}
        theirs = {scoped_conversation_id(other, f"c{i}") for i in range(3)}
        lookalike = scoped_conversation_id(owner + "x", "c0")
        for conversation_id in mine | theirs | {lookalike}:
            await repository.append(conversation_id, [UserMessage("hi")])
        seen: list[str] = []
        cursor = None
        for _ in range(10):
            page = await repository.list_conversations(owner=owner, limit=3, cursor=cursor)
            assert len(page.conversation_ids) <= 3
            seen += page.conversation_ids
            cursor = page.next_cursor
            if cursor is None:
                break
        assert sorted(seen) == sorted(mine)
        everything = await repository.find_conversation_ids()
        assert mine | theirs | {lookalike} <= set(everything)
        one_of_theirs = sorted(theirs)[0]
        await repository.delete_by_conversation_id(one_of_theirs)
        page = await repository.list_conversations(owner=other, limit=100)
        assert sorted(page.conversation_ids) == sorted(theirs - {one_of_theirs})

    # -- history queries -----------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_history_filters_by_type_time_and_text(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        texts = [
            "plain words",
            "100% sure",
            "snake_case name",
            "back\\slash",
            "it's quoted",
            "MiXeD CaSe",
        ]
        messages: list[Message] = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(
                text, created_at=t0 + timedelta(minutes=i)
            )
            for i, text in enumerate(texts)
        ]
        messages += tool_turn("tool question", "tool answer", "call_x")
        await repository.append(cid, messages)

        async def texts_for(**query: Any) -> list[str]:
            return _texts([s.message for s in await repository.find_history(cid, **query)])

        assert await texts_for(text="100%") == ["100% sure"]
        assert await texts_for(text="%") == ["100% sure"]
        assert await texts_for(text="_") == ["snake_case name"]
        assert await texts_for(text="\\") == ["back\\slash"]
        assert await texts_for(text="'") == ["it's quoted"]
        assert await texts_for(text="mixed case") == ["MiXeD CaSe"]
        assert await texts_for(text="no such text") == []
        tool_hits = await repository.find_history(cid, text="r", types=[MessageType.TOOL])
        assert [type(s.message) for s in tool_hits] == [ToolResponseMessage]
        users = await texts_for(types=[MessageType.USER])
        assert users == ["plain words", "snake_case name", "it's quoted", "tool question"]
        window = await texts_for(since=t0 + timedelta(minutes=1), until=t0 + timedelta(minutes=3))
        assert window == ["100% sure", "snake_case name"]
        first = await repository.find_history(cid, limit=4)
        assert _texts([s.message for s in first]) == texts[:4]
        rest = await repository.find_history(cid, after=first[-1].position, limit=100)
        assert [s.message for s in first + rest] == messages

    # -- retention ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_delete_before_keeps_system_messages(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        await repository.append(
            cid, [SystemMessage("s"), UserMessage("u1"), AssistantMessage("a1")]
        )
        stored = await repository.append(cid, [UserMessage("u2"), AssistantMessage("a2")])
        assert await repository.delete_before(cid, stored[0].position) == 2
        assert _texts(await repository.find_by_conversation_id(cid)) == ["s", "u2", "a2"]
        system = await repository.find_system_message(cid)
        assert system is not None
        assert system.message.text == "s"  # type: ignore[union-attr]
        assert _texts([s.message for s in await repository.find_recent(cid, 10)]) == ["u2", "a2"]

    @pytest.mark.asyncio
    async def test_ttl_expires_whole_conversation(
        self, repository_factory: Factory, cid: str
    ) -> None:
        ttl = timedelta(seconds=self.ttl_seconds)
        clock = ManualClock() if self.supports_clock else None
        if clock is None:
            repository = await repository_factory(ttl=ttl)
        else:
            repository = await repository_factory(ttl=ttl, clock=clock)
        try:
            owner = f"ttl-{uuid.uuid4()}"
            expiring = scoped_conversation_id(owner, "c")
            await repository.append(expiring, [SystemMessage("s"), UserMessage("u")])
            assert len(await repository.find_by_conversation_id(expiring)) == 2
            if clock is None:
                await async_sleep(self.ttl_seconds * 2.5)
            else:
                # Just short of the TTL nothing has expired; just past it, everything has.
                clock.advance(ttl - timedelta(milliseconds=10))
                assert len(await repository.find_by_conversation_id(expiring)) == 2
                clock.advance(timedelta(milliseconds=20))
            assert await repository.find_by_conversation_id(expiring) == []
            if isinstance(repository, AsyncMessageCounter):
                assert await repository.count_messages(expiring) == 0
            assert await repository.find_recent(expiring, 10) == []
            assert await repository.find_system_message(expiring) is None
            page = await repository.list_conversations(owner=owner)
            assert page.conversation_ids == []
            assert expiring not in await repository.find_conversation_ids()
            assert await repository.purge_expired() >= 0
            if clock is not None:
                # The clock stands still, so the same repository restarts the conversation
                # and reads it back without any risk of expiring it in between.
                await repository.append(expiring, [UserMessage("again")])
                assert _texts(await repository.find_by_conversation_id(expiring)) == ["again"]
                return
            # Restarting an expired conversation starts it empty. A repository without TTL
            # does the re-append, so a slow machine cannot expire it again before the read.
            plain = await repository_factory()
            try:
                await plain.append(expiring, [UserMessage("again")])
                assert _texts(await plain.find_by_conversation_id(expiring)) == ["again"]
                await plain.delete_by_conversation_id(expiring)
            finally:
                await plain.aclose()
        finally:
            await repository.delete_by_conversation_id(expiring)
            await repository.aclose()

    @pytest.mark.asyncio
    async def test_ttl_counts_from_the_last_write(
        self, repository_factory: Factory, cid: str
    ) -> None:
        if not self.supports_clock:
            pytest.skip("needs supports_clock: without a clock this is a race against the TTL")
        ttl = timedelta(seconds=self.ttl_seconds)
        clock = ManualClock()
        repository = await repository_factory(ttl=ttl, clock=clock)
        try:
            await repository.append(cid, [UserMessage("u1")])
            clock.advance(ttl * 0.75)
            await repository.append(cid, [AssistantMessage("a1")])
            # Past the first write's TTL, within the second's: the whole conversation stays.
            clock.advance(ttl * 0.75)
            assert _texts(await repository.find_by_conversation_id(cid)) == ["u1", "a1"]
            assert _texts([s.message for s in await repository.find_recent(cid, 10)]) == [
                "u1",
                "a1",
            ]
            clock.advance(ttl * 0.5)
            assert await repository.find_by_conversation_id(cid) == []
        finally:
            await repository.delete_by_conversation_id(cid)
            await repository.aclose()

    # -- hostile input ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_hostile_conversation_ids_are_rejected_or_verbatim(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        await repository.append(cid, [UserMessage("bystander")])
        accepted = []
        for hostile in HOSTILE_CONVERSATION_IDS:
            try:
                await repository.append(hostile, [UserMessage(f"payload for {hostile!r}")])
            except InvalidConversationIdError:
                with pytest.raises(InvalidConversationIdError):
                    await repository.find_by_conversation_id(hostile)
                continue
            accepted.append(hostile)
        assert "" not in accepted
        assert "nul\x00inside" not in accepted
        assert "x" * 10_000 not in accepted
        for hostile in accepted:
            history = await repository.find_by_conversation_id(hostile)
            assert _texts(history) == [f"payload for {hostile!r}"]
        assert set(accepted) <= set(await repository.find_conversation_ids())
        for hostile in accepted:
            await repository.delete_by_conversation_id(hostile)
            assert await repository.find_by_conversation_id(hostile) == []
        assert _texts(await repository.find_by_conversation_id(cid)) == ["bystander"]

    @pytest.mark.asyncio
    async def test_invalid_ids_fail_before_io(self, repository: AsyncChatMemoryLog) -> None:
        for bad in ("", "a\x00b", "x" * 10_000):
            with pytest.raises(InvalidConversationIdError):
                await repository.append(bad, [UserMessage("x")])
            with pytest.raises(InvalidConversationIdError):
                await repository.find_recent(bad, 5)
            with pytest.raises(InvalidConversationIdError):
                await repository.delete_by_conversation_id(bad)

    @pytest.mark.asyncio
    async def test_corrupt_record_fails_clearly_and_spares_the_rest(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        stored = await repository.append(cid, [UserMessage(f"m{i}") for i in range(5)])
        bystander = f"{cid}-bystander"
        await repository.append(bystander, [UserMessage("fine")])
        await self.corrupt_stored_message(repository, cid, stored[2].position)
        with pytest.raises(MessageDecodeError) as caught:
            await repository.find_by_conversation_id(cid)
        assert cid in str(caught.value)
        newer = await repository.find_recent(cid, 2)
        assert _texts([s.message for s in newer]) == ["m3", "m4"]
        older = await repository.find_recent(cid, 2, before=stored[2].position)
        assert _texts([s.message for s in older]) == ["m0", "m1"]
        assert _texts(await repository.find_by_conversation_id(bystander)) == ["fine"]

    # -- reasoning models: reasoning parts, provider items, token usage -----------------------

    @pytest.mark.asyncio
    async def test_reasoning_parts_round_trip_exactly(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        messages = reasoning_turns()
        stored = await repository.append(cid, messages[:3])
        stored += await repository.append(cid, messages[3:])
        _assert_exact([s.message for s in stored], messages)
        chat = [m for m in messages if not isinstance(m, SystemMessage)]
        _assert_exact(await repository.find_by_conversation_id(cid), messages)
        _assert_exact([s.message for s in await repository.find_history(cid)], messages)
        _assert_exact([s.message for s in await repository.find_recent(cid, 100)], chat)
        newest = await repository.find_recent(cid, 3)
        older = await repository.find_recent(cid, 3, before=newest[0].position)
        _assert_exact([s.message for s in older + newest], chat[-6:])
        if isinstance(repository, AsyncWindowReader):
            system, recent = await repository.find_window(cid, 100)
            assert system is not None
            _assert_exact([system.message, *(s.message for s in recent)], messages)
        first = await repository.find_history(cid, limit=4)
        rest = await repository.find_history(cid, after=first[-1].position)
        _assert_exact([s.message for s in first + rest], messages)
        assistants = await repository.find_history(cid, types=[MessageType.ASSISTANT])
        _assert_exact(
            [s.message for s in assistants], [m for m in messages if m.type == "assistant"]
        )
        hits = await repository.find_history(cid, text="sunny in paris")
        _assert_exact([s.message for s in hits], [messages[4]])
        latest = await repository.find_latest(cid, MessageType.ASSISTANT)
        assert latest is not None
        _assert_exact([latest.message], [messages[-1]])

    @pytest.mark.asyncio
    async def test_reasoning_parts_survive_save_all(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        await repository.save_all(cid, [UserMessage("old"), AssistantMessage("old")])
        messages = reasoning_turns()
        await repository.save_all(cid, messages)
        _assert_exact(await repository.find_by_conversation_id(cid), messages)
        await repository.save_all(cid, messages[1:5])
        _assert_exact(await repository.find_by_conversation_id(cid), messages[1:5])

    @pytest.mark.asyncio
    async def test_a_record_of_the_previous_codec_reads_back_equal(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        old = decode_message(PREVIOUS_CODEC_RECORD)
        assert isinstance(old, AssistantMessage)
        assert (old.reasoning, old.provider_items, old.usage) == ([], [], None)
        # A message without the new fields is written exactly as the previous codec wrote it,
        # so the repository receives the very record a previous release stored.
        assert encode_message(old) == PREVIOUS_CODEC_RECORD
        new = reasoning_turns()
        mixed: list[Message] = [UserMessage("before"), old, *new[1:5], AssistantMessage("plain")]
        await repository.append(cid, mixed)
        history = await repository.find_by_conversation_id(cid)
        _assert_exact(history, mixed)
        assert encode_message(history[1]) == PREVIOUS_CODEC_RECORD

    @pytest.mark.asyncio
    async def test_memory_window_keeps_reasoning_with_its_message(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        messages = reasoning_turns()
        memory = AsyncMessageWindowChatMemory(repository, max_messages=10)
        await memory.add(cid, messages[:3])
        # The turn in progress: the tool calls are not answered yet, and are kept.
        _assert_exact(await memory.get(cid), messages[:3])
        await memory.add(cid, messages[3:])
        _assert_exact(await memory.get(cid), messages)
        small = AsyncMessageWindowChatMemory(repository, max_messages=6)
        _assert_exact(await small.get(cid), [messages[0], *messages[5:]])

    # -- memory on top of the repository ------------------------------------------------------

    @pytest.mark.asyncio
    async def test_message_window_memory_over_this_repository(
        self, repository: AsyncChatMemoryLog, cid: str
    ) -> None:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=5)
        await memory.add(cid, SystemMessage("be brief"))
        for i in range(3):
            await memory.add(cid, tool_turn(f"q{i}", f"a{i}", f"call_{i}"))
        await memory.add(cid, SystemMessage("be brief"))  # identical: ignored
        view = await memory.get(cid)
        assert isinstance(view[0], SystemMessage)
        assert [m.type for m in view[1:]] == ["user", "assistant", "tool", "assistant"]
        assert view[1].text == "q2"  # type: ignore[union-attr]
        history = await repository.find_by_conversation_id(cid)
        assert len(history) == 13  # nothing evicted, one system message
        await memory.clear(cid)
        assert await memory.get(cid) == []
