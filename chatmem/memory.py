"""Chat memory strategies: the message window, the token window and the summarizing memory.

``CONVERSATION_ID`` is the advisor-context key that names the conversation. There is no
default conversation id: every call names one.
"""

from __future__ import annotations

from chatmem._async.memory import (
    AsyncChatMemory,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    WindowSize,
)
from chatmem._async.summarizing import AsyncSummarizingChatMemory
from chatmem._summaries import DEFAULT_SUMMARY_PROMPT, SUMMARY_END, SUMMARY_START
from chatmem._sync.memory import ChatMemory, MessageWindowChatMemory, TokenWindowChatMemory
from chatmem._sync.summarizing import SummarizingChatMemory

__all__ = [
    "CONVERSATION_ID",
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_END",
    "SUMMARY_START",
    "AsyncChatMemory",
    "AsyncMessageWindowChatMemory",
    "AsyncSummarizingChatMemory",
    "AsyncTokenWindowChatMemory",
    "ChatMemory",
    "MessageWindowChatMemory",
    "SummarizingChatMemory",
    "TokenWindowChatMemory",
    "WindowSize",
]

CONVERSATION_ID = "chat_memory_conversation_id"
"""Advisor-context key holding the conversation id (Spring AI's ``ChatMemory.CONVERSATION_ID``)."""
