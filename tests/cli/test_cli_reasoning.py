"""`chatmem show`, `export` and `import` with reasoning parts, provider items and token usage."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem import AssistantMessage, ReasoningPart, UserMessage, encode_message
from chatmem.testing import reasoning_turns
from chatmem_cli import app
from chatmem_repositories import create_repository
from tests.support.environment import clear_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'source.db'}"
    with create_repository(url) as repository:
        repository.append("thinking", reasoning_turns())
        repository.append("plain", [UserMessage("q"), AssistantMessage("a")])
        hostile = ReasoningPart(text="[bold red]not markup[/] \x1b[31m", provider="anthropic")
        repository.append("hostile", [UserMessage("q"), AssistantMessage("a", reasoning=[hostile])])
    return url


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_show_marks_reasoning_and_provider_items(db: str) -> None:
    code, out = invoke("show", "thinking", "--url", db)
    assert code == 0, out
    assert "(reasoning, anthropic) Two cities: call the tool twice." in out
    assert "(reasoning, anthropic, redacted)" in out
    assert "(reasoning, openai) Summarise both results." in out
    assert "(openai compaction item)" in out
    assert "(reasoning) A thought from a framework" in out
    # Signatures and encrypted payloads are never printed.
    assert "EqQB" not in out
    assert "gAAAA" not in out


def test_show_sums_the_token_usage_of_the_conversation(db: str) -> None:
    expected = (
        "Token usage of 4 answer(s): 3012 input (1800 cache read, 250 cache write), "
        "474 output (96 reasoning)."
    )
    code, out = invoke("show", "thinking", "--url", db)
    assert expected in out
    # The sum covers the whole history, not only the memory view.
    code, out = invoke("show", "thinking", "--url", db, "--max-messages", "2", "--no-history")
    assert code == 0, out
    assert expected in out
    code, out = invoke("show", "plain", "--url", db)
    assert code == 0, out
    assert "Token usage" not in out


def test_show_prints_reasoning_as_text_not_markup(db: str) -> None:
    code, out = invoke("show", "hostile", "--url", db)
    assert code == 0, out
    assert "[bold red]not markup[/] \\x1b[31m" in out


def test_export_and_import_keep_every_new_field(db: str, tmp_path: Path) -> None:
    exported = tmp_path / "thinking.jsonl"
    code, out = invoke("export", str(exported), "--url", db)
    assert code == 0, out
    target = f"sqlite:///{tmp_path / 'target.db'}"
    code, out = invoke("import", str(exported), "--url", target)
    assert code == 0, out
    with create_repository(db) as repository:
        original = repository.find_by_conversation_id("thinking")
    with create_repository(target) as repository:
        imported = repository.find_by_conversation_id("thinking")
    assert [m.model_copy(update={"id": "x"}) for m in original] == [
        m.model_copy(update={"id": "x"}) for m in reasoning_turns()
    ]
    assert imported == original
    assert [encode_message(m) for m in imported] == [encode_message(m) for m in original]
    again = tmp_path / "again.jsonl"
    code, out = invoke("export", str(again), "--url", target)
    assert again.read_bytes() == exported.read_bytes()
