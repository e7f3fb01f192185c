"""Chat memory strategies: the message window and the token window, sync and async.

``CONVERSATION_ID`` is the advisor-context key that names the conversation. There is no
default conversation id: every call names one.
"""

from __future__ import annotations

from chatmem._async.memory import (
    AsyncChatMemory,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
)
from chatmem._sync.memory import ChatMemory, MessageWindowChatMemory, TokenWindowChatMemory

__all__ = [
    "CONVERSATION_ID",
    "AsyncChatMemory",
    "AsyncMessageWindowChatMemory",
    "AsyncTokenWindowChatMemory",
    "ChatMemory",
    "MessageWindowChatMemory",
    "TokenWindowChatMemory",
]

CONVERSATION_ID = "chat_memory_conversation_id"
"""Advisor-context key holding the conversation id (Spring AI's ``ChatMemory.CONVERSATION_ID``)."""
