"""Importing conversations that llama-index-core's chat stores wrote."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
import sqlalchemy
from llama_index.core.base.llms import types as li
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from sqlalchemy.ext.asyncio import create_async_engine

from chatmem import InMemoryChatMemoryRepository
from chatmem.interop.llama_index_import import (
    import_conversations,
    llama_index_simple_conversations,
    llama_index_sql_conversations,
)
from tests.conftest import server_url


def conversation(tag: str) -> list[li.ChatMessage]:
    return [
        li.ChatMessage(role="user", content=f"weather in {tag}?"),
        li.ChatMessage(
            role="assistant",
            blocks=[
                li.ToolCallBlock(
                    tool_call_id=f"c-{tag}", tool_name="weather", tool_kwargs={"city": tag}
                )
            ],
        ),
        li.ChatMessage(
            role="tool", content="sunny", additional_kwargs={"tool_call_id": f"c-{tag}"}
        ),
        li.ChatMessage(role="assistant", content="Sunny."),
    ]


def check(conversations: list, sessions: list[str]) -> None:
    repository = InMemoryChatMemoryRepository()
    mine = [c for c in conversations if c.conversation_id in sessions]
    first = import_conversations(mine, repository)
    assert (first.conversations, first.messages_stored) == (len(sessions), 4 * len(sessions))
    for session in sessions:
        stored = repository.find_by_conversation_id(session)
        assert [m.type for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[2].responses[0].name == "weather"  # type: ignore[union-attr]
    assert import_conversations(mine, repository).messages_stored == 0


async def write_with_memory(async_url: str, table: str, sessions: list[str]) -> None:
    engine = create_async_engine(async_url)
    try:
        for session in sessions:
            store = SQLAlchemyChatStore(table_name=table, async_engine=engine)
            memory = Memory.from_defaults(session_id=session, chat_store=store, token_limit=100_000)
            await memory.aput_messages(conversation(session))
    finally:
        await engine.dispose()


def test_memory_sql_store_on_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    sessions = ["alice", "bob"]
    asyncio.run(
        write_with_memory(f"sqlite+aiosqlite:///{database}", "llama_index_memory", sessions)
    )
    conversations = list(llama_index_sql_conversations(f"sqlite:///{database}"))
    check(conversations, sessions)
    assert conversations[0].messages[0].created_at.year >= 2024  # the row's timestamp


def test_memory_sql_store_on_postgresql() -> None:
    url = server_url("postgresql")
    table = f"li_import_{uuid.uuid4().hex[:8]}"
    sessions = [f"s-{uuid.uuid4().hex[:6]}", f"s-{uuid.uuid4().hex[:6]}"]
    try:
        asyncio.run(write_with_memory(url, table, sessions))  # psycopg 3 is async as well
        check(list(llama_index_sql_conversations(url, table)), sessions)
    finally:
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as connection:
            connection.execute(sqlalchemy.text(f'DROP TABLE IF EXISTS "{table}"'))
        engine.dispose()


def test_simple_chat_store_file(tmp_path: Path) -> None:
    store = SimpleChatStore()
    for session in ("alice", "bob"):
        store.set_messages(session, conversation(session))
    path = tmp_path / "chat_store.json"
    store.persist(str(path))
    check(list(llama_index_simple_conversations(path)), ["alice", "bob"])


def test_unknown_table_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(sqlalchemy.exc.NoSuchTableError):
        list(llama_index_sql_conversations(f"sqlite:///{tmp_path / 'none.db'}"))
