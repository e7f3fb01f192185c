"""Importing conversations that LangChain's own histories wrote, with the real packages."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from langchain_core import messages as lc
from langchain_postgres import PostgresChatMessageHistory

from chatmem import InMemoryChatMemoryRepository
from chatmem.interop.langchain_import import (
    import_conversations,
    langchain_postgres_conversations,
    langchain_redis_conversations,
    langchain_sql_conversations,
)
from chatmem.interop.sources import SourceError
from tests.conftest import server_url

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community is being sunset
    from langchain_community.chat_message_histories import (
        RedisChatMessageHistory,
        SQLChatMessageHistory,
    )


def conversation(tag: str) -> list[lc.BaseMessage]:
    return [
        lc.SystemMessage("be brief"),
        lc.HumanMessage(f"weather in {tag}?"),
        lc.AIMessage("", tool_calls=[{"name": "weather", "args": {"city": tag}, "id": f"c-{tag}"}]),
        lc.ToolMessage("sunny", tool_call_id=f"c-{tag}", name="weather"),
        lc.AIMessage("Sunny.", response_metadata={"model_name": "m"}),
    ]


def check_import(source: Iterator, sessions: list[str]) -> None:
    repository = InMemoryChatMemoryRepository()
    conversations = [c for c in source if c.conversation_id in sessions]
    first = import_conversations(conversations, repository)
    assert first.conversations == len(sessions)
    assert first.messages_stored == first.messages_read == 5 * len(sessions)
    for session in sessions:
        stored = repository.find_by_conversation_id(session)
        assert [m.type for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
        assert stored[3].responses[0].name == "weather"  # type: ignore[union-attr]
    # Importing again stores nothing: the ids are stable.
    again = import_conversations(conversations, repository)
    assert again.messages_stored == 0


def test_sql_chat_message_history_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'langchain.db'}"
    sessions = ["alice", "bob"]
    for session in sessions:
        SQLChatMessageHistory(session, connection=url).add_messages(conversation(session))
    check_import(langchain_sql_conversations(url), sessions)


def test_langchain_postgres_table() -> None:
    url = server_url("postgresql").replace("postgresql+psycopg://", "postgresql://")
    table = f"lc_import_{uuid.uuid4().hex[:8]}"
    sessions = [str(uuid.uuid4()), str(uuid.uuid4())]
    with psycopg.connect(url, autocommit=True) as connection:
        PostgresChatMessageHistory.create_tables(connection, table)
        try:
            for session in sessions:
                history = PostgresChatMessageHistory(table, session, sync_connection=connection)
                history.add_messages(conversation(session[:4]))
            check_import(langchain_postgres_conversations(url, table), sessions)
            # The row's time is the message's creation time.
            (first, *_) = list(langchain_postgres_conversations(url, table))
            assert first.messages[0].created_at.year >= 2024
        finally:
            connection.execute(f'DROP TABLE "{table}"')


def test_redis_chat_message_history_lists() -> None:
    url = server_url("redis")
    prefix = f"lc-import-{uuid.uuid4().hex[:8]}:"
    sessions = ["alice", "bob"]
    try:
        for session in sessions:
            RedisChatMessageHistory(session, url=url, key_prefix=prefix).add_messages(
                conversation(session)
            )
        check_import(langchain_redis_conversations(url, prefix), sessions)
    finally:
        with redis.Redis.from_url(url) as client:
            for key in client.scan_iter(match=prefix + "*"):
                client.delete(key)


def test_needs_a_repository_that_appends() -> None:
    class FourMethods:
        pass

    with pytest.raises(TypeError, match="appends"):
        import_conversations([], FourMethods())  # type: ignore[arg-type]


def test_missing_tables_are_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="langchain-sql: no table 'message_store'"):
        list(langchain_sql_conversations(f"sqlite:///{tmp_path / 'empty.db'}"))
    url = server_url("postgresql")
    with pytest.raises(SourceError, match="langchain-postgres: no table 'chatmem_absent_x'"):
        list(langchain_postgres_conversations(url, "chatmem_absent_x"))
