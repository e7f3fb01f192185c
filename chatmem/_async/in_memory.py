"""The in-memory repository: the default, for tests, scripts and single-process apps."""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import ClassVar

from chatmem._summaries import ConversationSummary
from chatmem._version import __version__
from chatmem.backend import (
    AsyncLock,
    Clock,
    ConversationPage,
    Position,
    StoredMessage,
    check_clock,
    check_limit,
    conversation_page,
    matches_history_filters,
    normalize_ttl,
)
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import VersionConflictError
from chatmem.messages import Message, MessageType

__all__ = ["AsyncInMemoryChatMemoryRepository"]


class _Conversation:
    """One conversation's log, with the indexes the bounded queries need."""

    __slots__ = ("chat", "expires_at", "ids", "log", "next_position", "owner", "system")

    def __init__(self, conversation_id: str, next_position: int = 1) -> None:
        self.log: list[StoredMessage] = []  # every message and event, in position order
        self.chat: list[StoredMessage] = []  # user, assistant and tool messages, for windows
        self.system: StoredMessage | None = None
        self.ids: set[str] = set()
        self.next_position = next_position
        self.owner = owner_of(conversation_id)
        self.expires_at: datetime | None = None

    def add(self, message: Message) -> StoredMessage | None:
        if message.id in self.ids:
            return None
        stored = StoredMessage(self.next_position, message)
        self.next_position += 1
        self.ids.add(message.id)
        self.log.append(stored)
        if message.type == MessageType.SYSTEM:
            self.system = stored
        elif message.type != MessageType.EVENT:
            self.chat.append(stored)
        return stored

    @property
    def version(self) -> int:
        return self.next_position - 1


def _position_key(stored: StoredMessage) -> Position:
    return stored.position


