"""The chatmem command line, run in-process against real SQLite files (and Redis for doctor)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem import (
    AssistantMessage,
    Message,
    SystemMessage,
    UserMessage,
    scoped_conversation_id,
)
from chatmem.testing import OpenAITestServer, every_kind_of_message, tool_turn
from chatmem_cli import app
from chatmem_cli._chat import SETUP_HELP
from chatmem_repositories import create_repository
from tests.support.environment import clear_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No CHATMEM_* or OPENAI_* from the machine, no .env, and the default data dir in tmp.
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "160")


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def history(url: str, conversation_id: str) -> list[Message]:
    with create_repository(url) as repository:
        return [s.message for s in repository.find_history(conversation_id, limit=1000)]


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = sqlite_url(tmp_path / "source.db")
    with create_repository(url) as repository:
        repository.append(scoped_conversation_id("alice", "trip"), every_kind_of_message())
        chat: list[Message] = [SystemMessage("Be brief.")]
        for i in range(12):
            chat += [UserMessage(f"question {i}"), AssistantMessage(f"answer {i}")]
        chat += tool_turn("weather?", "sunny", "call_w")
        repository.append("plain", chat)
        repository.append(scoped_conversation_id("bob", "x"), [UserMessage("hi bob")])
    return url


def invoke(*args: str, input: str | None = None) -> tuple[int, str]:  # noqa: A002
    """Run a command; return its status and what it printed (stdout and stderr)."""
    result = runner.invoke(app, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def invoke_stdout(*args: str) -> tuple[int, str]:
    """Run a command; return its status and its stdout only (progress goes to stderr)."""
    result = runner.invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_offline_on_the_embedded_default(tmp_path: Path) -> None:
    code, out = invoke("demo")
    assert code == 0, out
    assert "SCRIPTED MODEL" in out
    assert "You are James Bond." in out  # turn 3: the name is still in the window
    assert "I can't see your name" in out  # turn 5: that turn has left the window
    assert "evicted from the window" in out
    assert "oldest tool call leaves together with its result" in out
    database = tmp_path / "data" / "chatmem.db"
    assert database.exists()
    conversation_id = out.split("chatmem show ")[1].split()[0]
    stored = history(sqlite_url(database), conversation_id)
    assert len(stored) == 19
    assert sum(isinstance(m, AssistantMessage) and bool(m.tool_calls) for m in stored) == 4
    code, out = invoke("show", conversation_id, "--max-messages", "8")
    assert code == 0, out
    assert "3 message(s) would be sent to the model" in out
    assert "19 stored message(s), 4 tool call(s)" in out


# -- conversations and show ------------------------------------------------------------------


def test_conversations_pages_and_filters_by_owner(db: str) -> None:
    code, out = invoke("conversations", "--url", db)
    assert code == 0, out
    assert "alice:trip" in out
    assert "plain" in out
    assert "bob:x" in out
    code, out = invoke("conversations", "--url", db, "--owner", "alice")
    assert "alice:trip" in out
    assert "plain" not in out
    assert "bob:x" not in out
    code, out = invoke("conversations", "--url", db, "--limit", "1")
    assert "More: --cursor" in out
    cursor = out.split("--cursor ")[1].split()[0].strip("'")
    code, out = invoke("conversations", "--url", db, "--limit", "1", "--cursor", cursor)
    assert code == 0, out
    assert "alice:trip" not in out


def test_show_memory_view_against_history(db: str) -> None:
    code, out = invoke("show", "plain", "--url", db, "--max-messages", "6")
    assert code == 0, out
    assert "message window, max_messages=6" in out
    assert "5 message(s) would be sent to the model" in out  # system + the tool turn (4)
    assert "call search#call_w" in out
    assert "29 stored message(s), 1 tool call(s); 24 not in the memory view" in out


def test_show_unknown_and_invalid_ids(db: str) -> None:
    code, out = invoke("show", "nobody", "--url", db)
    assert code == 1
    assert "no conversation 'nobody'" in out
    code, out = invoke("show", "bad\x00id", "--url", db)
    assert code == 1


def test_show_uses_configured_window(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", db)
    monkeypatch.setenv("CHATMEM_MAX_MESSAGES", "3")
    code, out = invoke("show", "plain", "--no-history")
    assert code == 0, out
    assert "max_messages=3" in out
    assert "Full history" not in out


# -- export / import ---------------------------------------------------------------------------


def test_export_import_is_lossless_and_idempotent(db: str, tmp_path: Path) -> None:
    exported = tmp_path / "all.jsonl"
    code, out = invoke("export", str(exported), "--url", db)
    assert code == 0, out
    assert "Exported 36 message(s) of 3 conversation(s)" in out
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 36
    assert {json.loads(line)["conversation_id"] for line in lines} == {
        "alice:trip",
        "plain",
        "bob:x",
    }
    target = sqlite_url(tmp_path / "target.db")
    code, out = invoke("import", str(exported), "--url", target)
    assert "stored 36 new, skipped 0 known" in out
    code, out = invoke("import", str(exported), "--url", target)
    assert "stored 0 new, skipped 36 known" in out
    for conversation_id in ("alice:trip", "plain", "bob:x"):
        assert history(target, conversation_id) == history(db, conversation_id)
    code, out = invoke_stdout("export", "-", "--url", target)
    assert out.splitlines() == lines


def test_export_by_owner_to_stdout(db: str) -> None:
    code, out = invoke_stdout("export", "--url", db, "--owner", "bob")
    assert code == 0
    assert [json.loads(line)["conversation_id"] for line in out.splitlines()] == ["bob:x"]


def test_import_rejects_a_bad_line_by_number(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"conversation_id": "c", "message": {"v": 1, "type": "user"}}\n')
    code, out = invoke("import", str(source), "--url", sqlite_url(tmp_path / "t.db"))
    assert code == 1
    assert "not a valid message" in out
    source.write_text("\nnot json\n")
    code, out = invoke("import", str(source), "--url", sqlite_url(tmp_path / "t.db"))
    assert code == 1
    assert "line 2" in out
    code, out = invoke("import", str(tmp_path / "missing.jsonl"))
    assert code == 1
    assert "no such file" in out


# -- migrate -----------------------------------------------------------------------------------


def test_migrate_between_sqlite_files_and_rerun_adds_nothing(db: str, tmp_path: Path) -> None:
    target = sqlite_url(tmp_path / "copy.db")
    code, out = invoke("migrate", db, target)
    assert code == 0, out
    assert "read 36 message(s), stored 36 new" in out
    assert "Verified" in out
    code, out = invoke("migrate", db, target)
    assert code == 0, out
    assert "stored 0 new, skipped 36 already there" in out
    assert history(target, "plain") == history(db, "plain")


def test_migrate_resumes_a_partial_copy(db: str, tmp_path: Path) -> None:
    target = sqlite_url(tmp_path / "copy.db")
    partial = history(db, "plain")[:10]
    with create_repository(target) as repository:
        repository.append("plain", partial)
    code, out = invoke("migrate", db, target)
    assert code == 0, out
    assert "stored 26 new, skipped 10 already there" in out
    assert history(target, "plain") == history(db, "plain")


def test_migrate_reports_a_destination_with_extra_messages(db: str, tmp_path: Path) -> None:
    target = sqlite_url(tmp_path / "copy.db")
    with create_repository(target) as repository:
        repository.append("bob:x", [UserMessage("only in the destination")])
    code, out = invoke("migrate", db, target, "--owner", "bob")
    assert code == 0, out
    assert "1 conversation(s) already held more messages" in out


# -- prune -------------------------------------------------------------------------------------


def test_prune_older_than(db: str) -> None:
    code, out = invoke("prune", "--url", db, "--older-than", "P30D", "--dry-run")
    assert code == 0, out
    # every_kind_of_message is dated 2026-01-02; the other conversations are new.
    assert "Would delete 5 message(s)" in out
    assert "(1 emptied entirely)" in out
    assert len(history(db, "alice:trip")) == 6
    code, out = invoke("prune", "--url", db, "--older-than", "2592000")
    assert "Deleted 5 message(s)" in out
    assert history(db, "alice:trip") == []
    assert len(history(db, "plain")) == 29
    code, out = invoke("prune", "--url", db, "--older-than", "PT0S")
    assert code == 1
    code, out = invoke("prune", "--url", db, "--older-than", "soon")
    assert code == 1
    assert "not a duration" in out


def test_prune_expired_and_nothing_to_do(db: str) -> None:
    code, out = invoke("prune", "--url", db, "--expired")
    assert code == 0, out
    assert "Purged 0 expired conversation(s)" in out
    code, out = invoke("prune", "--url", db)
    assert code == 1
    assert "--expired, --older-than" in out


# -- doctor ------------------------------------------------------------------------------------


def test_doctor_on_sqlite(db: str) -> None:
    code, out = invoke("doctor", "--url", db)
    assert code == 0, out
    for name in ("versions", "reachable", "schema", "latency"):
        assert name in out
    assert "sqlalchemy" in out
    assert "FAIL" not in out


def test_doctor_reports_an_unreachable_server_and_hides_the_password() -> None:
    code, out = invoke("doctor", "--url", "redis://:s3cr3t-pw@127.0.0.1:1/0?read_timeout=1")
    assert code == 1
    assert "FAIL reachable" in out
    assert "s3cr3t-pw" not in out
    assert "***" in out


def test_bad_url_is_one_line_with_suggestion() -> None:
    code, out = invoke("conversations", "--url", "sqlit:///x.db")
    assert code == 1
    assert "did you mean 'sqlite'" in out
    assert "Traceback" not in out
    code, out = invoke("doctor", "--url", "postgresql://u:s3cr3t-pw@h/db?bogus=1")
    assert code == 1
    assert "s3cr3t-pw" not in out


# -- chat --------------------------------------------------------------------------------------


def test_chat_without_an_endpoint_says_what_to_set() -> None:
    code, out = invoke("chat", "007")
    assert code == 1
    assert "OPENAI_API_KEY" in out
    assert "OPENAI_BASE_URL" in out
    assert " ".join(SETUP_HELP.split())[:60] in " ".join(out.split())


def test_chat_remembers_through_an_openai_compatible_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path / "chat.db")
    with OpenAITestServer() as server:
        server.reply_text("Hello, Mr Bond.", "Your name is James Bond.")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("CHATMEM_CHAT_MODEL", "test-model")
        code, out = invoke(
            "chat",
            "007",
            "--url",
            url,
            "--system",
            "Be brief.",
            input="My name is James Bond\n\nWhat is my name?\n/exit\n",
        )
        assert code == 0, out
        assert "Hello, Mr Bond." in out
        assert "Your name is James Bond." in out
        second = server.chat_requests[1]["messages"]
        assert second[0] == {"role": "system", "content": "Be brief."}
        assert [m["content"] for m in second[1:]] == [
            "My name is James Bond",
            "Hello, Mr Bond.",
            "What is my name?",
        ]
        assert second[1]["role"] == "user"
        assert server.chat_requests[0]["model"] == "test-model"
    stored = history(url, "007")
    assert [type(m).__name__ for m in stored] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]


def test_runs_as_a_module_and_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "chatmem_cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "160"},
    ).stdout
    for command in (
        "conversations",
        "show",
        "export",
        "import",
        "migrate",
        "prune",
        "doctor",
        "chat",
        "demo",
    ):
        assert command in out
