"""chatmem itself: the turn its memory advisor makes, on every backend."""

from __future__ import annotations

from benchmarks.peers._common import BATCH, WINDOW, answer, question, sqlite_path
from chatmem import AssistantMessage, AsyncMessageWindowChatMemory, Message, UserMessage
from chatmem.repository import AsyncOwnedChatMemoryLog
from chatmem_repositories import create_async_repository

__all__ = ["STORES", "ChatmemPeer"]

STORES = ("sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra", "neo4j")


class ChatmemPeer:
    """A ``MessageWindowChatMemory`` of 20 messages over chatmem's repository for ``store``.

    A turn is one ``get`` (the window) and one ``add`` of the user's message and the
    assistant's answer, as ``MessageChatMemoryAdvisor`` does per call.
    """

    name = "chatmem"
    window: int | None = WINDOW

    def __init__(self, store: str) -> None:
        self.store = store
        self._repository: AsyncOwnedChatMemoryLog | None = None
        self._memory: AsyncMessageWindowChatMemory | None = None
        self._conversations: list[str] = []
        self._turns = 0

    async def open(self, url: str) -> None:
        if self.store == "sqlite":
            url = f"sqlite:///{sqlite_path(url, self.name.replace(' ', '-'))}"
        elif self.store in ("postgresql", "mariadb"):
            url += ("&" if "?" in url else "?") + "initialize_schema=always"
        elif self.store == "cassandra":
            url += ("&" if "?" in url else "?") + "create_keyspace=true"
        self._repository = create_async_repository(url)
        self._memory = AsyncMessageWindowChatMemory(self._repository, max_messages=WINDOW)

    async def seed(self, conversation_id: str, messages: int) -> None:
        assert self._repository is not None
        self._conversations.append(conversation_id)
        batch: list[Message] = []
        for i in range(messages):
            turn = i // 2
            batch.append(
                UserMessage(question(turn)) if i % 2 == 0 else AssistantMessage(answer(turn))
            )
            if len(batch) == BATCH:
                await self._repository.append(conversation_id, batch)
                batch = []
        if batch:
            await self._repository.append(conversation_id, batch)

    async def turn(self, conversation_id: str) -> int:
        assert self._memory is not None
        self._turns += 1
        window = await self._memory.get(conversation_id)
        await self._memory.add(
            conversation_id,
            [UserMessage(question(self._turns)), AssistantMessage(answer(self._turns))],
        )
        return len(window)

    async def stored(self, conversation_id: str) -> list[str]:
        assert self._repository is not None
        return [
            m.text or "" for m in await self._repository.find_by_conversation_id(conversation_id)
        ]

    async def close(self) -> None:
        if self._repository is None:
            return
        try:
            for conversation_id in self._conversations:
                await self._repository.delete_by_conversation_id(conversation_id)
        finally:
            await self._repository.aclose()
            self._repository = None


def peers(stores: list[str]) -> list[ChatmemPeer]:
    """chatmem on each of ``stores`` it has a backend for."""
    return [ChatmemPeer(store) for store in stores if store in STORES]
