"""LlamaIndex chat stores backed by chatmem repositories."""

from __future__ import annotations

import inspect
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from chatmem.exceptions import ConfigurationError
from chatmem.interop._common import call_names
from chatmem.interop._llama_index_convert import from_llama_index, to_llama_index
from chatmem.messages import MessageType
from chatmem.repository import AsyncChatMemoryLog, ChatMemoryLog, StoredMessage

__all__ = ["ARCHIVE_SUFFIX", "ChatmemChatStore", "ChatmemDBChatStore"]

ARCHIVE_SUFFIX = ":archived"
"""Appended to a key to name the conversation holding ``Memory``'s archived messages."""


def _is_async(repository: object) -> bool:
    return inspect.iscoroutinefunction(getattr(repository, "save_all", None))


def _call_names(latest: StoredMessage | None) -> dict[str, str]:
    # A tool message appended alone is named after the newest assistant message's calls.
    return call_names(latest.message if latest is not None else None)


class ChatmemChatStore(BaseChatStore):
    """LlamaIndex's ``BaseChatStore`` on a chatmem repository: ``ChatMemoryBuffer`` on any backend.

    A key is a chatmem conversation id. Adding appends (nothing is rewritten); deleting one
    message rewrites the conversation. Messages read from a conversation that other chatmem
    code wrote lose what LlamaIndex cannot hold (ids, times, metadata): see
    :mod:`chatmem.interop.llama_index`.

    Example:
        ```python
        from llama_index.core.memory import ChatMemoryBuffer

        from chatmem import InMemoryChatMemoryRepository
        from chatmem.interop.llama_index import ChatmemChatStore

        store = ChatmemChatStore(InMemoryChatMemoryRepository())
        memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="007")
        memory.put_messages([])
        ```

    Args:
        repository: A sync chatmem repository.
        async_repository: An async repository for the ``a``-methods (usually the same store,
            from ``create_async_repository``); without it they run in a thread.

    Raises:
        ConfigurationError: If ``repository`` is async or ``async_repository`` is sync.
    """

    _repository: Any = PrivateAttr()
    _async_repository: Any = PrivateAttr()
    # Whether the repositories append, asked once: a check against a protocol class costs
    # more than converting a message.
    _appends: bool = PrivateAttr()
    _async_appends: bool = PrivateAttr()

    def __init__(self, repository: Any, *, async_repository: Any = None) -> None:
        if _is_async(repository) or (
            async_repository is not None and not _is_async(async_repository)
        ):
            raise ConfigurationError("give a sync repository, and optionally an async one")
        super().__init__()
        self._repository = repository
        self._async_repository = async_repository
        self._appends = isinstance(repository, ChatMemoryLog)
        self._async_appends = isinstance(async_repository, AsyncChatMemoryLog)

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serializes."""
        return "ChatmemChatStore"

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace a key's messages.

        Args:
            key: The conversation id.
            messages: The new messages.
        """
        self._repository.save_all(key, from_llama_index(messages))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Return a key's messages, oldest first.

        Args:
            key: The conversation id.
        """
        return to_llama_index(self._repository.find_by_conversation_id(key), lossy=True)

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append a message.

        Args:
            key: The conversation id.
            message: The message.
        """
        if self._appends:
            latest = self._repository.find_latest(key, MessageType.ASSISTANT)
            converted = from_llama_index([message], tool_names=_call_names(latest))
            self._repository.append(key, converted)
        else:
            self.set_messages(key, [*self.get_messages(key), message])

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete a key's messages and return them (``None`` if there were none).

        Args:
            key: The conversation id.
        """
        old = self.get_messages(key)
        self._repository.delete_by_conversation_id(key)
        return old or None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at an index and return it (``None`` if out of range).

        Args:
            key: The conversation id.
            idx: The index in :meth:`get_messages`.
        """
        messages = self.get_messages(key)
        if not -len(messages) <= idx < len(messages):
            return None
        removed = messages.pop(idx)
        self.set_messages(key, messages)
        return removed

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message and return it.

        Args:
            key: The conversation id.
        """
        return self.delete_message(key, -1)

    def get_keys(self) -> list[str]:
        """Return every conversation id."""
        return list(self._repository.find_conversation_ids())

    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Async :meth:`set_messages`.

        Args:
            key: The conversation id.
            messages: The new messages.
        """
        if self._async_repository is None:
            await super().aset_messages(key, messages)
            return
        await self._async_repository.save_all(key, from_llama_index(messages))

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """Async :meth:`get_messages`.

        Args:
            key: The conversation id.
        """
        if self._async_repository is None:
            return await super().aget_messages(key)
        history = await self._async_repository.find_by_conversation_id(key)
        return to_llama_index(history, lossy=True)

    async def async_add_message(self, key: str, message: ChatMessage) -> None:
        """Async :meth:`add_message`.

        Args:
            key: The conversation id.
            message: The message.
        """
        repository = self._async_repository
        if repository is None:
            await super().async_add_message(key, message)
        elif self._async_appends:
            latest = await repository.find_latest(key, MessageType.ASSISTANT)
            await repository.append(
                key, from_llama_index([message], tool_names=_call_names(latest))
            )
        else:
            await self.aset_messages(key, [*await self.aget_messages(key), message])