class AsyncInMemoryChatMemoryRepository:
    """Keeps conversations in a dict in this process. Safe under concurrent tasks.

    Implements the full log contract, so memory reads cost O(window), and keeps summaries
    (:class:`~chatmem.repository.AsyncSummaryStore`). Messages are kept by reference (they
    are immutable). Nothing survives the process.

    Example:
        ```python
        repository = AsyncInMemoryChatMemoryRepository(ttl=timedelta(hours=1))
        await repository.append("007", [UserMessage("My name is James Bond")])
        recent = await repository.find_recent("007", limit=10)
        ```

    Args:
        ttl: Expire a conversation this long after its last write. ``None`` keeps it forever.
        clock: Returns the current time as an aware UTC datetime; every expiry decision
            reads it (the default is the system clock). Tests pass a
            :class:`~chatmem.testing.ManualClock` to step over a TTL without sleeping.
    """

    db_system: ClassVar[str] = "chatmem.in_memory"
    """The OpenTelemetry ``db.system.name`` of this store."""

    def __init__(
        self,
        *,
        ttl: timedelta | float | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._ttl = normalize_ttl(ttl)
        self._clock = check_clock(clock)
        self._conversations: dict[str, _Conversation] = {}
        self._summaries: dict[str, ConversationSummary] = {}
        self._lock = AsyncLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(conversations={len(self._conversations)})"

    async def server_version(self) -> str:
        """Return the store's product and version: this process's chatmem."""
        return f"chatmem in-memory {__version__}"

    # -- helpers (call with the lock held) -------------------------------------------------

    def _get(self, conversation_id: str) -> _Conversation | None:
        conversation = self._conversations.get(validate_conversation_id(conversation_id))
        if (
            conversation is not None
            and conversation.expires_at is not None  # no clock read without a ttl
            and self._expired(conversation, self._clock())
        ):
            del self._conversations[conversation_id]
            self._summaries.pop(conversation_id, None)
            return None
        return conversation

    @staticmethod
    def _expired(conversation: _Conversation, now: datetime) -> bool:
        return conversation.expires_at is not None and conversation.expires_at <= now

    def _touch(self, conversation: _Conversation) -> None:
        if self._ttl is not None:
            conversation.expires_at = self._clock() + self._ttl

    # -- Spring AI's four methods -----------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        async with self._lock:
            now = self._clock()
            return [cid for cid, c in self._conversations.items() if not self._expired(c, now)]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        async with self._lock:
            conversation = self._get(conversation_id)
            return [] if conversation is None else [s.message for s in conversation.log]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages; positions keep increasing, never reused."""
        async with self._lock:
            old = self._get(conversation_id)
            if not messages:
                self._conversations.pop(conversation_id, None)
                self._summaries.pop(conversation_id, None)
                return
            fresh = _Conversation(conversation_id, old.next_position if old else 1)
            for message in messages:
                fresh.add(message)
            self._touch(fresh)
            self._conversations[conversation_id] = fresh

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        async with self._lock:
            self._conversations.pop(conversation_id, None)
            self._summaries.pop(conversation_id, None)

    # -- log capabilities ---------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages; ids already stored are skipped.

        Raises:
            VersionConflictError: ``expected_version`` is given and is not the conversation's.
        """
        async with self._lock:
            conversation = self._get(conversation_id)
            if expected_version is not None:
                actual = 0 if conversation is None else conversation.version
                if actual != expected_version:
                    raise VersionConflictError(conversation_id, expected_version, actual)
            if conversation is None:
                if not messages:
                    return []
                conversation = _Conversation(conversation_id)
                self._conversations[conversation_id] = conversation
            added = [s for s in map(conversation.add, messages) if s is not None]
            self._touch(conversation)
            return added

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first."""
        check_limit(limit)
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None or limit == 0:
                return []
            chat = conversation.chat
            end = len(chat)
            if before is not None:
                end = bisect.bisect_left(chat, before, key=_position_key)
            return chat[max(0, end - limit) : end]

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: 0 if it holds nothing (or expired)."""
        async with self._lock:
            conversation = self._get(conversation_id)
            return 0 if conversation is None else conversation.version

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the system message and the newest ``limit`` chat messages."""
        check_limit(limit)
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None:
                return None, []
            return conversation.system, conversation.chat[-limit:] if limit else []

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired)."""
        async with self._lock:
            conversation = self._get(conversation_id)
            return 0 if conversation is None else len(conversation.log)

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest system message, or ``None``."""
        async with self._lock:
            conversation = self._get(conversation_id)
            return None if conversation is None else conversation.system

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None:
                return None
            for stored in reversed(conversation.log):
                if stored.message.type == message_type:
                    return stored
            return None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        async with self._lock:
            now = self._clock()
            ids = sorted(
                cid
                for cid, c in self._conversations.items()
                if not self._expired(c, now)
                and (owner is None or c.owner == owner)
                and (cursor is None or cid > cursor)
            )
        return conversation_page(ids, limit)

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every given filter, oldest first."""
        check_limit(limit)
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None:
                return []
            log = conversation.log
            start = 0
            if after is not None:
                start = bisect.bisect_right(log, after, key=_position_key)
            found: list[StoredMessage] = []
            for stored in log[start:]:
                if len(found) >= limit:
                    break
                if matches_history_filters(stored.message, since, until, types, text):
                    found.append(stored)
            return found

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages positioned before ``position``."""
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None:
                return 0
            doomed = {
                s.message.id
                for s in conversation.chat
                if s.position < position  # type: ignore[operator]
            }
            if not doomed:
                return 0
            conversation.chat = [s for s in conversation.chat if s.message.id not in doomed]
            conversation.log = [s for s in conversation.log if s.message.id not in doomed]
            # Ids stay remembered so a late retry of a deleted message is still a no-op.
            return len(doomed)

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete user, assistant and tool messages positioned in ``(after, through]``."""
        async with self._lock:
            conversation = self._get(conversation_id)
            if conversation is None:
                return 0
            doomed = {
                s.message.id
                for s in conversation.chat
                if (after is None or s.position > after)  # type: ignore[operator]
                and s.position <= through  # type: ignore[operator]
            }
            if not doomed:
                return 0
            conversation.chat = [s for s in conversation.chat if s.message.id not in doomed]
            conversation.log = [s for s in conversation.log if s.message.id not in doomed]
            return len(doomed)

    async def purge_expired(self) -> int:
        """Drop expired conversations and return how many there were."""
        async with self._lock:
            now = self._clock()
            doomed = [cid for cid, c in self._conversations.items() if self._expired(c, now)]
            for cid in doomed:
                del self._conversations[cid]
                self._summaries.pop(cid, None)
            return len(doomed)

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary, or ``None``."""
        async with self._lock:
            self._get(conversation_id)  # drops an expired conversation with its summary
            return self._summaries.get(conversation_id)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version``."""
        async with self._lock:
            if self._get(conversation_id) is None:
                return False  # no (live) conversation: the summary would outlive it
            current = self._summaries.get(conversation_id)
            if (current.version if current else 0) != expected_version:
                return False
            self._summaries[conversation_id] = ConversationSummary(
                text, covers, expected_version + 1
            )
            return True

    async def aclose(self) -> None:
        """Nothing to release; present so every repository can be closed alike."""

    async def __aenter__(self) -> AsyncInMemoryChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
