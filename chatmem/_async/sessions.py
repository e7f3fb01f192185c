"""Sessions over a repository: versioned reads, custom events, forks and rewinds."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from datetime import datetime

from chatmem._async.repository import AsyncSessionLog, AsyncSummaryStore
from chatmem._records import Position, StoredMessage
from chatmem._sessions import (
    FORK_EVENT,
    FORKED_EVENT,
    REWIND_EVENT,
    REWOUND_EVENT,
    Fork,
    SessionHistory,
    SessionWindow,
    fork_of,
    merged_by_position,
)
from chatmem.backend import check_limit
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError, MessageDecodeError, VersionConflictError
from chatmem.messages import (
    CHAT_MESSAGE_TYPES,
    EventMessage,
    Message,
    MessageType,
    encode_message,
)

__all__ = ["AsyncSessions"]

_PAGE = 200
_RETRIES = 5  # attempts of an operation that re-reads when a writer got in between

_CHAT_TYPES = sorted(CHAT_MESSAGE_TYPES)
_EVENTS = [MessageType.EVENT]
_SYSTEM = [MessageType.SYSTEM]


def _rewound_id(message_id: str) -> str:
    # Fixed length whatever the message id's (stores cap id length); the same message
    # always gives the same id, so a rewind run again stores its events once.
    return "chatmem.rewound:" + hashlib.sha256(message_id.encode()).hexdigest()[:40]


class AsyncSessions:
    """A conversation as a session: an append-only log of messages and events.

    Spring AI's Session API and the agent SDKs' sessions in chatmem's terms, over any
    :class:`~chatmem.repository.AsyncSessionLog` (every built-in backend). Reads return the
    conversation's version; an append with ``expected_version`` stores nothing when another
    writer got there first. Applications keep their own events in the log
    (:meth:`append_event`); :meth:`fork` starts a new conversation from a point of an
    existing one, and :meth:`rewind` takes the conversation back to a point, keeping what it
    takes back in the history as ``chatmem.rewound`` events.

    Example:
        ```python
        sessions = AsyncSessions(create_async_repository("sqlite:///chat.db"))
        window = await sessions.read_window("chat-1", limit=20)
        await sessions.append(
            "chat-1", [UserMessage("Hello")], expected_version=window.version
        )
        await sessions.append_event("chat-1", EventMessage("acme.audit", {"ok": True}))
        fork = await sessions.fork("chat-1", "chat-1-retry")
        await sessions.rewind("chat-1", to=window.messages[-1].position)
        ```

    Args:
        repository: The log to keep sessions in.
        fork_carry: How many of the parent's newest messages a fork stores as its own (plus
            the parent's system message): what its memory window can reach. A fork costs
            this much whatever the parent's length; older history stays in the parent.

    Raises:
        ConfigurationError: The repository is not a session log, or ``fork_carry`` < 1.
    """

    def __init__(self, repository: AsyncSessionLog, *, fork_carry: int = 500) -> None:
        if not isinstance(repository, AsyncSessionLog):
            raise ConfigurationError(
                f"{type(repository).__name__} is not a session log: it needs find_version, "
                "delete_between and version-checked appends"
            )
        if isinstance(fork_carry, bool) or not isinstance(fork_carry, int) or fork_carry < 1:
            raise ConfigurationError(f"fork_carry must be a positive integer, got {fork_carry!r}")
        self.repository = repository
        self.fork_carry = fork_carry

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.repository!r})"

    # -- reads ----------------------------------------------------------------------------------

    async def read_window(self, conversation_id: str, limit: int) -> SessionWindow:
        """Read the system message and the newest ``limit`` chat messages, with the version.

        The version is read first, so it is never newer than what was read: an append at it
        fails if anything arrived after it, even between the two reads.

        Args:
            conversation_id: The conversation.
            limit: How many user, assistant and tool messages at most.
        """
        check_limit(limit)
        log = self.repository
        version = await log.find_version(conversation_id)
        system = await log.find_system_message(conversation_id)
        messages = await log.find_recent(conversation_id, limit) if limit else []
        return SessionWindow(system, messages, version)

    async def read_history(
        self,
        conversation_id: str,
        *,
        types: Collection[MessageType] | None = None,
        event_types: Collection[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> SessionHistory:
        """Read a page of history, oldest first, with the version read before it.

        Args:
            conversation_id: The conversation.
            types: Only entries of these types.
            event_types: Only events of these types (``types`` is then ignored).
            since: Only entries created at or after this time.
            until: Only entries created before this time.
            text: Only entries whose searchable text contains this, ignoring case.
            after: Only entries positioned after this one (to page forwards).
            limit: Page size.
        """
        check_limit(limit)
        log = self.repository
        version = await log.find_version(conversation_id)
        if event_types is None:
            entries = await log.find_history(
                conversation_id,
                since=since,
                until=until,
                types=types,
                text=text,
                after=after,
                limit=limit,
            )
            return SessionHistory(entries, version)
        wanted = frozenset(event_types)
        found: list[StoredMessage] = []
        while len(found) < limit:
            page = await log.find_history(
                conversation_id,
                since=since,
                until=until,
                types=_EVENTS,
                text=text,
                after=after,
                limit=max(limit, _PAGE),
            )
            for stored in page:
                event = stored.message
                if isinstance(event, EventMessage) and event.event_type in wanted:
                    found.append(stored)
                    if len(found) == limit:
                        break
            if len(page) < max(limit, _PAGE):
                break
            after = page[-1].position
        return SessionHistory(found, version)

    # -- writes ---------------------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages (and events), only at ``expected_version`` when it is given.

        Args:
            conversation_id: The conversation.
            messages: The messages, in order.
            expected_version: The version read before deciding what to append.

        Raises:
            VersionConflictError: Something was appended since ``expected_version``.
        """
        return await self.repository.append(
            conversation_id, messages, expected_version=expected_version
        )

    async def append_event(
        self,
        conversation_id: str,
        event: EventMessage,
        *,
        expected_version: int | None = None,
    ) -> StoredMessage | None:
        """Append one application event; ``None`` if its id was already stored.

        Args:
            conversation_id: The conversation.
            event: The event.
            expected_version: The version read before deciding to append it.

        Raises:
            VersionConflictError: Something was appended since ``expected_version``.
        """
        stored = await self.append(conversation_id, [event], expected_version=expected_version)
        return stored[0] if stored else None

    # -- forks ----------------------------------------------------------------------------------

    async def fork(self, conversation_id: str, fork_id: str, *, at: Position | None = None) -> Fork:
        """Start conversation ``fork_id`` from conversation ``conversation_id``.

        The fork stores a ``chatmem.fork`` event naming its parent, the parent's system
        message as of ``at`` and the parent's newest ``fork_carry`` chat messages up to
        ``at`` (same ids and times, new positions); the parent gets a ``chatmem.forked``
        event. From then on the two are independent conversations: a memory, a summary or
        a time to live works on the fork as on any conversation, and deleting the parent
        leaves the fork whole (its history before the carried messages is read in the
        parent, and goes with it).

        Args:
            conversation_id: The parent.
            fork_id: A new conversation id.
            at: The position of the last parent message the fork holds; ``None`` for the
                parent as it is now.

        Returns:
            What was forked.

        Raises:
            VersionConflictError: ``fork_id`` already holds something.
        """
        validate_conversation_id(conversation_id)
        if validate_conversation_id(fork_id) == conversation_id:
            raise ConfigurationError("a fork needs an id of its own, not its parent's")
        log = self.repository
        system, chat = await self._carried(conversation_id, at)
        if at is None and chat:
            at = chat[-1].position
        event = EventMessage(
            FORK_EVENT, {"parent": conversation_id, "at": at, "carried": len(chat)}
        )
        carried = merged_by_position(system, chat)
        stored = await log.append(
            fork_id, [event, *(s.message for s in carried)], expected_version=0
        )
        await log.append(
            conversation_id,
            [
                EventMessage(
                    FORKED_EVENT,
                    {"fork": fork_id, "at": at},
                    id="chatmem.forked:" + hashlib.sha256(fork_id.encode()).hexdigest()[:40],
                )
            ],
        )
        if isinstance(log, AsyncSummaryStore):
            await self._carry_summary(log, conversation_id, fork_id, carried, stored[1:])
        return Fork(fork_id, conversation_id, at, event.created_at)

    async def find_parent(self, conversation_id: str) -> Fork | None:
        """Return where a fork came from, or ``None`` if the conversation is not a fork.

        Args:
            conversation_id: The conversation.
        """
        first = await self.repository.find_history(conversation_id, types=_EVENTS, limit=1)
        return fork_of(conversation_id, first[0]) if first else None

    async def list_forks(self, conversation_id: str) -> list[Fork]:
        """Return the forks made from a conversation, oldest first.

        Args:
            conversation_id: The parent.

        Raises:
            MessageDecodeError: A fork record does not name its fork (it is sealed: an
                encrypted conversation read without its keys).
        """
        forks: list[Fork] = []
        after: Position | None = None
        while True:
            # The events straight from the log: a list of forks needs no version.
            page = await self.repository.find_history(
                conversation_id, types=_EVENTS, after=after, limit=_PAGE
            )
            for stored in page:
                event = stored.message
                if not isinstance(event, EventMessage) or event.event_type != FORKED_EVENT:
                    continue
                fork_id = event.payload.get("fork")
                if not isinstance(fork_id, str):
                    # A sealed event read without its keys holds no fork id in clear.
                    raise MessageDecodeError(
                        f"conversation {conversation_id!r}: fork record {event.id!r} names no "
                        "fork (an encrypted conversation read without encryption on?)",
                        conversation_id=conversation_id,
                    )
                forks.append(
                    Fork(
                        fork_id,
                        conversation_id,
                        event.payload.get("at"),  # type: ignore[arg-type]
                        event.created_at,
                    )
                )
            if len(page) < _PAGE:
                return forks
            after = page[-1].position

    async def _carried(
        self, conversation_id: str, at: Position | None
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        log = self.repository
        carry = self.fork_carry
        if at is None:
            system = await log.find_system_message(conversation_id)
            return system, await log.find_recent(conversation_id, carry)
        chat = await log.find_recent(conversation_id, carry, before=at)
        after = chat[-1].position if chat else None
        following = await log.find_history(conversation_id, types=_CHAT_TYPES, after=after, limit=1)
        if following and following[0].position == at:
            chat = [*chat, following[0]][-carry:]
        return await self._system_at(conversation_id, at), chat

    async def _system_at(self, conversation_id: str, at: Position) -> StoredMessage | None:
        """The system message that was current at position ``at``."""
        log = self.repository
        current = await log.find_system_message(conversation_id)
        if current is None or current.position <= at:  # type: ignore[operator]
            return current
        latest: StoredMessage | None = None
        after: Position | None = None
        while True:  # system messages are few: page through them in order
            page = await log.find_history(conversation_id, types=_SYSTEM, after=after, limit=_PAGE)
            for stored in page:
                if stored.position > at:  # type: ignore[operator]
                    return latest
                latest = stored
            if len(page) < _PAGE:
                return latest
            after = page[-1].position

    @staticmethod
    async def _carry_summary(
        log: AsyncSummaryStore,
        conversation_id: str,
        fork_id: str,
        carried: list[StoredMessage],
        stored: list[StoredMessage],
    ) -> None:
        """Give the fork the parent's summary, covering the fork's copies of what it covers."""
        summary = await log.find_summary(conversation_id)
        if summary is None or not stored:
            return
        covers: Position | None = None
        for parent_copy, fork_copy in zip(carried, stored, strict=True):
            if parent_copy.position <= summary.covers:  # type: ignore[operator]
                covers = fork_copy.position
        if covers is None:
            return  # the summary covers nothing the fork holds
        await log.save_summary(fork_id, summary.text, covers, expected_version=0)

    # -- rewinds --------------------------------------------------------------------------------

    async def rewind(
        self,
        conversation_id: str,
        to: Position | None,
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Take the conversation back to position ``to``: its window resumes from there.

        The user, assistant and tool messages after ``to`` are taken back: each is stored
        as a ``chatmem.rewound`` event holding it and its old position (history shows it,
        marked as rewound; no window reads it again), then removed from the chat. System
        messages and events after ``to`` stay. A ``chatmem.rewind`` event records the
        rewind. Running it again after an interruption completes it.

        Args:
            conversation_id: The conversation.
            to: The position of the last message kept; ``None`` takes every message back.
            expected_version: Rewind only at this version. Without it, the rewind re-reads
                and tries again (a few times) when a writer gets in between.

        Returns:
            The messages taken back, with their old positions.

        Raises:
            VersionConflictError: Something was appended since ``expected_version`` (or,
                without one, kept being appended during every attempt).
        """
        validate_conversation_id(conversation_id)
        log = self.repository
        attempts = 1 if expected_version is not None else _RETRIES
        for attempt in range(attempts):
            version = (
                expected_version
                if expected_version is not None
                else await log.find_version(conversation_id)
            )
            taken = await self._chat_after(conversation_id, to)
            if not taken:
                return []
            events: list[Message] = [
                EventMessage(
                    REWOUND_EVENT,
                    {
                        "position": s.position,
                        "message": json.loads(encode_message(s.message)),
                    },
                    id=_rewound_id(s.message.id),
                )
                for s in taken
            ]
            events.append(EventMessage(REWIND_EVENT, {"to": to, "count": len(taken)}))
            try:
                await log.append(conversation_id, events, expected_version=version)
            except VersionConflictError:
                if attempt == attempts - 1:
                    raise
                continue
            # Bounded by the last message taken: one appended since is not touched.
            await log.delete_between(conversation_id, to, taken[-1].position)
            return taken
        raise AssertionError("unreachable")  # pragma: no cover

    async def pop(self, conversation_id: str) -> StoredMessage | None:
        """Rewind by one message: take back the newest chat message and return it.

        Args:
            conversation_id: The conversation.

        Returns:
            The message taken back, or ``None`` if the conversation has none.

        Raises:
            VersionConflictError: Writers kept appending during every attempt.
        """
        log = self.repository
        for attempt in range(_RETRIES):
            version = await log.find_version(conversation_id)
            newest = await log.find_recent(conversation_id, 2)
            if not newest:
                return None
            to = newest[0].position if len(newest) == 2 else None
            try:
                taken = await self.rewind(conversation_id, to, expected_version=version)
            except VersionConflictError:
                if attempt == _RETRIES - 1:
                    raise
                continue
            return taken[-1] if taken else None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _chat_after(self, conversation_id: str, to: Position | None) -> list[StoredMessage]:
        found: list[StoredMessage] = []
        after = to
        while True:
            page = await self.repository.find_history(
                conversation_id, types=_CHAT_TYPES, after=after, limit=_PAGE
            )
            found.extend(page)
            if len(page) < _PAGE:
                return found
            after = page[-1].position
