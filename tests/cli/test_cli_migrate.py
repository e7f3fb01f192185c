"""`chatmem migrate` at scale: 1,000 conversations x 50 messages from SQLite to PostgreSQL and
Redis, verified message by message (ids, types, tool calls, metadata); a re-run adds nothing.

The default run copies 200 conversations to keep the suite fast on a 2-core machine; set
CHATMEM_MIGRATE_CONVERSATIONS=1000 for the full-size run (about 4 minutes with PostgreSQL).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import pytest
from typer.testing import CliRunner

from chatmem import (
    AssistantMessage,
    ChatMemoryLog,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    encode_message,
    scoped_conversation_id,
)
from chatmem_cli import _transfer_engine as transfer
from chatmem_cli import app
from chatmem_cli._transfer_engine import import_lines, iter_conversations, iter_history
from chatmem_repositories import create_repository
from tests.support.servers import server_url

CONVERSATIONS = int(os.environ.get("CHATMEM_MIGRATE_CONVERSATIONS", "200"))
MESSAGES = 50


def conversation(index: int) -> list[Message]:
    messages: list[Message] = [SystemMessage(f"You are agent {index}.", metadata={"i": index})]
    turn = 0
    while len(messages) < MESSAGES:
        a, b = f"call_{index}_{turn}_a", f"call_{index}_{turn}_b"
        messages += [
            UserMessage(f"question {turn}", metadata={"turn": turn, "tags": ["q", None, 1.5]}),
            AssistantMessage(
                tool_calls=[
                    ToolCall(id=a, name="lookup", arguments=json.dumps({"q": turn})),
                    ToolCall(id=b, name="weather", arguments='{"city": "Zürich"}'),
                ]
            ),
            ToolResponseMessage(
                responses=[
                    ToolResponse(id=a, name="lookup", response_data=f'{{"hits": {turn}}}'),
                    ToolResponse(id=b, name="weather", response_data="sunny"),
                ]
            ),
            AssistantMessage(f"answer {turn} ✓", metadata={"score": turn / 7}),
        ]
        turn += 1
    return messages[:MESSAGES]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """An SQLite file holding CONVERSATIONS x MESSAGES messages of one fresh owner."""
    owner = f"mig{uuid4().hex[:10]}"
    url = f"sqlite:///{tmp_path_factory.mktemp('migrate') / 'source.db'}"
    with create_repository(url) as repository:
        for index in range(CONVERSATIONS):
            repository.append(scoped_conversation_id(owner, f"c{index:04d}"), conversation(index))
    return url, owner


def _cleanup(url: str, owner: str) -> None:
    with create_repository(url) as repository:
        for conversation_id in list(iter_conversations(repository, owner=owner)):
            repository.delete_by_conversation_id(conversation_id)


@pytest.fixture(params=["postgresql", "redis"])
def destination(request: pytest.FixtureRequest, source: tuple[str, str]) -> Iterator[str]:
    url = server_url(request.param)
    if request.param == "postgresql":
        url += "?initialize_schema=always"
    _cleanup(url, source[1])
    yield url
    _cleanup(url, source[1])


def _verify_equal(source_url: str, destination_url: str, owner: str) -> tuple[int, int]:
    conversations = messages = 0
    with create_repository(source_url) as src, create_repository(destination_url) as dst:
        assert isinstance(src, ChatMemoryLog)
        assert isinstance(dst, ChatMemoryLog)
        for conversation_id in iter_conversations(src, owner=owner):
            expected = [m for page in iter_history(src, conversation_id) for m in page]
            copied = [m for page in iter_history(dst, conversation_id) for m in page]
            # Message equality covers id, created_at, type, text, tool calls and metadata.
            assert copied == expected, conversation_id
            conversations += 1
            messages += len(copied)
        assert sum(1 for _ in iter_conversations(dst, owner=owner)) == conversations
    return conversations, messages


def test_migrate_sqlite_to_server_verified_and_idempotent(
    source: tuple[str, str], destination: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source_url, owner = source
    runner = CliRunner()
    started = time.perf_counter()
    result = runner.invoke(app, ["migrate", source_url, destination, "--owner", owner])
    first = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    total = CONVERSATIONS * MESSAGES
    assert f"read {total} message(s), stored {total} new" in result.output
    assert "Verified" in result.output

    started = time.perf_counter()
    conversations, messages = _verify_equal(source_url, destination, owner)
    check = time.perf_counter() - started
    assert (conversations, messages) == (CONVERSATIONS, total)

    started = time.perf_counter()
    again = runner.invoke(app, ["migrate", source_url, destination, "--owner", owner])
    second = time.perf_counter() - started
    assert again.exit_code == 0, again.output
    assert f"stored 0 new, skipped {total} already there" in again.output
    assert _verify_equal(source_url, destination, owner) == (CONVERSATIONS, total)

    with capsys.disabled():
        scheme = destination.split(":")[0]
        print(
            f"\nmigrate {CONVERSATIONS} x {MESSAGES} sqlite -> {scheme}: copy+count-verify "
            f"{first:.1f} s, message-by-message check {check:.1f} s, re-run {second:.1f} s "
            "(0 new)"
        )


def test_sample_conversation_is_rich(tmp_path: Path) -> None:
    # Guard the generator: every kind of message, tool calls with ids, metadata.
    messages = conversation(3)
    assert len(messages) == MESSAGES
    kinds = {type(m) for m in messages}
    assert kinds == {SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage}
    assert any(isinstance(m, AssistantMessage) and len(m.tool_calls) == 2 for m in messages)


# -- other libraries' stores as sources (--from KIND) -------------------------------------------


def _langchain_conversation(tag: str) -> list[Any]:
    from langchain_core import messages as lc

    return [
        lc.SystemMessage("be brief"),
        lc.HumanMessage(f"weather in {tag}?"),
        lc.AIMessage("", tool_calls=[{"name": "weather", "args": {"city": tag}, "id": f"c-{tag}"}]),
        lc.ToolMessage("sunny", tool_call_id=f"c-{tag}"),  # no name: taken from the call
        lc.AIMessage("Sunny."),
    ]


def _llama_index_conversation(tag: str) -> list[Any]:
    from llama_index.core.base.llms import types as li

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


def _stored(url: str, conversation_id: str) -> list[Message]:
    with create_repository(url) as repository:
        assert isinstance(repository, ChatMemoryLog)
        return [m for page in iter_history(repository, conversation_id) for m in page]


def _migrate_twice(args: list[str], conversations: int, messages: int) -> None:
    """Migrate, check the report, then re-run: nothing new, every conversation skipped."""
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", *args])
    assert result.exit_code == 0, result.output
    assert f"Read {conversations} conversation(s)" in result.output
    assert f"read {messages} message(s), stored {messages} new" in result.output
    assert "Verified" in result.output
    again = runner.invoke(app, ["migrate", *args])
    assert again.exit_code == 0, again.output
    assert f"stored 0 new, skipped {messages} already there" in again.output
    assert f"({conversations} conversation(s) already complete)" in again.output


@pytest.fixture
def server_destination(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    """A server URL and a list the test fills with the conversation ids to delete after."""
    url = server_url(request.param)
    if request.param == "postgresql":
        url += "?initialize_schema=always"
    ids: list[str] = []
    yield url, ids
    with create_repository(url) as repository:
        for conversation_id in ids:
            repository.delete_by_conversation_id(conversation_id)


@pytest.mark.parametrize("server_destination", ["redis"], indirect=True)
def test_from_langchain_sql_table(
    tmp_path: Path, server_destination: tuple[str, list[str]]
) -> None:
    from tests.cli.test_cli_import_langchain import write_sql_histories

    source = f"sqlite:///{tmp_path / 'langchain.db'}"
    destination, cleanup = server_destination
    sessions = [f"lc-{uuid4().hex[:8]}" for _ in range(3)]
    cleanup += sessions
    write_sql_histories(
        source,
        {session: _langchain_conversation(session) for session in sessions},
        table_name="chats",
    )
    args = ["--from", "langchain-sql", source, destination, "--table", "chats"]
    _migrate_twice(args, 3, 15)
    stored = _stored(destination, sessions[0])
    assert [m.type.value for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert stored[3].responses[0].name == "weather"  # type: ignore[attr-defined]


def test_from_langchain_redis_lists(tmp_path: Path) -> None:
    import warnings

    import redis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.chat_message_histories import RedisChatMessageHistory

    url = server_url("redis")
    prefix = f"lc-mig-{uuid4().hex[:8]}:"
    destination = f"sqlite:///{tmp_path / 'chatmem.db'}"
    try:
        for session in ("alice", "bob"):
            RedisChatMessageHistory(session, url=url, key_prefix=prefix).add_messages(
                _langchain_conversation(session)
            )
        _migrate_twice(["--from", "langchain-redis", url, destination, "--prefix", prefix], 2, 10)
        assert _stored(destination, "bob")[-1].text == "Sunny."  # type: ignore[union-attr]
    finally:
        with redis.Redis.from_url(url) as client:
            for key in client.scan_iter(match=prefix + "*"):
                client.delete(key)


@pytest.mark.parametrize("server_destination", ["postgresql"], indirect=True)
def test_from_llama_index_postgres_store_resumes(
    server_destination: tuple[str, list[str]],
) -> None:
    import psycopg
    from llama_index.storage.chat_store.postgres import PostgresChatStore

    from chatmem_cli.importers.sources import read_source

    source = server_url("postgresql").replace("postgresql+psycopg://", "postgresql://")
    table = f"li_mig_{uuid4().hex[:8]}"
    destination, cleanup = server_destination
    sessions = [f"li-{uuid4().hex[:8]}" for _ in range(2)]
    cleanup += sessions
    store = PostgresChatStore.from_uri(source, table_name=table, use_jsonb=True)
    try:
        for session in sessions:
            store.set_messages(session, _llama_index_conversation(session))
        # An interrupted earlier run stored the first two messages of one conversation.
        (first, *_) = read_source("llama-index-postgres", source, table=table)
        with create_repository(destination) as repository:
            assert isinstance(repository, ChatMemoryLog)
            repository.append(first.conversation_id, first.messages[:2])
        runner = CliRunner()
        args = ["migrate", "--from", "llama-index-postgres", source, destination]
        result = runner.invoke(app, [*args, "--table", table, "--schema", "public"])
        assert result.exit_code == 0, result.output
        assert "read 8 message(s), stored 6 new, skipped 2 already there" in result.output
        for session in sessions:
            stored = _stored(destination, session)
            assert [m.type.value for m in stored] == ["user", "assistant", "tool", "assistant"]
            assert stored[2].responses[0].name == "weather"  # type: ignore[attr-defined]
        again = runner.invoke(app, [*args, "--table", table])
        assert "stored 0 new, skipped 8 already there" in again.output, again.output
    finally:
        store._session.kw["bind"].dispose()  # type: ignore[union-attr]
        with psycopg.connect(source, autocommit=True) as connection:
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')


def test_from_llama_index_redis_store(tmp_path: Path) -> None:
    import redis
    from llama_index.storage.chat_store.redis import RedisChatStore

    url = server_url("redis")
    prefix = f"li-mig-{uuid4().hex[:8]}:"
    destination = f"sqlite:///{tmp_path / 'chatmem.db'}"
    store = RedisChatStore(redis_url=url)
    try:
        for session in ("alice", "bob", "carol"):
            for message in _llama_index_conversation(session):
                store.add_message(prefix + session, message)
        _migrate_twice(["--from", "llama-index-redis", url, destination, "--prefix", prefix], 3, 12)
        stored = _stored(destination, "carol")
        assert stored[1].tool_calls[0].arguments == '{"city": "carol"}'  # type: ignore[attr-defined]
    finally:
        with redis.Redis.from_url(url) as client:
            for key in client.scan_iter(match=prefix + "*"):
                client.delete(key)


def test_from_llama_index_simple_file(tmp_path: Path) -> None:
    from llama_index.core.storage.chat_store import SimpleChatStore

    store = SimpleChatStore()
    store.set_messages("alice", _llama_index_conversation("alice"))
    path = tmp_path / "chat_store.json"
    store.persist(str(path))
    destination = f"sqlite:///{tmp_path / 'chatmem.db'}"
    _migrate_twice(["--from", "llama-index-simple", str(path), destination], 1, 4)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--from", "nope", "x"], "unknown source kind 'nope'; the kinds are: langchain-postgres"),
        (
            ["--from", "langchain-sql", "sqlite:///{tmp}/missing.db"],
            "no such SQLite file",
        ),
        (
            ["--from", "llama-index-simple", "{tmp}/missing.json"],
            "llama-index-simple: no such file",
        ),
        (
            ["--from", "langchain-redis", "redis://127.0.0.1:1/0", "--table", "t"],
            "takes no option 'table'; it takes: prefix",
        ),
        (["--from", "langchain-redis", "redis://x", "--owner", "o"], "--owner selects"),
        (["--from", "langchain-redis", "redis://x", "--option", "oops"], "NAME=VALUE"),
        (["sqlite:///{tmp}/a.db", "--prefix", "p"], "--prefix applies to --from"),
        (["--from", "langchain-redis", "redis://127.0.0.1:1/0"], "cannot connect"),
    ],
)
def test_source_errors_are_one_line_and_write_nothing(
    tmp_path: Path, args: list[str], error: str
) -> None:
    destination = tmp_path / "chatmem.db"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(app, ["migrate", *argv[:3], f"sqlite:///{destination}", *argv[3:]])
    assert result.exit_code == 1, result.output
    assert error in " ".join(result.output.split()), result.output
    assert not destination.exists()
    assert not (tmp_path / "missing.db").exists()


def test_a_registered_reader_that_is_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chatmem_cli.importers import sources

    kind = sources.SourceKind(
        "future-kind", "chatmem_cli.importers.sources", "not_written_yet", "URL"
    )
    monkeypatch.setattr(sources, "SOURCES", {**sources.SOURCES, kind.name: kind})
    with pytest.raises(sources.SourceError, match=r"needs chatmem_cli\.importers\.sources\."):
        sources.read_source("future-kind", "x")


def test_from_spring_ai_jdbc_table(tmp_path: Path) -> None:
    # Spring AI 1.0.1's JdbcChatMemoryRepository writes on Java (the importer tests' writer).
    # Its table is Spring AI's default one on the shared server, where other tests may write
    # at the same time: only this test's conversations are checked.
    import sqlalchemy

    from tests.cli.test_cli_import_spring_ai import _write

    url = server_url("postgresql")
    parts = urlsplit(url)
    jdbc = f"jdbc:postgresql://{parts.hostname}:{parts.port}{parts.path}"
    conversations = [f"spring-mig-{uuid4().hex[:8]}" for _ in range(2)]
    _write(
        "jdbc",
        "SpringAiJdbcWriter.java",
        jdbc,
        parts.username or "",
        parts.password or "",
        *conversations,
    )
    destination = f"sqlite:///{tmp_path / 'chatmem.db'}"
    try:
        runner = CliRunner()
        for _ in range(2):  # the second run stores none of these again
            result = runner.invoke(app, ["migrate", "--from", "spring-ai-jdbc", url, destination])
            assert result.exit_code == 0, result.output
            # Spring AI kept the tool call and its result without ids: left out, and said so.
            assert "message(s) left out" in result.output
            for conversation in conversations:
                stored = _stored(destination, conversation)
                assert [m.type.value for m in stored] == ["system", "user", "assistant"]
    finally:
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as connection:
            connection.execute(
                sqlalchemy.text(
                    "DELETE FROM spring_ai_chat_memory WHERE conversation_id IN :ids"
                ).bindparams(sqlalchemy.bindparam("ids", expanding=True)),
                {"ids": conversations},
            )
        engine.dispose()


def test_a_source_driver_error_is_one_line(tmp_path: Path) -> None:
    parts = urlsplit(server_url("postgresql"))
    source = f"postgresql://chatmem_nobody:wrong@{parts.hostname}:{parts.port}{parts.path}"
    result = CliRunner().invoke(
        app, ["migrate", "--from", "langchain-postgres", source, f"sqlite:///{tmp_path}/d.db"]
    )
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert "reading langchain-postgres at postgresql://chatmem_nobody:***@" in output
    assert "OperationalError" in output
    assert "wrong" not in output
    assert "Traceback" not in output


# -- import: the export's lines, checked, then appended once ---------------------------------


def _export_lines(conversations: dict[str, list[Message]]) -> list[str]:
    return [
        '{"conversation_id":' + json.dumps(cid) + f',"message":{encode_message(m)}}}\n'
        for cid, messages in conversations.items()
        for m in messages
    ]


@pytest.mark.parametrize("where", ["sqlite", "postgresql", "redis"])
@pytest.mark.parametrize("concurrency", [1, 4])
def test_import_resumes_compares_and_stores_each_message_once(
    where: str, concurrency: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ten lines per decoding call: the chunk with a line of another shape is parsed line by
    # line, the others as the export's own.
    monkeypatch.setattr(transfer, "_CHUNK", 10)
    url = f"sqlite:///{tmp_path / 't.db'}" if where == "sqlite" else server_url(where)
    if where == "postgresql":
        url += "?initialize_schema=always"
    tag = uuid4().hex[:8]
    conversations = {f"imp-{tag}-{i}": conversation(i)[:12] for i in range(9)}
    ids = list(conversations)
    lines = _export_lines(conversations)
    # Lines not as export writes them (spaces, keys reordered) take the general parse.
    record = json.loads(lines[5])
    lines[5] = (
        json.dumps({"message": record["message"], "conversation_id": record["conversation_id"]})
        + "\n"
    )
    # The same message twice, and a long conversation split into two runs of lines.
    lines.insert(7, lines[6])
    extra = conversation(50)[:3]
    lines += _export_lines({ids[0]: extra})
    path = tmp_path / "export.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    with create_repository(url) as repository:
        assert isinstance(repository, ChatMemoryLog)
        try:
            # As if an earlier run stopped part-way: one conversation whole, one in part.
            repository.append(ids[1], conversations[ids[1]])
            repository.append(ids[2], conversations[ids[2]][:5])
            # A stored message of the same id with other content is a conflict, not written.
            changed = conversations[ids[3]][4].model_copy(update={"metadata": {"other": 1}})
            repository.append(ids[3], [changed])
            with path.open(encoding="utf-8") as source:
                report = import_lines(repository, source, batch_size=5, concurrency=concurrency)
            total = 9 * 12 + 1 + 3
            assert report.read == total
            assert (
                report.stored == total - 1 - 12 - 5 - 1
            )  # the copy, ids[1], part of ids[2], the conflict
            assert report.conflicts == [
                f"conversation {ids[3]!r}: message id {changed.id!r} is already stored with "
                "different content"
            ]
            assert report.known == 1 + 12 + 5
            for cid in ids[2:]:
                stored = [m for page in iter_history(repository, cid) for m in page]
                expected = conversations[cid]
                if cid == ids[3]:
                    expected = [changed] + [m for m in expected if m.id != changed.id]
                assert sorted(m.id for m in stored) == sorted(m.id for m in expected)
            first = [m for page in iter_history(repository, ids[0]) for m in page]
            assert first == conversations[ids[0]] + extra
            with path.open(encoding="utf-8") as source:
                again = import_lines(repository, source, concurrency=concurrency)
            assert (again.stored, again.known, len(again.conflicts)) == (0, total - 1, 1)
        finally:
            for cid in ids:
                repository.delete_by_conversation_id(cid)
