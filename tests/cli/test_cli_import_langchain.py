"""Importing conversations that LangChain's own histories wrote, with the real packages."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import sqlalchemy
from langchain_core import messages as lc
from langchain_postgres import PostgresChatMessageHistory

from chatmem import InMemoryChatMemoryRepository, UserMessage
from chatmem.interop.langchain import to_langchain
from chatmem_cli.importers._connections import redis_client
from chatmem_cli.importers.langchain import (
    _conversation,
    _converted,
    _direct,
    import_conversations,
    langchain_postgres_conversations,
    langchain_redis_conversations,
    langchain_sql_conversations,
)
from chatmem_cli.importers.sources import SourceError
from tests.support.servers import server_url

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community is being sunset
    from langchain_community.chat_message_histories import (
        RedisChatMessageHistory,
        SQLChatMessageHistory,
    )


def write_sql_histories(
    url: str, conversations: dict[str, list[lc.BaseMessage]], **options: Any
) -> None:
    """Write each conversation with LangChain's SQLChatMessageHistory, on an engine of ours.

    Given a URL, the history makes an engine it never disposes; its SQLite connections are
    then closed by the garbage collector, which Python 3.13 reports as a ResourceWarning.
    """
    engine = sqlalchemy.create_engine(url)
    try:
        for session, messages in conversations.items():
            SQLChatMessageHistory(session, connection=engine, **options).add_messages(messages)
    finally:
        engine.dispose()


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
    write_sql_histories(url, {session: conversation(session) for session in sessions})
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


def test_a_redis_source_url_is_read_as_the_redis_repository_reads_it() -> None:
    # Refused before connecting: a cluster (a source is one server), a repository's option,
    # and a name neither chatmem nor redis-py takes.
    with pytest.raises(SourceError, match=r"langchain-redis: .* one Redis server, not a cluster"):
        list(langchain_redis_conversations("redis+cluster://127.0.0.1:1,127.0.0.1:2"))
    with pytest.raises(SourceError, match=r"option\(s\) key_prefix, ttl apply to a chatmem repo"):
        list(langchain_redis_conversations("redis://127.0.0.1:1/0?ttl=60&key_prefix=app"))
    with pytest.raises(SourceError, match="unknown option 'socket_timout'"):
        list(langchain_redis_conversations("redis://127.0.0.1:1/0?socket_timout=1"))
    client = redis_client(
        "langchain-redis", "redis://127.0.0.1:1?db=3&read_timeout=2&health_check_interval=7"
    )
    try:
        kwargs = client.connection_pool.connection_kwargs
        assert (kwargs["db"], kwargs["socket_timeout"], kwargs["health_check_interval"]) == (
            3,
            2,
            7,
        )
    finally:
        client.close()


def _stored_forms() -> list[list[dict[str, Any]]]:
    """Conversations as ``message_to_dict`` stores them, the direct path's cases and others."""
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    details = {**usage, "input_token_details": {"cache_read": 1}}
    plain = conversation("oslo")
    shaped = [
        lc.HumanMessage("named", name="bob"),
        lc.HumanMessage("with id", id="lc-1"),
        lc.AIMessage("used", usage_metadata=usage, response_metadata={"model": "m"}),
        lc.AIMessage("detailed", usage_metadata=details),
        lc.AIMessage("kw", additional_kwargs={"refusal": None}),
        lc.AIMessage(
            "",
            tool_calls=[
                {"name": "a", "args": {"x": "é", "y": [1, 2.5]}, "id": None},
                {"name": "b", "args": {}, "id": "c2"},
            ],
        ),
        lc.ToolMessage("no name", tool_call_id="c2"),
        lc.ToolMessage("unknown call", tool_call_id="zz"),
        lc.ToolMessage("failed", tool_call_id="c2", name="b", status="error"),
        lc.ToolMessage("artifact", tool_call_id="c2", name="b", artifact={"k": 1}),
        lc.SystemMessage("sys", id=""),
    ]
    fallback = [
        lc.HumanMessage([{"type": "text", "text": "blocks"}]),
        lc.AIMessage(
            "",
            additional_kwargs={
                "tool_calls": [
                    {
                        "id": "o1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ]
            },
        ),
        lc.AIMessage(
            "bad", invalid_tool_calls=[{"name": "f", "args": "{", "id": "i1", "error": None}]
        ),
    ]
    dumped = [[lc.message_to_dict(m) for m in group] for group in (plain, shaped, fallback)]
    # chatmem's own envelope (what to_langchain writes) and a dict missing fields.
    enveloped = [lc.message_to_dict(m) for m in to_langchain([UserMessage("from chatmem")])]
    old = [{"type": "human", "data": {"content": "old row", "type": "human"}}]
    return [*dumped, enveloped, old, [dumped[0][0], *old]]


@pytest.mark.parametrize("timed", [False, True])
def test_the_direct_path_gives_what_langchains_classes_give(timed: bool) -> None:
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    for index, stored in enumerate(_stored_forms()):
        rows = [
            (key, json.loads(json.dumps(d)), at if timed else None) for key, d in enumerate(stored)
        ]
        source = "langchain-sql:t"
        imported = _conversation(source, f"s{index}", rows)
        ids = list(imported.message_ids)  # known before converting
        direct = imported.messages
        through_langchain = _converted(source, f"s{index}", rows)
        assert ids == [m.id for m in direct]
        if index < 2:  # every message of these takes the direct path
            names: dict[str, str] = {}
            assert all(_direct(d, i, None, names) for (_, d, _), i in zip(rows, ids, strict=True))
        if timed:
            assert direct == through_langchain
        else:
            assert [m.model_dump(exclude={"created_at"}) for m in direct] == [
                m.model_dump(exclude={"created_at"}) for m in through_langchain
            ]


def test_ids_are_known_without_converting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'langchain.db'}"
    write_sql_histories(url, {"s": conversation("s")})
    (imported,) = langchain_sql_conversations(url)
    assert "deferred" in repr(imported)
    ids = imported.message_ids
    assert "deferred" in repr(imported)  # still not converted
    assert [m.id for m in imported.messages] == ids
    assert "5 message(s)" in repr(imported)


def test_an_interrupted_import_is_resumed_converting_only_what_is_missing(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'langchain.db'}"
    write_sql_histories(url, {session: conversation(session) for session in ("a", "b", "c")})
    repository = InMemoryChatMemoryRepository()
    a, b, _ = langchain_sql_conversations(url)
    # As if a run stopped after conversation a and the first two messages of b.
    repository.append(a.conversation_id, a.messages)
    repository.append(b.conversation_id, b.messages[:2])
    report = import_conversations(langchain_sql_conversations(url), repository, concurrency=3)
    assert (report.messages_read, report.messages_stored, report.conversations_skipped) == (
        15,
        8,
        1,
    )
    for session in ("a", "b", "c"):
        stored = repository.find_by_conversation_id(session)
        assert len(stored) == len({m.id for m in stored}) == 5
        assert [m.type for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    again = import_conversations(langchain_sql_conversations(url), repository)
    assert (again.messages_stored, again.conversations_skipped) == (0, 3)


def test_concurrent_import_reports_in_the_source_order(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'langchain.db'}"
    sessions = [f"s{i:02d}" for i in range(12)]
    write_sql_histories(url, {session: conversation(session) for session in sessions})
    repository = InMemoryChatMemoryRepository()
    seen: list[tuple[str, int]] = []
    report = import_conversations(
        langchain_sql_conversations(url),
        repository,
        concurrency=4,
        verify=True,
        on_conversation=lambda c, new: seen.append((c.conversation_id, new)),
    )
    assert seen == [(s, 5) for s in sessions]
    assert (report.conversations, report.messages_stored, report.mismatches) == (12, 60, ())
    with pytest.raises(ValueError, match="concurrency"):
        import_conversations([], repository, concurrency=0)
