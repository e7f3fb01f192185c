"""`chatmem migrate` into a store with encryption on: an existing store, encrypted by copying."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem import AssistantMessage, SystemMessage, UserMessage, encode_message
from chatmem.encryption import generate_key
from chatmem_cli import app
from chatmem_repositories import create_repository

SECRET = "passport-no-X1234567"


def test_migrate_encrypts_an_existing_store_and_a_rerun_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATMEM_ENCRYPTION_KEYS", f"k1:{generate_key()}")
    source, target = tmp_path / "plain.db", tmp_path / "sealed.db"
    written = {
        f"c{i}": [
            SystemMessage(text="You help."),
            UserMessage(text=f"{SECRET} #{i}"),
            AssistantMessage(text=f"noted {SECRET}"),
        ]
        for i in range(5)
    }
    with create_repository(f"sqlite:///{source}?initialize_schema=always") as plain:
        for cid, messages in written.items():
            plain.append(cid, messages)
    destination = f"sqlite:///{target}?encryption=env&initialize_schema=always"

    runner = CliRunner()
    for _ in range(2):  # the second run finds everything there
        result = runner.invoke(app, ["migrate", f"sqlite:///{source}", destination])
        assert result.exit_code == 0, result.output
    assert "stored 0 new" in result.output

    rows = sqlite3.connect(target).execute("SELECT search_text, body FROM chatmem_messages")
    stored = "\n".join(f"{text}\n{body}" for text, body in rows)
    assert SECRET.casefold() not in stored.casefold()
    assert SECRET in source.read_bytes().decode("utf-8", "replace")  # the check can fail
    with create_repository(f"sqlite:///{target}?encryption=env") as sealed:
        for cid, messages in written.items():
            assert [encode_message(m) for m in sealed.find_by_conversation_id(cid)] == [
                encode_message(m) for m in messages
            ]
