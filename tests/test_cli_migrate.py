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
    scoped_conversation_id,
)
from chatmem_cli import app
from chatmem_cli._transfer import iter_conversations, iter_history
from chatmem_repositories import create_repository
from tests.conftest import server_url

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
