"""A LangChain chat message history backed by any chatmem repository."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError
from chatmem.interop._common import call_names, unnamed_results
from chatmem.interop._langchain_convert import from_langchain, to_langchain
from chatmem.memory import AsyncMessageWindowChatMemory, MessageWindowChatMemory
from chatmem.messages import AssistantMessage, Message, MessageType
from chatmem.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    ChatMemoryLog,
    ChatMemoryRepository,
)

__all__ = ["ChatmemMessageHistory"]


def _is_async(repository: object) -> bool:
    return inspect.iscoroutinefunction(getattr(repository, "save_all", None))


def _latest_assistant(history: Sequence[Message]) -> Message | None:
    return next((m for m in reversed(history) if isinstance(m, AssistantMessage)), None)


def _named(messages: Sequence[BaseMessage], latest: Message | None) -> list[Message]:
    # LangChain's tool loop adds a ToolMessage, which need not carry a name, in a later call
    # than the AIMessage with its call: it is named after the newest stored assistant message's
    # calls (asked only then, so adding a turn costs no extra read).
    return from_langchain(messages, tool_names=call_names(latest))


class ChatmemMessageHistory(BaseChatMessageHistory):
    """LangChain's ``BaseChatMessageHistory`` over a chatmem repository, sync and async.

    Adding appends to the repository (nothing is rewritten, concurrent writers lose
    nothing). A ``ToolMessage`` without a ``name`` is stored with the name of the call it
    answers, also when it is added after the ``AIMessage`` holding that call, as LangChain's
    tool loop does. Reading returns, by default, the **whole history**, which is LangChain's
    contract for ``messages``; with ``max_messages`` it returns chatmem's turn-safe window
    instead: the system message and the newest whole turns that fit, never a tool result
    without its call. A window read costs the same at 10 or 10,000 stored messages, so a
    ``RunnableWithMessageHistory`` app stays flat as conversations grow. The full history
    stays in the repository either way.

    Give a sync repository, an async one, or both (``async_repository``): the ``a``-methods
    use the async one, and without it run the sync methods in a thread (LangChain's default).

    Example:
        ```python
        from langchain_core.messages import AIMessage, HumanMessage

        from chatmem import InMemoryChatMemoryRepository
        from chatmem.interop.langchain import ChatmemMessageHistory

        history = ChatmemMessageHistory("007", InMemoryChatMemoryRepository(), max_messages=20)
        history.add_messages([HumanMessage("My name is Bond"), AIMessage("Hello, Mr Bond.")])
        assert [m.content for m in history.messages] == ["My name is Bond", "Hello, Mr Bond."]
        ```

    Args:
        conversation_id: The conversation this history reads and writes.
        repository: A sync or async chatmem repository.
        max_messages: Return a turn-safe window of at most this many messages (system
            message included) instead of the whole history.
        async_repository: An async repository for the ``a``-methods when ``repository`` is
            sync (usually the same store, from ``create_async_repository``).

    Raises:
        ConfigurationError: If the conversation id is invalid, ``max_messages`` is below 1,
            or both repositories are of the same flavour.
    """

    def __init__(
        self,
        conversation_id: str,
        repository: ChatMemoryRepository | AsyncChatMemoryRepository,
        *,
        max_messages: int | None = None,
        async_repository: AsyncChatMemoryRepository | None = None,
    ) -> None:
        validate_conversation_id(conversation_id)
        if max_messages is not None and max_messages < 1:
            raise ConfigurationError(f"max_messages must be at least 1, got {max_messages!r}")
        self.conversation_id = conversation_id
        """The conversation this history reads and writes."""
        self.max_messages = max_messages
        """The window size, or ``None`` for the whole history."""
        sync_repository: Any = None if _is_async(repository) else repository
        async_repo: Any = repository if _is_async(repository) else async_repository
        if async_repository is not None and (sync_repository is None or not _is_async(async_repo)):
            raise ConfigurationError("give one sync and one async repository, or just one")
        self._memory = (
            MessageWindowChatMemory(sync_repository, max_messages=max_messages or 1)
            if sync_repository is not None
            else None
        )
        self._async_memory = (
            AsyncMessageWindowChatMemory(async_repo, max_messages=max_messages or 1)
            if async_repo is not None
            else None
        )
        # Asked once whether the repositories append: a check against a protocol class costs
        # more than converting the messages of a turn.
        self._log: ChatMemoryLog | None = (
            sync_repository if isinstance(sync_repository, ChatMemoryLog) else None
        )
        self._async_log: AsyncChatMemoryLog | None = (
            async_repo if isinstance(async_repo, AsyncChatMemoryLog) else None
        )

    # -- sync ---------------------------------------------------------------------------------

    def _sync(self) -> MessageWindowChatMemory:
        if self._memory is None:
            raise ConfigurationError(
                "this history has only an async repository: use aget_messages, "
                "aadd_messages and aclear, or pass a sync repository too"
            )
        return self._memory

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The whole history, or the window when ``max_messages`` is set, oldest first."""
        memory = self._sync()
        if self.max_messages is not None:
            return to_langchain(memory.get(self.conversation_id))
        return to_langchain(memory.repository.find_by_conversation_id(self.conversation_id))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages to the conversation.

        Args:
            messages: LangChain messages, oldest first.
        """
        repository = self._sync().repository
        converted = from_langchain(messages)
        if self._log is not None:
            if unnamed_results(converted):
                latest = self._log.find_latest(self.conversation_id, MessageType.ASSISTANT)
                converted = _named(messages, latest.message if latest is not None else None)
            self._log.append(self.conversation_id, converted)
        else:
            history = repository.find_by_conversation_id(self.conversation_id)
            if unnamed_results(converted):
                converted = _named(messages, _latest_assistant(history))
            repository.save_all(self.conversation_id, [*history, *converted])

    def clear(self) -> None:
        """Delete the conversation and its history."""
        self._sync().clear(self.conversation_id)

    # -- async --------------------------------------------------------------------------------

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        memory = self._async_memory
        if memory is None:
            return await super().aget_messages()
        if self.max_messages is not None:
            return to_langchain(await memory.get(self.conversation_id))
        history = await memory.repository.find_by_conversation_id(self.conversation_id)
        return to_langchain(history)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`.

        Args:
            messages: LangChain messages, oldest first.
        """
        if self._async_memory is None:
            await super().aadd_messages(messages)
            return
        converted = from_langchain(messages)
        repository = self._async_memory.repository
        if self._async_log is not None:
            if unnamed_results(converted):
                log = self._async_log
                latest = await log.find_latest(self.conversation_id, MessageType.ASSISTANT)
                converted = _named(messages, latest.message if latest is not None else None)
            await self._async_log.append(self.conversation_id, converted)
        else:
            history = await repository.find_by_conversation_id(self.conversation_id)
            if unnamed_results(converted):
                converted = _named(messages, _latest_assistant(history))
            await repository.save_all(self.conversation_id, [*history, *converted])

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        if self._async_memory is None:
            await super().aclear()
            return
        await self._async_memory.clear(self.conversation_id)
