"""The OpenAI Agents SDK's sessions: SQLAlchemySession, RedisSession and SQLiteSession.

A turn is what the SDK's Runner does with a session per model call once a session limit is
set: ``get_items(limit)``, then ``add_items`` of the user's item and the assistant's answer.
"""

from __future__ import annotations

import uuid
from typing import Any

from agents import SQLiteSession
from agents.extensions.memory import RedisSession, SQLAlchemySession

from benchmarks.peers._common import BATCH, WINDOW, answer, question, sqlalchemy_url, sqlite_path

__all__ = ["AgentsSessionPeer", "turn_items"]

# Tables and keys of this process: runs side by side on one server must not drop each other's.
_RUN = uuid.uuid4().hex[:8]
SESSIONS_TABLE = f"peers_agent_sessions_{_RUN}"
MESSAGES_TABLE = f"peers_agent_messages_{_RUN}"
REDIS_PREFIX = f"peers_agents_{_RUN}"
NAMES = {
    "postgresql": "openai-agents SQLAlchemySession",
    "redis": "openai-agents RedisSession",
    "sqlite": "openai-agents SQLiteSession",
}


def turn_items(i: int) -> list[Any]:
    """The user's item and the assistant's answer, as the Runner adds them."""
    return [
        {"role": "user", "content": question(i)},
        {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer(i), "annotations": []}],
        },
    ]


def _text(item: Any) -> str:
    content = item["content"]
    return content if isinstance(content, str) else str(content[0]["text"])


class AgentsSessionPeer:
    """The SDK's own session for ``store`` (postgresql, redis or sqlite)."""

    window: int | None = WINDOW

    def __init__(self, store: str) -> None:
        self.store = store
        self.name = NAMES[store]
        self._sessions: dict[str, Any] = {}
        self._engine: Any = None
        self._redis: Any = None
        self._sqlite = ""
        self._turns = 0

    async def open(self, url: str) -> None:
        if self.store == "postgresql":
            from sqlalchemy.ext.asyncio import create_async_engine

            self._engine = create_async_engine(sqlalchemy_url(url, "psycopg"))
        elif self.store == "redis":
            from redis.asyncio import Redis

            self._redis = Redis.from_url(url)
        else:
            self._sqlite = str(sqlite_path(url, "openai-agents"))

    def _session(self, conversation_id: str) -> Any:
        if self.store == "postgresql":
            return SQLAlchemySession(
                conversation_id,
                engine=self._engine,
                create_tables=True,
                sessions_table=SESSIONS_TABLE,
                messages_table=MESSAGES_TABLE,
            )
        if self.store == "redis":
            return RedisSession(conversation_id, redis_client=self._redis, key_prefix=REDIS_PREFIX)
        return SQLiteSession(conversation_id, self._sqlite)

    async def seed(self, conversation_id: str, messages: int) -> None:
        session = self._sessions[conversation_id] = self._session(conversation_id)
        items = [item for i in range((messages + 1) // 2) for item in turn_items(i)][:messages]
        for start in range(0, len(items), BATCH):
            await session.add_items(items[start : start + BATCH])

    async def turn(self, conversation_id: str) -> int:
        session = self._sessions[conversation_id]
        self._turns += 1
        read = len(await session.get_items(WINDOW))
        await session.add_items(turn_items(self._turns))
        return read

    async def stored(self, conversation_id: str) -> list[str]:
        return [_text(item) for item in await self._sessions[conversation_id].get_items()]

    async def close(self) -> None:
        try:
            for session in self._sessions.values():
                await session.clear_session()
                if isinstance(session, SQLiteSession):
                    session.close()
            self._sessions.clear()
            if self._engine is not None:
                from sqlalchemy import text

                async with self._engine.begin() as connection:
                    await connection.execute(text(f"DROP TABLE IF EXISTS {MESSAGES_TABLE}"))
                    await connection.execute(text(f"DROP TABLE IF EXISTS {SESSIONS_TABLE}"))
        finally:
            if self._redis is not None:
                await self._redis.aclose()
                self._redis = None
            if self._engine is not None:
                await self._engine.dispose()
                self._engine = None


def peers(stores: list[str]) -> list[AgentsSessionPeer]:
    """The SDK's sessions on each of ``stores`` they support."""
    return [AgentsSessionPeer(store) for store in stores if store in NAMES]
