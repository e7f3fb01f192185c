"""LlamaIndex's chat stores (PostgreSQL, Redis), read through its ``ChatMemoryBuffer``.

A turn is what a chat engine does per call with a memory over a chat store: ``aget`` (the
whole stored history, trimmed to the buffer's token limit), then ``aput`` of the user's
message and of the assistant's answer (one store write each).
"""

from __future__ import annotations

import uuid
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer

from benchmarks.peers._common import answer, libpq_url, question

__all__ = ["LlamaIndexPeer"]

REDIS_PREFIX = "peers_llama:"


def _pair(i: int) -> list[ChatMessage]:
    return [
        ChatMessage(role=MessageRole.USER, content=question(i)),
        ChatMessage(role=MessageRole.ASSISTANT, content=answer(i)),
    ]


class LlamaIndexPeer:
    """``PostgresChatStore`` or ``RedisChatStore`` under a ``ChatMemoryBuffer``."""

    # The buffer reads every stored message and keeps what fits its token limit.
    window: int | None = None

    def __init__(self, store: str) -> None:
        self.store = store
        self.name = {
            "postgresql": "llama-index PostgresChatStore",
            "redis": "llama-index RedisChatStore",
        }[store]
        self._store: Any = None
        self._url = ""
        self._schema = f"peers_llama_{uuid.uuid4().hex[:8]}"
        self._keys: list[str] = []
        self._turns = 0

    async def open(self, url: str) -> None:
        self._url = url
        if self.store == "postgresql":
            from llama_index.storage.chat_store.postgres import PostgresChatStore

            # A schema of its own, dropped on close (the store creates it).
            self._store = PostgresChatStore.from_uri(
                libpq_url(url), table_name="chats", schema_name=self._schema, use_jsonb=True
            )
        else:
            from llama_index.storage.chat_store.redis import RedisChatStore

            self._store = RedisChatStore(redis_url=url)

    def _key(self, conversation_id: str) -> str:
        return REDIS_PREFIX + conversation_id if self.store == "redis" else conversation_id

    def _memory(self, conversation_id: str) -> ChatMemoryBuffer:
        return ChatMemoryBuffer.from_defaults(
            chat_store=self._store, chat_store_key=self._key(conversation_id)
        )

    async def seed(self, conversation_id: str, messages: int) -> None:
        self._keys.append(self._key(conversation_id))
        history = [m for i in range((messages + 1) // 2) for m in _pair(i)][:messages]
        # The store's batch API: one write of the whole list.
        await self._store.aset_messages(self._key(conversation_id), history)

    async def turn(self, conversation_id: str) -> int:
        memory = self._memory(conversation_id)
        self._turns += 1
        read = len(await memory.aget())
        for message in _pair(self._turns):
            await memory.aput(message)
        return read

    async def stored(self, conversation_id: str) -> list[str]:
        messages = await self._store.aget_messages(self._key(conversation_id))
        return [str(m.content) for m in messages]

    async def close(self) -> None:
        if self._store is None:
            return
        try:
            for key in self._keys:
                await self._store.adelete_messages(key)
        finally:
            if self.store == "postgresql":
                import psycopg

                self._store._session.kw["bind"].dispose()
                await self._store._async_session.kw["bind"].dispose()
                with psycopg.connect(libpq_url(self._url), autocommit=True) as connection:
                    connection.execute(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')
            else:
                await self._store._aredis_client.aclose()
                self._store._redis_client.close()
            self._store = None


def peers(stores: list[str]) -> list[LlamaIndexPeer]:
    """LlamaIndex's chat stores on each of ``stores`` they support."""
    return [LlamaIndexPeer(store) for store in stores if store in ("postgresql", "redis")]
