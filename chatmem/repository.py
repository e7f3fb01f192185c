"""The storage contract and the in-memory repository, sync and async.

See :class:`ChatMemoryRepository` for the four methods every backend implements and
:class:`ChatMemoryLog` for the log capabilities that make memory O(window);
:class:`SessionLog` adds versions (checked appends) and
``delete_between`` (rewinds) to a log; :class:`OwnedChatMemoryLog` is a session log that
closes what it owns (what ``create_repository`` returns). :class:`WindowReader`,
:class:`MessageCounter`, :class:`ServerInfo` and
:class:`SummaryStore` are optional capabilities, each its own protocol: chatmem checks for
one with ``isinstance`` and falls back when a repository lacks it, so a backend implements
only what its store does well.
"""

from __future__ import annotations

from chatmem._async.in_memory import AsyncInMemoryChatMemoryRepository
from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    AsyncMessageCounter,
    AsyncOwnedChatMemoryLog,
    AsyncServerInfo,
    AsyncSessionLog,
    AsyncSummaryStore,
    AsyncWindowReader,
)
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._summaries import ConversationSummary
from chatmem._sync.in_memory import InMemoryChatMemoryRepository
from chatmem._sync.repository import (
    ChatMemoryLog,
    ChatMemoryRepository,
    MessageCounter,
    OwnedChatMemoryLog,
    ServerInfo,
    SessionLog,
    SummaryStore,
    WindowReader,
)

__all__ = [
    "AsyncChatMemoryLog",
    "AsyncChatMemoryRepository",
    "AsyncInMemoryChatMemoryRepository",
    "AsyncMessageCounter",
    "AsyncOwnedChatMemoryLog",
    "AsyncServerInfo",
    "AsyncSessionLog",
    "AsyncSummaryStore",
    "AsyncWindowReader",
    "ChatMemoryLog",
    "ChatMemoryRepository",
    "ConversationPage",
    "ConversationSummary",
    "InMemoryChatMemoryRepository",
    "MessageCounter",
    "OwnedChatMemoryLog",
    "Position",
    "ServerInfo",
    "SessionLog",
    "StoredMessage",
    "SummaryStore",
    "WindowReader",
]
