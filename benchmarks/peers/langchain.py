"""LangChain's chat message histories: langchain-postgres and langchain-community's.

A turn is what ``RunnableWithMessageHistory`` does per call: read ``messages`` (the whole
history), then ``add_messages`` of the human message and the AI's answer.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import psycopg
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_postgres import PostgresChatMessageHistory

from benchmarks.peers._common import BATCH, answer, libpq_url, question, sqlalchemy_url, sqlite_path

__all__ = ["LangchainPostgresPeer", "LangchainRedisPeer", "LangchainSQLPeer", "turn_messages"]

# Tables and keys of this process (runs side by side on one server must not drop each
# other's): one table each, as both run on PostgreSQL.
_RUN = uuid.uuid4().hex[:8]
TABLE = f"peers_langchain_postgres_{_RUN}"
SQL_TABLE = f"peers_langchain_sql_{_RUN}"


def turn_messages(i: int) -> list[BaseMessage]:
    return [HumanMessage(question(i)), AIMessage(answer(i))]


def _seed_messages(messages: int) -> list[BaseMessage]:
    return [m for i in range((messages + 1) // 2) for m in turn_messages(i)][:messages]


class _HistoryPeer:
    """A peer made of one history object per conversation (sync histories: plain calls)."""

    name = ""
    window: int | None = None  # the whole history, every turn

    def __init__(self, store: str) -> None:
        self.store = store
        self._histories: dict[str, BaseChatMessageHistory] = {}
        self._turns = 0

    def _history(self, conversation_id: str) -> BaseChatMessageHistory:
        raise NotImplementedError

    async def seed(self, conversation_id: str, messages: int) -> None:
        history = self._histories[conversation_id] = self._history(conversation_id)
        batch = _seed_messages(messages)
        for start in range(0, len(batch), BATCH):
            history.add_messages(batch[start : start + BATCH])

    async def turn(self, conversation_id: str) -> int:
        history = self._histories[conversation_id]
        self._turns += 1
        read = len(history.messages)
        history.add_messages(turn_messages(self._turns))
        return read

    async def stored(self, conversation_id: str) -> list[str]:
        return [str(m.content) for m in self._histories[conversation_id].messages]

    async def _clear(self) -> None:
        for history in self._histories.values():
            history.clear()
        self._histories.clear()


class LangchainPostgresPeer(_HistoryPeer):
    """``langchain_postgres.PostgresChatMessageHistory`` with its async psycopg connection."""

    name = "langchain-postgres"

    def __init__(self) -> None:
        super().__init__("postgresql")
        self._connection: psycopg.AsyncConnection[Any] | None = None

    async def open(self, url: str) -> None:
        self._connection = await psycopg.AsyncConnection.connect(libpq_url(url), autocommit=True)
        await PostgresChatMessageHistory.acreate_tables(self._connection, TABLE)

    def _history(self, conversation_id: str) -> BaseChatMessageHistory:
        # Its session ids are UUIDs; the conversation id ends with one.
        return PostgresChatMessageHistory(
            TABLE, conversation_id.removeprefix("peers-"), async_connection=self._connection
        )

    async def seed(self, conversation_id: str, messages: int) -> None:
        history = self._histories[conversation_id] = self._history(conversation_id)
        batch = _seed_messages(messages)
        for start in range(0, len(batch), BATCH):
            await history.aadd_messages(batch[start : start + BATCH])

    async def turn(self, conversation_id: str) -> int:
        history = self._histories[conversation_id]
        self._turns += 1
        read = len(await history.aget_messages())
        await history.aadd_messages(turn_messages(self._turns))
        return read

    async def stored(self, conversation_id: str) -> list[str]:
        messages = await self._histories[conversation_id].aget_messages()
        return [str(m.content) for m in messages]

    async def close(self) -> None:
        if self._connection is None:
            return
        try:
            for history in self._histories.values():
                await history.aclear()
            self._histories.clear()
            await PostgresChatMessageHistory.adrop_table(self._connection, TABLE)
        finally:
            await self._connection.close()
            self._connection = None


class LangchainRedisPeer(_HistoryPeer):
    """langchain-community's ``RedisChatMessageHistory`` (a Redis list per session)."""

    name = "langchain-community"

    def __init__(self) -> None:
        super().__init__("redis")
        self._url = ""

    async def open(self, url: str) -> None:
        self._url = url

    def _history(self, conversation_id: str) -> BaseChatMessageHistory:
        from langchain_community.chat_message_histories import RedisChatMessageHistory

        return RedisChatMessageHistory(
            conversation_id, url=self._url, key_prefix=f"peers_lc_{_RUN}:"
        )

    async def close(self) -> None:
        await self._clear()


class LangchainSQLPeer(_HistoryPeer):
    """langchain-community's ``SQLChatMessageHistory`` through a SQLAlchemy engine."""

    name = "langchain-community-sql"
    _drivers: ClassVar[dict[str, str]] = {
        "sqlite": "pysqlite",
        "postgresql": "psycopg",
        "mariadb": "pymysql",
    }

    def __init__(self, store: str) -> None:
        super().__init__(store)
        self._engine: Any = None

    async def open(self, url: str) -> None:
        from sqlalchemy import create_engine

        if self.store == "sqlite":
            url = f"sqlite:///{sqlite_path(url, 'langchain')}"
        else:
            url = sqlalchemy_url(url, self._drivers[self.store])
        self._engine = create_engine(url)

    def _history(self, conversation_id: str) -> BaseChatMessageHistory:
        from langchain_community.chat_message_histories import SQLChatMessageHistory

        return SQLChatMessageHistory(conversation_id, table_name=SQL_TABLE, connection=self._engine)

    async def close(self) -> None:
        if self._engine is None:
            return
        try:
            await self._clear()
            from sqlalchemy import text

            with self._engine.begin() as connection:
                connection.execute(text(f"DROP TABLE IF EXISTS {SQL_TABLE}"))
        finally:
            self._engine.dispose()
            self._engine = None


def peers(stores: list[str]) -> list[Any]:
    """LangChain's histories on each of ``stores`` they support."""
    found: list[Any] = []
    if "postgresql" in stores:
        found.append(LangchainPostgresPeer())
    if "redis" in stores:
        found.append(LangchainRedisPeer())
    found += [LangchainSQLPeer(s) for s in ("sqlite", "postgresql", "mariadb") if s in stores]
    return found
