"""chatmem through its framework adapters: the turn of each framework, on chatmem's storage.

- ``ChatmemMessageHistory`` (LangChain) with a window of 20: ``RunnableWithMessageHistory``'s
  turn, ``aget_messages`` then ``aadd_messages`` of the human and AI messages;
- ``ChatmemSession`` (OpenAI Agents SDK): the Runner's turn, ``get_items(20)`` then
  ``add_items`` of the user's item and the assistant's answer.

Each runs beside the library's own history or session on the same store.
"""

from __future__ import annotations

from typing import Any

from benchmarks.peers import openai_agents
from benchmarks.peers._common import WINDOW
from benchmarks.peers.chatmem import ChatmemPeer
from benchmarks.peers.langchain import turn_messages
from chatmem.interop.langchain import ChatmemMessageHistory
from chatmem.interop.openai_agents import ChatmemSession

__all__ = ["ChatmemHistoryPeer", "ChatmemSessionPeer"]


class ChatmemHistoryPeer(ChatmemPeer):
    """LangChain's turn through chatmem's ``ChatmemMessageHistory`` (window of 20)."""

    name = "chatmem ChatmemMessageHistory"

    async def turn(self, conversation_id: str) -> int:
        assert self._repository is not None
        history = ChatmemMessageHistory(conversation_id, self._repository, max_messages=WINDOW)
        self._turns += 1
        read = len(await history.aget_messages())
        await history.aadd_messages(turn_messages(self._turns))
        return read


class ChatmemSessionPeer(ChatmemPeer):
    """The Agents SDK Runner's turn through chatmem's ``ChatmemSession``."""

    name = "chatmem ChatmemSession"

    async def turn(self, conversation_id: str) -> int:
        assert self._repository is not None
        session: Any = ChatmemSession(conversation_id, self._repository)
        self._turns += 1
        read = len(await session.get_items(WINDOW))
        await session.add_items(openai_agents.turn_items(self._turns))
        return read


def peers(stores: list[str]) -> list[ChatmemPeer]:
    """The adapters on the stores where their framework's own storage runs too."""
    found: list[ChatmemPeer] = [
        ChatmemHistoryPeer(store) for store in ("postgresql", "redis") if store in stores
    ]
    found += [
        ChatmemSessionPeer(store) for store in ("postgresql", "redis", "sqlite") if store in stores
    ]
    return found
