"""Searching stored history: a tool the model calls to find what was said earlier.

The model sends a query; the conversation is the request's (``CONVERSATION_ID``, passed to
the tool in its :class:`~chatmem.tools.ToolContext`), so the model can search only the
conversation it is in, and, when enabled, the same owner's other conversations.

Example:
    ```python
    from chatmem import CONVERSATION_ID, ChatClient, MessageWindowChatMemory
    from chatmem.history_search import history_search_tool
    from chatmem_advisors import MessageChatMemoryAdvisor

    memory = MessageWindowChatMemory(repository, max_messages=20)
    client = (ChatClient.builder(model)
              .default_advisors(MessageChatMemoryAdvisor(memory))
              .default_tools(history_search_tool(repository))
              .build())
    client.prompt("Which hotel did we pick last month?").advisors(
        {CONVERSATION_ID: "007"}).call().content()
    ```
"""

from __future__ import annotations

from chatmem._async.history_search import AsyncHistorySearch, async_history_search_tool
from chatmem._history_search import (
    HISTORY_SEARCH_END,
    HISTORY_SEARCH_START,
    SEARCHED_TYPES,
    TRUNCATION_MARK,
    HistoryHit,
    HistorySearchLimits,
    HistorySearchResult,
)
from chatmem._sync.history_search import HistorySearch, history_search_tool

__all__ = [
    "HISTORY_SEARCH_END",
    "HISTORY_SEARCH_START",
    "SEARCHED_TYPES",
    "TRUNCATION_MARK",
    "AsyncHistorySearch",
    "HistoryHit",
    "HistorySearch",
    "HistorySearchLimits",
    "HistorySearchResult",
    "async_history_search_tool",
    "history_search_tool",
]
