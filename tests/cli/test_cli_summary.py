"""``chatmem show`` and ``chatmem demo`` with summaries, on SQLite files and Redis."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem import (
    AssistantMessage,
    Message,
    MessageWindowChatMemory,
    SummarizingChatMemory,
    SummaryStore,
    SystemMessage,
    UserMessage,
)
from chatmem.testing import ScriptedChatModel, folding_summarizer
from chatmem_cli import app
from chatmem_repositories import create_repository
from tests.support.environment import clear_settings

runner = CliRunner()
PREFIX = f"chatmem-cli-summary-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No CHATMEM_* or OPENAI_* from the machine, no .env, and the default data dir in tmp.
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'chat.db'}"
    base = request.getfixturevalue("redis_url")
    return f"{base}?key_prefix={PREFIX}"


def invoke(*args: str) -> tuple[int, str]:
    """Run a command; return its status and what it printed."""
    result = runner.invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def flat(text: str) -> str:
    """The output with rich's line wrapping and box borders undone, for phrase matching."""
    return " ".join(text.replace("│", " ").split())


def _conversation(url: str, turns: int, *, fold: bool) -> str:
    """Store ``turns`` user/assistant turns after a system message; fold evicted ones if asked."""
    conversation_id = f"sum-{uuid.uuid4().hex[:8]}"
    with create_repository(url) as repository:
        window = MessageWindowChatMemory(repository, max_messages=5)
        memory = SummarizingChatMemory(
            window, ScriptedChatModel(respond=folding_summarizer), background=False
        )
        memory.add(conversation_id, SystemMessage("Be brief."))
        for turn in range(turns):
            batch: list[Message] = [
                UserMessage(f"question {turn}"),
                AssistantMessage(f"answer {turn}"),
            ]
            if fold:
                memory.add(conversation_id, batch)
            else:
                window.add(conversation_id, batch)
        memory.close()
    return conversation_id


def test_show_prints_the_summary_what_it_covers_and_what_waits(url: str) -> None:
    # 10 turns, window of 5 (system + 2 turns): turns 0-7 folded, in calls of up to 20 turns.
    conversation_id = _conversation(url, 10, fold=True)
    code, out = invoke("show", conversation_id, "--url", url, "--max-messages", "5")
    assert code == 0, out
    text = flat(out)
    assert "5 message(s) would be sent to the model" in text  # the window, as before
    assert f"Summary of {conversation_id!r}" in text
    folded = " ".join(f"question {turn}" for turn in range(8))
    assert folded in text  # the summary text, whole, in its box
    with create_repository(url) as repository:
        assert isinstance(repository, SummaryStore)  # optional in the protocol returned
        summary = repository.find_summary(conversation_id)
    assert summary is not None
    assert f"covers up to position {summary.covers}" in text
    assert (
        f"Summary version {summary.version} covers the history up to position "
        f"{summary.covers}; 4 stored message(s) after it are not in it: 4 in the memory view, "
        "0 waiting to be folded in."
    ) in text
    # History rows folded into the summary are marked.
    assert len(re.findall(r"Σ", out)) == 16 + 1  # 8 turns of 2, and the legend
    assert "21 stored message(s), 0 tool call(s); 16 not in the memory view" in text
    invoke("delete", conversation_id, "--url", url, "--yes")


def test_show_counts_the_turns_waiting_to_be_folded(url: str) -> None:
    conversation_id = _conversation(url, 6, fold=False)
    with create_repository(url) as repository:
        assert isinstance(repository, SummaryStore)  # optional in the protocol returned
        history = repository.find_history(conversation_id, limit=100)
        # A summary of the first turn only: turns 1-3 have left the window, unfolded.
        assert repository.save_summary(
            conversation_id, "turn 0 only", history[2].position, expected_version=0
        )
    code, out = invoke("show", conversation_id, "--url", url, "--max-messages", "5")
    assert code == 0, out
    text = flat(out)
    assert "turn 0 only" in text
    assert "version 1" in text
    assert "10 stored message(s) after it are not in it: 4 in the memory view, 6 waiting" in text
    assert len(re.findall(r"Σ", out)) == 2 + 1
    invoke("delete", conversation_id, "--url", url, "--yes")


def test_show_without_a_summary_says_so(url: str) -> None:
    conversation_id = _conversation(url, 1, fold=False)
    code, out = invoke("show", conversation_id, "--url", url, "--no-history")
    assert code == 0, out
    assert "Summary: no summary" in out
    assert "Σ" not in out
    invoke("delete", conversation_id, "--url", url, "--yes")


def test_show_prints_a_hostile_summary_as_text(url: str) -> None:
    conversation_id = _conversation(url, 1, fold=False)
    hostile = "[bold red]not markup[/] \x1b[31mno escape\x1b[0m \x00nul 🎉"
    with create_repository(url) as repository:
        assert isinstance(repository, SummaryStore)  # optional in the protocol returned
        position = repository.find_recent(conversation_id, 1)[0].position
        assert repository.save_summary(conversation_id, hostile, position, expected_version=0)
    code, out = invoke("show", conversation_id, "--url", url, "--no-history")
    assert code == 0, out
    assert "[bold red]not markup[/]" in out
    assert "\\x1b[31mno escape\\x1b[0m \\x00nul 🎉" in out
    assert "\x1b" not in out
    assert "\x00" not in out
    invoke("delete", conversation_id, "--url", url, "--yes")


def test_demo_folds_evicted_turns_into_the_summary_and_shows_it(url: str) -> None:
    code, out = invoke("demo", "--url", url)
    assert code == 0, out
    text = flat(out)
    assert "SummarizingChatMemory" in text
    assert "stored in the repository next to the history" in text
    assert "summary: none yet" in text  # turn 1: nothing has left the window
    # Turn 2 pushes turn 1 out; it is folded at once (background=False).
    assert (
        "folded into the summary: 1 summarizer call, sent the previous summary and only the "
        "turns that left the window (2 entries; a tool call travels with its result)"
    ) in text
    assert "summary v1 (covers up to position 3): The user's name is James Bond." in text
    # The name left the window at turn 2: the model finds it in the summary it is sent.
    assert text.count("I can't see your name in the window any more") >= 2
    assert "summary The user's name is James Bond." in text  # the section in a prompt
    assert "The summary (4 summarizer calls)" in text
    assert "version 4, covers up to position 17" in text
    assert "the model's next request would carry 4: the system message, the summary" in text
    conversation_id = out.split("chatmem show ")[1].split()[0]
    code, out = invoke("show", conversation_id, "--url", url, "--max-messages", "6")
    assert code == 0, out
    text = flat(out)
    assert "Summary version 4 covers the history up to position 17" in text
    assert "All three gadgets are ready." in text
    invoke("delete", conversation_id, "--url", url, "--yes")
