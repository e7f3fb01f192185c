"""Hostile input: deep JSON, lone surrogates, huge limits, corrupt or conflicting imports."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from chatmem import (
    AssistantMessage,
    ProviderItem,
    ReasoningPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem.backend import MAX_LIMIT
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem_cli import app
from chatmem_repositories import create_repository
from tests.support.environment import clear_settings
from tests.support.servers import server_url

DEPTH = 100_000
DEEP = '{"a":' * DEPTH + "1" + "}" * DEPTH


# -- deeply nested JSON ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        DEEP,
        "[" * DEPTH,
        '{"type":"user","text":"x","metadata":' + DEEP + ',"v":1}',
        '{"type":"user","text":"x","metadata":' + '{"a":' * 900 + "1" + "}" * 900 + ',"v":1}',
    ],
)
def test_deeply_nested_record_is_a_decode_error(record: str) -> None:
    with pytest.raises(MessageDecodeError, match="conversation 'c'"):
        decode_message(record, conversation_id="c")


def test_deeply_nested_stored_record_is_a_decode_error(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with create_repository(f"sqlite:///{path}") as repository:
        repository.append("c", [UserMessage("kept"), UserMessage("corrupted")])
    # sqlite3's own context manager commits but does not close (Python 3.13 warns of that).
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE chatmem_messages SET body = ? WHERE position = "
            "(SELECT MAX(position) FROM chatmem_messages)",
            ('{"type":"user","text":"x","metadata":' + DEEP + ',"v":1}',),
        )
    with (
        create_repository(f"sqlite:///{path}") as repository,
        pytest.raises(MessageDecodeError, match="nested too deeply"),
    ):
        repository.find_by_conversation_id("c")


# -- lone surrogates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: UserMessage("a\ud800b"),
        lambda: UserMessage("ok", id="id-\udc00"),
        lambda: AssistantMessage(tool_calls=[ToolCall(id="1", name="t\udc00", arguments="{}")]),
        lambda: AssistantMessage(tool_calls=[ToolCall(id="1", name="t", arguments='"\ud83d"')]),
        lambda: ToolResponseMessage(
            responses=[ToolResponse(id="1", name="t", response_data="\ud800")]
        ),
        lambda: UserMessage("x", metadata={"k\ud800": 1, "j\ud801": 2}),
        lambda: UserMessage("x", metadata={"k": [{"deep": "\udfff"}]}),
        lambda: AssistantMessage("ü\ud800"),
        lambda: AssistantMessage(reasoning=[ReasoningPart(text="\ud800")]),
        lambda: AssistantMessage(reasoning=[ReasoningPart(signature="s\udc00")]),
        lambda: AssistantMessage(reasoning=[ReasoningPart(details={"k": ["\ud800"]})]),
        lambda: AssistantMessage(
            provider_items=[ProviderItem(provider="openai", type="t", data={"\udc00": 1})]
        ),
    ],
)  # fmt: skip
def test_lone_surrogates_are_refused_when_the_message_is_built(build: Any) -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        build()


def test_valid_astral_text_is_kept() -> None:
    message = UserMessage("emoji 😀", metadata={"é": ["ü", "𝄞"]})
    assert decode_message(encode_message(message)) == message


def test_stored_surrogate_escape_is_a_decode_error() -> None:
    with pytest.raises(MessageDecodeError, match="lone surrogate"):
        decode_message('{"type":"user","text":"\\ud800","v":1}', conversation_id="c")


# -- limits ----------------------------------------------------------------------------------


def _backend_url(name: str, tmp_path: Path) -> str:
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path}/limits.db"
    return server_url(name)


@pytest.fixture(
    params=[
        "memory",
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.backend("postgresql")),
        pytest.param("redis", marks=pytest.mark.backend("redis")),
        pytest.param("mongodb", marks=pytest.mark.backend("mongodb")),
        pytest.param("neo4j", marks=pytest.mark.backend("neo4j")),
        pytest.param("cassandra", marks=pytest.mark.backend("cassandra")),
    ]
)
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    name = request.param
    options: dict[str, Any] = {}
    if name == "postgresql":
        options["initialize_schema"] = "always"
    if name == "cassandra":
        options["create_keyspace"] = True
    with create_repository(_backend_url(name, tmp_path), **options) as repository:
        yield repository


@pytest.mark.parametrize("limit", [2**64, MAX_LIMIT + 1, -1])
def test_out_of_range_limits_are_configuration_errors(repository: Any, limit: int) -> None:
    with pytest.raises(ConfigurationError, match="limit must be an integer"):
        repository.list_conversations(limit=limit)
    with pytest.raises(ConfigurationError, match="limit must be an integer"):
        repository.find_recent("limits", limit)
    with pytest.raises(ConfigurationError, match="limit must be an integer"):
        repository.find_history("limits", limit=limit)


def test_the_largest_limit_works(repository: Any) -> None:
    conversation_id = f"limits-{uuid.uuid4().hex[:8]}"
    repository.append(conversation_id, [UserMessage("one"), AssistantMessage("two")])
    try:
        assert len(repository.find_recent(conversation_id, MAX_LIMIT)) == 2
        assert len(repository.find_history(conversation_id, limit=MAX_LIMIT)) == 2
        assert conversation_id in repository.list_conversations(limit=MAX_LIMIT).conversation_ids
    finally:
        repository.delete_by_conversation_id(conversation_id)


# -- chatmem import --------------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")


def _line(conversation_id: str, message: Any) -> str:
    return json.dumps(
        {"conversation_id": conversation_id, "message": json.loads(encode_message(message))}
    )


def _import(path: Path | str, url: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, ["import", str(path), "--url", url], input=stdin)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _stored(url: str) -> dict[str, list[str]]:
    with create_repository(url) as repository:
        return {
            cid: [m.text for m in repository.find_by_conversation_id(cid)]  # type: ignore[union-attr]
            for cid in repository.list_conversations(limit=100).conversation_ids
        }


@pytest.mark.usefixtures("cli_env")
def test_import_with_a_corrupt_line_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    source = tmp_path / "in.jsonl"
    lines = [_line("a", UserMessage("first")), _line("b", UserMessage("second")), '{"oops"']
    source.write_text("\n".join(lines) + "\n")
    code, out = _import(source, url)
    assert code == 1
    assert "line 3" in out
    assert "nothing was imported" in out
    assert _stored(url) == {}


@pytest.mark.usefixtures("cli_env")
def test_import_of_a_deeply_nested_line_is_reported_without_a_traceback(tmp_path: Path) -> None:
    source = tmp_path / "deep.jsonl"
    source.write_text(_line("a", UserMessage("ok")) + "\n" + DEEP + "\n")
    code, out = _import(source, f"sqlite:///{tmp_path}/t.db")
    assert code == 1
    assert "line 2" in out
    assert "nested too deeply" in out
    assert "Traceback" not in out


@pytest.mark.usefixtures("cli_env")
def test_import_reports_a_message_id_stored_with_other_content(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    original = UserMessage("the original")
    with create_repository(url) as repository:
        repository.append("c", [original])
    edited = original.model_copy(update={"text": "an edited copy"})
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join([_line("c", original), _line("c", edited), _line("c", UserMessage("new"))]) + "\n"
    )
    code, out = _import(source, url)
    assert code == 1
    assert "stored 1 new, skipped 1 known" in out
    assert f"message id {original.id!r} is already stored with different content" in out
    assert _stored(url) == {"c": ["the original", "new"]}


@pytest.mark.usefixtures("cli_env")
def test_import_from_stdin_is_checked_before_writing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    good = "\n".join(_line("s", UserMessage(f"m{i}")) for i in range(3)) + "\n"
    code, out = _import("-", url, stdin=good + "not json\n")
    assert code == 1
    assert "line 4" in out
    assert _stored(url) == {}
    code, out = _import("-", url, stdin=good)
    assert code == 0, out
    assert "stored 3 new, skipped 0 known" in out
    code, out = _import("-", url, stdin=good)
    assert code == 0, out
    assert "stored 0 new, skipped 3 known" in out
