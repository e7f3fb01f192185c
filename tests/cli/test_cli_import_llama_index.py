"""Importing conversations that LlamaIndex's chat stores wrote: llama-index-core's own, and
the PostgreSQL and Redis stores of llama-index-storage-chat-store-postgres and -redis."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
import sqlalchemy
from llama_index.core.base.llms import types as li
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.storage.chat_store.postgres import PostgresChatStore
from llama_index.storage.chat_store.redis import RedisChatStore
from sqlalchemy.ext.asyncio import create_async_engine

from chatmem import InMemoryChatMemoryRepository
from chatmem_cli.importers.llama_index import (
    import_conversations,
    llama_index_postgres_conversations,
    llama_index_redis_conversations,
    llama_index_simple_conversations,
    llama_index_sql_conversations,
)
from chatmem_cli.importers.sources import SourceError
from tests.support.servers import server_url


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
    assert first.left_out == 0  # every store keeps tool calls and results
    for session in sessions:
        stored = repository.find_by_conversation_id(session)
        assert [m.type for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[2].responses[0].name == "weather"  # type: ignore[union-attr]
    again = import_conversations(mine, repository)
    assert (again.messages_stored, again.conversations_skipped) == (0, len(sessions))


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


def test_simple_chat_store_file_is_read_as_json(tmp_path: Path) -> None:
    # The file format SimpleChatStore.persist writes, written here as text: the importer
    # reads it without LlamaIndex's serializer (which some pydantic releases break).
    def message(role: str, blocks: list[dict[str, object]], **kwargs: str) -> dict[str, object]:
        return {"role": role, "additional_kwargs": kwargs, "blocks": blocks}

    def text(value: str) -> dict[str, str]:
        return {"block_type": "text", "text": value}

    store = {
        session: [
            message("user", [text(f"weather in {session}?")]),
            message(
                "assistant",
                [
                    {
                        "block_type": "tool_call",
                        "tool_call_id": f"c-{session}",
                        "tool_name": "weather",
                        "tool_kwargs": {"city": session},
                    }
                ],
            ),
            message("tool", [text("sunny")], tool_call_id=f"c-{session}"),
            message("assistant", [text("Sunny.")]),
        ]
        for session in ("alice", "bob")
    }
    path = tmp_path / "chat_store.json"
    path.write_text(json.dumps({"store": store, "class_name": "SimpleChatStore"}), "utf-8")
    check(list(llama_index_simple_conversations(path)), ["alice", "bob"])


def test_unknown_table_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="llama-index-sql: no table 'llama_index_memory'"):
        list(llama_index_sql_conversations(f"sqlite:///{tmp_path / 'none.db'}"))


def _plain_postgres_url() -> str:
    return server_url("postgresql").replace("postgresql+psycopg://", "postgresql://")


def close_postgres_store(store: PostgresChatStore) -> None:
    """Dispose the engines the store made (it has no close of its own)."""
    store._session.kw["bind"].dispose()  # type: ignore[union-attr]
    asyncio.run(store._async_session.kw["bind"].dispose())  # type: ignore[union-attr]


@pytest.mark.parametrize("use_jsonb", [False, True])
def test_postgres_chat_store(use_jsonb: bool) -> None:
    url = _plain_postgres_url()
    schema = f"li_pg_{uuid.uuid4().hex[:8]}"  # the store creates its schema
    sessions = [f"s-{uuid.uuid4().hex[:6]}", f"s-{uuid.uuid4().hex[:6]}"]
    store = PostgresChatStore.from_uri(
        url, table_name="Chats", schema_name=schema, use_jsonb=use_jsonb
    )
    try:
        for session in sessions:
            memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=session)
            for message in conversation(session):
                memory.put(message)  # one add_message per message, as an app does
        # The store lower-cases the table name; so does the reader.
        conversations = list(llama_index_postgres_conversations(url, "Chats", schema))
        assert sorted(c.conversation_id for c in conversations) == sorted(sessions)
        check(conversations, sessions)
        again = list(llama_index_postgres_conversations(url, "chats", schema))
        assert [m.id for c in again for m in c.messages] == [
            m.id for c in conversations for m in c.messages
        ]
    finally:
        close_postgres_store(store)
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_postgres_missing_table_is_an_error() -> None:
    with pytest.raises(SourceError, match=r"no table public\.chatmem_absent_"):
        list(llama_index_postgres_conversations(_plain_postgres_url(), "chatmem_absent_x"))


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    prefix = f"li-import-{uuid.uuid4().hex[:8]}:"
    yield prefix
    with redis.Redis.from_url(server_url("redis")) as client:
        for key in client.scan_iter(match=prefix + "*"):
            client.delete(key)


def test_redis_chat_store(redis_prefix: str) -> None:
    url = server_url("redis")
    store = RedisChatStore(redis_url=url)
    sessions = ["alice", "bob"]
    for session in sessions:
        memory = ChatMemoryBuffer.from_defaults(
            chat_store=store, chat_store_key=redis_prefix + session
        )
        for message in conversation(session):
            memory.put(message)
    with redis.Redis.from_url(url) as client:
        client.set(redis_prefix + "counter", 1)  # not a list: passed over
    conversations = list(llama_index_redis_conversations(url, redis_prefix))
    assert [c.conversation_id for c in conversations] == sessions
    check(conversations, sessions)


def test_redis_list_of_something_else_is_an_error(redis_prefix: str) -> None:
    url = server_url("redis")
    with redis.Redis.from_url(url) as client:
        client.rpush(redis_prefix + "queue", b'{"type": "human", "data": {}}')
    with pytest.raises(SourceError, match="item 0 is not a LlamaIndex chat message"):
        list(llama_index_redis_conversations(url, redis_prefix))
