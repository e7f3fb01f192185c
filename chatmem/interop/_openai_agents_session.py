"""ChatmemSession: the OpenAI Agents SDK's ``Session`` protocol over a chatmem session log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings

from chatmem._uuid7 import uuid7
from chatmem.backend import MAX_LIMIT
from chatmem.conversation_ids import validate_conversation_id
from chatmem.interop._openai_agents_items import (
    as_item_dict,
    call_names_in,
    item_to_message,
    message_to_items,
)
from chatmem.messages import CHAT_MESSAGE_TYPES, AssistantMessage, Message
from chatmem.repository import AsyncSessionLog
from chatmem.sessions import AsyncSessions

if TYPE_CHECKING:
    from agents import TResponseInputItem

    from chatmem.backend import Position, StoredMessage

__all__ = ["ChatmemSession"]

_PAGE = 500  # messages per read of a whole conversation
# How many of the newest messages are searched for the call a tool output answers, when
# the call is not in the same batch (bounded: adding costs the same at any length).
_CALL_LOOKBACK = 100
_CHAT_TYPES = sorted(CHAT_MESSAGE_TYPES)


def _items_of(stored: list[StoredMessage]) -> list[dict[str, Any]]:
    return [item for s in stored for item in message_to_items(s.message)]


def _indexes(flags: list[bool]) -> list[int]:
    return [i for i, flag in enumerate(flags) if flag]


class ChatmemSession:
    """The OpenAI Agents SDK's ``Session`` over any chatmem session log (every backend).

    Each item is one chatmem message (see :mod:`chatmem.interop.openai_agents` for which),
    so the conversation is readable by everything else in chatmem, and each item comes back
    exactly as it was added. ``get_items(limit)`` reads only the newest ``limit`` messages,
    so a turn costs the same at 10 or 10,000 stored items; ``add_items`` is one atomic
    append; ``pop_item`` is a rewind by one (:meth:`chatmem.sessions.AsyncSessions.pop`):
    the item leaves the session but stays in the history, marked as rewound;
    ``clear_session`` deletes the conversation.

    Async only, as the SDK's protocol is: give an async repository.

    Example:
        ```python
        import asyncio

        from chatmem import AsyncInMemoryChatMemoryRepository
        from chatmem.interop.openai_agents import ChatmemSession


        async def main() -> None:
            session = ChatmemSession("user-42", AsyncInMemoryChatMemoryRepository())
            await session.add_items([{"role": "user", "content": "Hi"}])
            assert await session.get_items() == [{"role": "user", "content": "Hi"}]


        asyncio.run(main())
        ```

    Args:
        session_id: The session's id: the chatmem conversation id.
        repository: An async session log (``create_async_repository(url)`` of any backend).
        session_settings: The SDK's settings; their ``limit`` is the default of
            :meth:`get_items` (a dict is accepted too, as by the SDK's sessions).

    Raises:
        InvalidConversationIdError: The session id is not a valid conversation id.
        ConfigurationError: The repository is not an async session log.
        TypeError: The settings name a field the SDK's settings do not have.
    """

    session_id: str
    """The session's id, which is the chatmem conversation id."""
    session_settings: SessionSettings | None
    """The SDK's session settings (empty ones by default): ``limit`` is the default of
    :meth:`get_items`."""

    def __init__(
        self,
        session_id: str,
        repository: AsyncSessionLog,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = validate_conversation_id(session_id)
        self.sessions = AsyncSessions(repository)
        """The chatmem sessions the items are kept with."""
        self.repository = repository
        """The session log."""
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_id!r}, {self.repository!r})"

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the newest ``limit`` items (all when ``None``), oldest first.

        Without a limit (here or in :attr:`session_settings`) the whole conversation is
        read, page by page; with one, only its newest ``limit`` messages. A negative limit
        reads everything, as the SDK's SQLite session does.

        Args:
            limit: How many items at most; ``None`` for the settings' limit.
        """
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is None or limit < 0 or limit > MAX_LIMIT:
            return cast("list[TResponseInputItem]", await self._all_items())
        if limit == 0:
            return []
        recent = await self.repository.find_recent(self.session_id, limit)
        # Messages other writers stored may stand for several items each.
        return cast("list[TResponseInputItem]", _items_of(recent)[-limit:])

    async def _all_items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        after: Position | None = None
        while True:
            page = await self.repository.find_history(
                self.session_id, types=_CHAT_TYPES, after=after, limit=_PAGE
            )
            items.extend(_items_of(page))
            if len(page) < _PAGE:
                return items
            after = page[-1].position

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items, one message each, in one atomic append.

        An item's ``id`` is its message's id: an item already among the session's newest
        messages is skipped, so a retried batch is stored once. An item whose id the log
        holds otherwise (popped, or another item with the same id) is stored under a new
        id, in its place in the batch. A ``function_call_output`` is named after its call,
        found in the same batch or among the conversation's newest messages.

        Args:
            items: The items, oldest first.

        Raises:
            ConversionError: An item is neither a dict nor an ``openai`` SDK object.
        """
        if not items:
            return
        data = [as_item_dict(item) for item in items]
        names = call_names_in(data)
        calls_elsewhere = any(
            d.get("type") == "function_call_output" and str(d.get("call_id")) not in names
            for d in data
        )
        if calls_elsewhere:
            names = {**await self._recent_call_names(), **names}
        messages: list[Message] = [item_to_message(d, names) for d in data]
        stored = await self.sessions.append(self.session_id, messages)
        if len(stored) < len(messages):
            await self._store_skipped(data, messages, stored)

    async def _store_skipped(
        self, data: list[dict[str, Any]], messages: list[Message], stored: list[StoredMessage]
    ) -> None:
        """Store the items whose ids were skipped, unless the same item is in the session.

        An item's id names its message, so an item already stored (a retried batch) is
        skipped. But a log also remembers the ids of messages a pop took back (the SDK adds
        popped items again to restore a tail), and some models give many items one id: a
        skipped item is stored again, under a new id, unless an equal item is among the
        session's newest messages.
        """
        appended = [False] * len(messages)
        next_stored = 0
        for i, message in enumerate(messages):  # stored is the batch, less what was skipped
            if next_stored < len(stored) and stored[next_stored].message.id == message.id:
                appended[i] = True
                next_stored += 1
        positions = {s.position for s in stored}
        recent = await self.repository.find_recent(self.session_id, len(messages) + _CALL_LOOKBACK)
        present = _items_of([s for s in recent if s.position not in positions])
        retried = [not appended[i] and data[i] in present for i in range(len(messages))]
        missing = [i for i in range(len(messages)) if not appended[i] and not retried[i]]
        if not missing:
            return
        # The batch's order holds: what it stored after the first missing item is taken
        # back, and everything from that item on is appended again under new ids.
        first = missing[0]
        later = [s for s, i in zip(stored, _indexes(appended), strict=True) if i > first]
        if later:
            before = await self.repository.find_recent(self.session_id, 1, before=later[0].position)
            await self.sessions.rewind(self.session_id, before[0].position if before else None)
        again = [
            messages[i].model_copy(update={"id": uuid7()})
            for i in range(first, len(messages))
            if not retried[i]
        ]
        await self.sessions.append(self.session_id, again)

    async def _recent_call_names(self) -> dict[str, str]:
        recent = await self.repository.find_recent(self.session_id, _CALL_LOOKBACK)
        return {
            call.id: call.name
            for s in recent
            if isinstance(s.message, AssistantMessage)
            for call in s.message.tool_calls
        }

    async def pop_item(self) -> TResponseInputItem | None:
        """Take back the newest item and return it; ``None`` if the session holds none.

        A rewind by one message: the item no longer reads in the session, and stays in the
        conversation's history as a ``chatmem.rewound`` event.
        """
        taken = await self.sessions.pop(self.session_id)
        if taken is None:
            return None
        items = message_to_items(taken.message)
        return cast("TResponseInputItem", items[-1]) if items else None

    async def clear_session(self) -> None:
        """Delete the conversation: its items, history and events."""
        await self.repository.delete_by_conversation_id(self.session_id)
