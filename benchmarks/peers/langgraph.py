"""LangGraph's ``AsyncPostgresSaver``: a thread whose state is a list of messages.

A turn is what a compiled graph with a messages state (``MessagesState``, ``add_messages``)
does with its checkpointer per user message: load the thread's latest checkpoint, then write a
new checkpoint whose messages channel is the old list with the two new messages appended.
The saver writes a channel's whole value on every new version, so the write grows with the
history.
"""

from __future__ import annotations

from typing import Any

import psycopg
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row

from benchmarks.peers._common import answer, libpq_url, question
from benchmarks.peers._pg_schema import create_schema, drop_schema, new_schema

__all__ = ["LangGraphPeer"]


def _pair(i: int) -> list[BaseMessage]:
    return [HumanMessage(question(i)), AIMessage(answer(i))]


def _config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


class LangGraphPeer:
    """LangGraph's Postgres checkpointer, one thread per conversation."""

    name = "langgraph AsyncPostgresSaver"
    window: int | None = None

    def __init__(self) -> None:
        self.store = "postgresql"
        self._url = ""
        self._schema = new_schema("langgraph")
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._saver: AsyncPostgresSaver | None = None
        self._turns = 0
        self._step = 0

    async def open(self, url: str) -> None:
        self._url = url
        # Its tables have fixed names (checkpoints...): a schema of its own keeps them apart.
        await create_schema(url, self._schema)
        self._connection = await psycopg.AsyncConnection.connect(
            libpq_url(url),
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={self._schema}",
        )
        self._saver = AsyncPostgresSaver(self._connection)  # type: ignore[arg-type]
        await self._saver.setup()

    async def _write(self, config: Any, version: str | None, messages: list[BaseMessage]) -> None:
        assert self._saver is not None
        self._step += 1
        checkpoint = empty_checkpoint()
        version = self._saver.get_next_version(version, None)
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": version}
        checkpoint["updated_channels"] = ["messages"]
        metadata: Any = {"source": "loop", "step": self._step, "parents": {}}
        await self._saver.aput(config, checkpoint, metadata, {"messages": version})

    async def _messages(self, thread_id: str) -> tuple[Any, str, list[BaseMessage]]:
        """The latest checkpoint's config, messages version and messages."""
        assert self._saver is not None
        found = await self._saver.aget_tuple(_config(thread_id))
        assert found is not None, thread_id
        checkpoint = found.checkpoint
        messages = list(checkpoint["channel_values"].get("messages", []))
        return found.config, str(checkpoint["channel_versions"]["messages"]), messages

    async def seed(self, conversation_id: str, messages: int) -> None:
        # One checkpoint holding the whole history: what the thread's last checkpoint holds.
        history = [m for i in range((messages + 1) // 2) for m in _pair(i)][:messages]
        await self._write(_config(conversation_id), None, history)

    async def turn(self, conversation_id: str) -> int:
        self._turns += 1
        config, version, messages = await self._messages(conversation_id)
        await self._write(config, version, [*messages, *_pair(self._turns)])
        return len(messages)

    async def stored(self, conversation_id: str) -> list[str]:
        return [str(m.content) for m in (await self._messages(conversation_id))[2]]

    async def close(self) -> None:
        if self._connection is None:
            return
        try:
            await self._connection.close()
        finally:
            self._connection = None
            self._saver = None
            await drop_schema(self._url, self._schema)


def peers(stores: list[str]) -> list[LangGraphPeer]:
    """LangGraph's Postgres checkpointer, if ``stores`` has PostgreSQL."""
    return [LangGraphPeer()] if "postgresql" in stores else []