class ChatmemDBChatStore(AsyncDBChatStore):
    """LlamaIndex's ``AsyncDBChatStore`` on an async chatmem repository, for ``Memory``.

    A key's active messages are the chatmem conversation of that id; messages ``Memory``
    archives move to the conversation ``key + ":archived"`` (an append there, then a rewrite
    of the active conversation, in that order: a crash between the two leaves a message in
    both, never in neither). Indices count LlamaIndex messages.

    Example:
        ```python
        import asyncio

        from llama_index.core.memory import Memory

        from chatmem import AsyncInMemoryChatMemoryRepository
        from chatmem.interop.llama_index import ChatmemDBChatStore

        store = ChatmemDBChatStore(AsyncInMemoryChatMemoryRepository())
        memory = Memory.from_defaults(session_id="007", chat_store=store, token_limit=4000)
        print(asyncio.run(memory.aget()))
        ```

    Args:
        repository: An async chatmem repository.

    Raises:
        ConfigurationError: If ``repository`` is not async.
    """

    _repository: Any = PrivateAttr()
    _appends: bool = PrivateAttr()  # asked once, as ChatmemChatStore does

    def __init__(self, repository: Any) -> None:
        if not _is_async(repository):
            raise ConfigurationError("ChatmemDBChatStore needs an async repository")
        super().__init__()
        self._repository = repository
        self._appends = isinstance(repository, AsyncChatMemoryLog)

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serializes."""
        return "ChatmemDBChatStore"

    @staticmethod
    def _where(key: str, status: MessageStatus | None) -> str:
        return key + ARCHIVE_SUFFIX if status == MessageStatus.ARCHIVED else key

    async def _read(self, conversation_id: str) -> list[ChatMessage]:
        history = await self._repository.find_by_conversation_id(conversation_id)
        return to_llama_index(history, lossy=True)

    async def _write(self, conversation_id: str, messages: list[ChatMessage]) -> None:
        await self._repository.save_all(conversation_id, from_llama_index(messages))

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Return a key's messages of one status (both, archived first, for ``None``).

        Args:
            key: The conversation id.
            status: Which messages.
            limit: At most this many.
            offset: Skip this many first.
        """
        if status is None:
            messages = [*await self._read(key + ARCHIVE_SUFFIX), *await self._read(key)]
        else:
            messages = await self._read(self._where(key, status))
        start = offset or 0
        return messages[start : start + limit if limit is not None else None]

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """Count a key's messages of one status.

        Args:
            key: The conversation id.
            status: Which messages (``None`` for both).
        """
        return len(await self.get_messages(key, status))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append a message.

        Args:
            key: The conversation id.
            message: The message.
            status: Active or archived.
        """
        await self.add_messages(key, [message], status)

    async def add_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append messages.

        Args:
            key: The conversation id.
            messages: The messages, oldest first.
            status: Active or archived.
        """
        where = self._where(key, status)
        if self._appends:
            latest = await self._repository.find_latest(where, MessageType.ASSISTANT)
            converted = from_llama_index(messages, tool_names=_call_names(latest))
            await self._repository.append(where, converted)
        else:
            await self._write(where, [*await self._read(where), *messages])

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Replace a key's messages of one status.

        Args:
            key: The conversation id.
            messages: The new messages.
            status: Active or archived.
        """
        await self._write(self._where(key, status), messages)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the active message at an index and return it.

        Args:
            key: The conversation id.
            idx: The index among the active messages.
        """
        messages = await self._read(key)
        if not -len(messages) <= idx < len(messages):
            return None
        removed = messages.pop(idx)
        await self._write(key, messages)
        return removed

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete a key's messages of one status (both for ``None``).

        Args:
            key: The conversation id.
            status: Which messages.
        """
        if status in (None, MessageStatus.ACTIVE):
            await self._repository.delete_by_conversation_id(key)
        if status in (None, MessageStatus.ARCHIVED):
            await self._repository.delete_by_conversation_id(key + ARCHIVE_SUFFIX)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` active messages and return them.

        Args:
            key: The conversation id.
            n: How many.
        """
        messages = await self._read(key)
        await self._write(key, messages[n:])
        return messages[:n]

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Move the oldest ``n`` active messages to the archive and return them.

        Args:
            key: The conversation id.
            n: How many.
        """
        messages = await self._read(key)
        oldest = messages[:n]
        if oldest:
            await self.add_messages(key, oldest, MessageStatus.ARCHIVED)
            await self._write(key, messages[n:])
        return oldest

    async def get_keys(self) -> list[str]:
        """Return every key (archives excluded)."""
        ids = await self._repository.find_conversation_ids()
        return [i for i in ids if not i.endswith(ARCHIVE_SUFFIX)]
