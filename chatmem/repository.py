"""The storage contract and the in-memory repository, sync and async.

See :class:`ChatMemoryRepository` for the four methods every backend implements and
:class:`ChatMemoryLog` for the log capabilities that make memory O(window).
"""

from __future__ import annotations

from chatmem._async.in_memory import AsyncInMemoryChatMemoryRepository
from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    AsyncServerInfo,
    AsyncWindowReader,
)
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._sync.in_memory import InMemoryChatMemoryRepository
from chatmem._sync.repository import (
    ChatMemoryLog,
    ChatMemoryRepository,
    ServerInfo,
    WindowReader,
)

__all__ = [
    "AsyncChatMemoryLog",
    "AsyncChatMemoryRepository",
    "AsyncInMemoryChatMemoryRepository",
    "AsyncServerInfo",
    "AsyncWindowReader",
    "ChatMemoryLog",
    "ChatMemoryRepository",
    "ConversationPage",
    "InMemoryChatMemoryRepository",
    "Position",
    "ServerInfo",
    "StoredMessage",
    "WindowReader",
]
