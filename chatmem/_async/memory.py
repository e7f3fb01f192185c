"""Chat memories: what the model sees, derived from the stored history."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel

from chatmem import _telemetry as telemetry
from chatmem._async.in_memory import AsyncInMemoryChatMemoryRepository
from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    AsyncWindowReader,
)
from chatmem._async.tracing import AsyncTracedRepository
from chatmem._records import StoredMessage
from chatmem._telemetry import ENABLED as TELEMETRY
from chatmem._telemetry import active as tracing_active
from chatmem._twins import AsyncTwin, check_flavor
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.messages import EventMessage, Message, MessageType, SystemMessage, UserMessage
from chatmem.tokens import CachedTokenEstimator, TiktokenTokenEstimator, TokenEstimator
from chatmem.window import count_one, select_window

__all__ = [
    "AsyncChatMemory",
    "AsyncMessageWindowChatMemory",
    "AsyncTokenWindowChatMemory",
    "WindowSize",
]

WindowSize: TypeAlias = "int | Callable[[str], int]"
"""A window size: a number, or a function of the conversation id that returns one.

A function gives each conversation its own window (LangChain4j's ``dynamicMaxMessages``): a
paying user's conversation may keep more. It is called on every read, so keep it cheap.
"""


def _check_size(name: str, size: object) -> None:
    if callable(size):
        return
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ConfigurationError(f"{name} must be at least 1 or a callable, got {size!r}")


def _resolve_size(name: str, size: int | Callable[[str], int], conversation_id: str) -> int:
    value = size(conversation_id) if callable(size) else size
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(
            f"{name} for conversation {conversation_id!r} must be at least 1, got {value!r}"
        )
    return value


@runtime_checkable
class AsyncChatMemory(Protocol):
    """What a memory advisor needs: add messages, get the model's view, clear."""

    async def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Add messages to a conversation.

        Args:
            conversation_id: The conversation.
            messages: One message or several, in order.
        """
        ...

    async def get(self, conversation_id: str) -> list[Message]:
        """Return the messages the model should see, system message first.

        Args:
            conversation_id: The conversation.
        """
        ...

    async def clear(self, conversation_id: str) -> None:
        """Delete a conversation's memory and history.

        Args:
            conversation_id: The conversation.
        """
        ...


def _as_list(messages: Message | Sequence[Message]) -> list[Message]:
    if isinstance(messages, BaseModel):
        return [messages]
    return list(messages)


class _AsyncWindowMemory:
    """Shared add/get/clear of both windows; subclasses say how to size and fetch."""

    def __init__(
        self,
        repository: AsyncChatMemoryRepository | None,
        *,
        evict: bool,
        always_keep_system_message_first: bool = True,
    ) -> None:
        if repository is None:
            repository = AsyncInMemoryChatMemoryRepository()
        check_flavor(
            repository, "save_all", is_async=AsyncTwin.IS_ASYNC, role="chat memory repository"
        )
        self.repository = repository
        """The repository holding the history."""
        self.evict = evict
        """Whether messages that leave the window are deleted from the repository."""
        self.always_keep_system_message_first = always_keep_system_message_first
        """Whether ``get`` puts the system message first (else at its stored position)."""
        self._log: AsyncChatMemoryLog | None = (
            repository if isinstance(repository, AsyncChatMemoryLog) else None
        )
        self._window_reader: AsyncWindowReader | None = (
            repository if isinstance(repository, AsyncWindowReader) else None
        )
        self._store = repository
        if TELEMETRY:
            # Every repository call of this memory runs in a database span; the repository
            # itself stays as given (``self.repository``), so callers see no wrapper.
            traced = AsyncTracedRepository(repository)
            self._store = traced
            self._log = traced if self._log is not None else None
            self._window_reader = traced if self._window_reader is not None else None

    # -- subclass hooks ------------------------------------------------------------------------

    def _budget(self, conversation_id: str) -> int:
        raise NotImplementedError

    def _size(self, message: Message) -> int:
        raise NotImplementedError

    @property
    def _window_size(self) -> Callable[[Message], int]:
        """The size function handed to window selection."""
        return self._size

    def _first_read_size(self, budget: int) -> int:
        """How many messages the first read asks for, before the system message is known."""
        raise NotImplementedError

    async def _fetch_recent(
        self,
        log: AsyncChatMemoryLog,
        conversation_id: str,
        budget: int,
        first: list[StoredMessage] | None,
        first_size: int,
    ) -> tuple[list[StoredMessage], bool]:
        """Return the newest stored messages that can matter and whether that is all of them.

        ``first`` is what a combined window read already returned (``first_size``
        messages asked for), or ``None`` if nothing was read yet.
        """
        raise NotImplementedError

    # -- the ChatMemory API ---------------------------------------------------------------------

    async def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Append messages; repeated system messages are ignored, a new one replaces the old.

        Args:
            conversation_id: The conversation.
            messages: One message or several, in order.
        """
        validate_conversation_id(conversation_id)
        batch = _as_list(messages)
        if not batch:
            return
        if not TELEMETRY or not tracing_active():
            await self._add(conversation_id, batch)
            return
        with telemetry.activate(telemetry.memory_span("add", conversation_id)) as span:
            telemetry.set_count(span, "chatmem.memory.message_count", batch)
            await self._add(conversation_id, batch)

    async def _add(self, conversation_id: str, batch: list[Message]) -> None:
        if self._log is None:
            await self._add_by_rewrite(conversation_id, batch)
            return
        current: str | None = None
        if any(m.type == MessageType.SYSTEM for m in batch):
            stored = await self._log.find_system_message(conversation_id)
            current = stored.message.text if stored else None  # type: ignore[union-attr]
        fresh = _drop_repeated_system(batch, current)
        if fresh:
            await self._log.append(conversation_id, fresh)
        if self.evict:
            await self._evict(self._log, conversation_id)

    async def get(self, conversation_id: str) -> list[Message]:
        """Return the system message (if any) followed by the window.

        Args:
            conversation_id: The conversation.
        """
        validate_conversation_id(conversation_id)
        if not TELEMETRY or not tracing_active():
            return await self._get(conversation_id)
        with telemetry.activate(telemetry.memory_span("get", conversation_id)) as span:
            messages = await self._get(conversation_id)
            telemetry.set_count(span, "chatmem.memory.message_count", messages)
            return messages

    async def _get(self, conversation_id: str) -> list[Message]:
        if self._log is None:
            history = await self._store.find_by_conversation_id(conversation_id)
            system, window = self._select_from_history(conversation_id, history)
            if system is None:
                return window
            if self.always_keep_system_message_first:
                return [system, *window]
            ids = {m.id for m in window}
            seen = 0
            for message in history:  # the system message goes where it is in the history
                if message is system:
                    break
                seen += 1 if message.id in ids else 0
            return [*window[:seen], system, *window[seen:]]
        system_stored, window_stored = await self._read(self._log, conversation_id)
        window = [s.message for s in window_stored]
        if system_stored is None:
            return window
        if self.always_keep_system_message_first or not window_stored:
            return [system_stored.message, *window]
        # At its stored position: after the window messages stored before it.
        system_position = system_stored.position
        before = len([s for s in window_stored if s.position < system_position])  # type: ignore[operator]
        return [*window[:before], system_stored.message, *window[before:]]

    async def set(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Replace a conversation's messages (LangChain4j's ``set``).

        The history is replaced by ``messages`` (a system message repeated unchanged is kept
        once); with ``evict=True`` only the system message and the window are stored. An
        empty sequence deletes the conversation.

        Args:
            conversation_id: The conversation.
            messages: The new content, oldest first.
        """
        validate_conversation_id(conversation_id)
        history = _drop_repeated_system(_as_list(messages), None)
        if self.evict and history:
            system, window = self._select_from_history(conversation_id, history)
            history = ([system] if system else []) + window
        await self._store.save_all(conversation_id, history)

    async def clear(self, conversation_id: str) -> None:
        """Delete the conversation's memory and its history.

        Args:
            conversation_id: The conversation.
        """
        validate_conversation_id(conversation_id)
        await self._store.delete_by_conversation_id(conversation_id)

    # -- internals ----------------------------------------------------------------------------

    async def _read(
        self, log: AsyncChatMemoryLog, conversation_id: str
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        first: list[StoredMessage] | None = None
        total = self._budget(conversation_id)
        first_size = self._first_read_size(total)
        if self._window_reader is not None:
            # One round trip for the system message and the newest messages together.
            system, first = await self._window_reader.find_window(conversation_id, first_size)
        else:
            system = await log.find_system_message(conversation_id)
        budget = total - (self._size(system.message) if system else 0)
        recent, complete = await self._fetch_recent(
            log, conversation_id, max(budget, 1), first, first_size
        )
        if recent and not complete and not any(isinstance(s.message, UserMessage) for s in recent):
            # The newest turn is bigger than the budget and its user message is older than
            # what was read: fetch it so the oversized-turn rule can keep it.
            anchor = await log.find_latest(conversation_id, MessageType.USER)
            if anchor is not None:
                recent = [anchor, *recent]
        read = [s.message for s in recent]
        selected = select_window(
            read,
            budget=budget,
            size=self._window_size,
            history_complete=complete,
        )
        start = len(recent) - len(selected)
        if all(map(is_, read[start:], selected)):
            return system, recent[start:]  # the newest messages as read: none dropped or edited
        # Repair may hand back edited copies (fewer tool calls); keep them, with positions.
        by_id = {s.message.id: s for s in recent}
        return system, [StoredMessage(by_id[m.id].position, m) for m in selected]

    async def _evict(self, log: AsyncChatMemoryLog, conversation_id: str) -> None:
        _, window = await self._read(log, conversation_id)
        if window:
            await log.delete_before(conversation_id, window[0].position)

    def _select_from_history(
        self, conversation_id: str, history: Sequence[Message]
    ) -> tuple[SystemMessage | None, list[Message]]:
        system: SystemMessage | None = None
        chat: list[Message] = []
        for message in history:
            if isinstance(message, SystemMessage):
                system = message
            elif not isinstance(message, EventMessage):  # events are never sent to a model
                chat.append(message)
        budget = self._budget(conversation_id) - (self._size(system) if system else 0)
        return system, select_window(chat, budget=budget, size=self._window_size)

    async def _add_by_rewrite(self, conversation_id: str, batch: list[Message]) -> None:
        # A repository with only Spring AI's four methods: read, extend, write back.
        history = await self._store.find_by_conversation_id(conversation_id)
        current = next((m.text for m in reversed(history) if isinstance(m, SystemMessage)), None)
        fresh = _drop_repeated_system(batch, current)
        history = [*history, *fresh]
        if self.evict:
            system, window = self._select_from_history(conversation_id, history)
            events = [m for m in history if isinstance(m, EventMessage)]  # never evicted
            history = ([system] if system else []) + events + window
        await self._store.save_all(conversation_id, history)


def _drop_repeated_system(batch: list[Message], current: str | None) -> list[Message]:
    """Drop system messages equal to the one current when they arrive (in batch order)."""
    fresh: list[Message] = []
    for message in batch:
        if isinstance(message, SystemMessage):
            if message.text == current:
                continue
            current = message.text
        fresh.append(message)
    return fresh


class AsyncMessageWindowChatMemory(_AsyncWindowMemory):
    """Keeps the newest whole turns that fit in ``max_messages``, system message included.

    Adding appends to the repository (nothing is rewritten) and reading costs one bounded
    query for the window plus one for the system message, however long the history is. The
    full history stays in the repository unless ``evict=True``.

    Unlike Spring AI, a newest turn too big for the window is not dropped: its user message
    and the newest whole units of the turn that fit are kept (see :mod:`chatmem.window`).

    Example:
        ```python
        memory = AsyncMessageWindowChatMemory(max_messages=20)
        await memory.add("007", UserMessage("My name is James Bond"))
        await memory.get("007")
        ```

    Args:
        repository: Where the history lives; in-memory by default.
        max_messages: Upper bound on the messages returned, system message included; or a
            function of the conversation id returning it (a window per conversation).
        evict: Delete messages from the repository once they leave the window (Spring AI's
            behaviour). By default they stay, as history.
        always_keep_system_message_first: ``True`` (the default): ``get`` returns the current
            system message first, wherever it was stored. ``False`` (LangChain4j's default):
            it stays at its stored position, so a system message that replaced an older one
            mid-conversation comes after the window messages stored before it. Either way it
            counts against the window and is never evicted.

    Raises:
        ConfigurationError: If ``max_messages`` (or what its function returns) is less than 1.
    """

    def __init__(
        self,
        repository: AsyncChatMemoryRepository | None = None,
        *,
        max_messages: WindowSize = 20,
        evict: bool = False,
        always_keep_system_message_first: bool = True,
    ) -> None:
        _check_size("max_messages", max_messages)
        super().__init__(
            repository,
            evict=evict,
            always_keep_system_message_first=always_keep_system_message_first,
        )
        self.max_messages = max_messages
        """Upper bound on the messages returned, or a function of the conversation id."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_messages={self.max_messages!r}, evict={self.evict})"

    def _budget(self, conversation_id: str) -> int:
        return _resolve_size("max_messages", self.max_messages, conversation_id)

    def _size(self, message: Message) -> int:
        return 1

    @property
    def _window_size(self) -> Callable[[Message], int]:
        return count_one  # selection then counts groups by their length

    def _first_read_size(self, budget: int) -> int:
        return budget

    async def _fetch_recent(
        self,
        log: AsyncChatMemoryLog,
        conversation_id: str,
        budget: int,
        first: list[StoredMessage] | None,
        first_size: int,
    ) -> tuple[list[StoredMessage], bool]:
        if first is not None:
            # Read before the system message was known: all of it if fewer came back than
            # asked for; otherwise keep only what the budget allows.
            return first[-budget:], len(first) < first_size
        recent = await log.find_recent(conversation_id, budget)
        return recent, len(recent) < budget


class AsyncTokenWindowChatMemory(_AsyncWindowMemory):
    """Keeps the newest whole turns that fit in ``max_tokens``, system message included.

    The same rules as :class:`AsyncMessageWindowChatMemory` with a token budget. Each
    message is counted once (cached by id); reads page backwards through the newest messages
    until the budget is filled, never through the whole history.

    Example:
        ```python
        memory = AsyncTokenWindowChatMemory(repository, max_tokens=4000)
        await memory.add("007", UserMessage("My name is James Bond"))
        await memory.get("007")
        ```

    Args:
        repository: Where the history lives; in-memory by default.
        max_tokens: Upper bound on the tokens of the messages returned.
        token_estimator: Counts a message's tokens; tiktoken's ``cl100k_base`` by default.
        page_size: Messages read per round trip while filling the budget.
        evict: Delete messages from the repository once they leave the window.
        always_keep_system_message_first: As for :class:`AsyncMessageWindowChatMemory`:
            ``True`` (the default) puts the system message first, ``False`` keeps it at its
            stored position.

    Raises:
        ConfigurationError: If ``max_tokens`` (or what its function returns) or
            ``page_size`` is less than 1, or the default estimator's tiktoken is missing.
    """

    def __init__(
        self,
        repository: AsyncChatMemoryRepository | None = None,
        *,
        max_tokens: WindowSize,
        token_estimator: TokenEstimator | None = None,
        page_size: int = 50,
        evict: bool = False,
        always_keep_system_message_first: bool = True,
    ) -> None:
        _check_size("max_tokens", max_tokens)
        if not isinstance(page_size, int) or page_size < 1:
            raise ConfigurationError(f"page_size must be at least 1, got {page_size!r}")
        super().__init__(
            repository,
            evict=evict,
            always_keep_system_message_first=always_keep_system_message_first,
        )
        self.max_tokens = max_tokens
        """Upper bound on the tokens of the messages returned, or a function of the id."""
        self.page_size = page_size
        estimator = token_estimator if token_estimator is not None else TiktokenTokenEstimator()
        self.token_estimator = (
            estimator
            if isinstance(estimator, CachedTokenEstimator)
            else CachedTokenEstimator(estimator)
        )
        """The (caching) estimator in use."""
        self._size_fn: Callable[[Message], int] = self.token_estimator.estimate

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_tokens={self.max_tokens!r}, evict={self.evict})"

    def _budget(self, conversation_id: str) -> int:
        return _resolve_size("max_tokens", self.max_tokens, conversation_id)

    def _size(self, message: Message) -> int:
        return self._size_fn(message)

    def _first_read_size(self, budget: int) -> int:
        return self.page_size

    async def _fetch_recent(
        self,
        log: AsyncChatMemoryLog,
        conversation_id: str,
        budget: int,
        first: list[StoredMessage] | None,
        first_size: int,
    ) -> tuple[list[StoredMessage], bool]:
        pages: list[list[StoredMessage]] = []
        total = 0
        before = None
        while True:
            if first is not None:
                page, first = first, None
            else:
                page = await log.find_recent(conversation_id, self.page_size, before=before)
            pages.append(page)
            total += sum(self._size(s.message) for s in page)
            if len(page) < self.page_size:
                complete = True
                break
            if total > budget:
                complete = False
                break
            before = page[0].position
        return [s for page in reversed(pages) for s in page], complete
