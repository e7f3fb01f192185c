"""ChatMemorySettings: environment, .env file, validation and the one-call builders."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from chatmem import (
    AsyncInMemoryChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    ConfigurationError,
    InMemoryChatMemoryRepository,
    MessageWindowChatMemory,
    TokenWindowChatMemory,
    UserMessage,
)
from chatmem_repositories import ChatMemorySettings
from chatmem_repositories.settings import MemoryKind
from tests.support.environment import clear_settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Settings read the process environment and ./.env: start every test from neither.
    clear_settings(monkeypatch, ("CHATMEM_",))
    monkeypatch.chdir(tmp_path)


def test_library_default_is_in_memory_message_window() -> None:
    settings = ChatMemorySettings()
    assert settings.repository_url == "memory://"
    assert settings.memory is MemoryKind.MESSAGE_WINDOW
    memory = settings.build_memory()
    assert isinstance(memory, MessageWindowChatMemory)
    assert isinstance(memory.repository, InMemoryChatMemoryRepository)
    assert memory.max_messages == 20


def test_reads_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", "memory://")
    monkeypatch.setenv("CHATMEM_MAX_MESSAGES", "7")
    monkeypatch.setenv("CHATMEM_TTL", "PT1H")
    monkeypatch.setenv("CHATMEM_EVICT", "true")
    settings = ChatMemorySettings()
    assert settings.max_messages == 7
    assert settings.ttl == timedelta(hours=1)
    memory = settings.build_memory()
    assert isinstance(memory, MessageWindowChatMemory)
    assert memory.max_messages == 7
    assert memory.evict is True


def test_reads_dotenv_file_and_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(
        "CHATMEM_MEMORY=token_window\nCHATMEM_MAX_TOKENS=123\nCHATMEM_MAX_MESSAGES=9\n"
    )
    monkeypatch.setenv("CHATMEM_MAX_MESSAGES", "11")
    settings = ChatMemorySettings()
    assert settings.memory is MemoryKind.TOKEN_WINDOW
    assert settings.max_tokens == 123
    assert settings.max_messages == 11


def test_token_window_with_character_estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_MEMORY", "token_window")
    monkeypatch.setenv("CHATMEM_MAX_TOKENS", "50")
    monkeypatch.setenv("CHATMEM_TOKEN_ESTIMATOR", "character")
    memory = ChatMemorySettings().build_memory()
    assert isinstance(memory, TokenWindowChatMemory)
    assert memory.max_tokens == 50
    for i in range(30):
        memory.add("c", UserMessage(f"question number {i} " * 3))
    window = memory.get("c")
    assert 0 < len(window) < 30
    assert window[-1].text.startswith("question number 29")  # type: ignore[union-attr]


def test_repository_options_as_json_and_ttl_reach_the_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHATMEM_REPOSITORY_OPTIONS", json.dumps({"ttl": 60}))
    settings = ChatMemorySettings()
    assert settings.repository_options == {"ttl": 60}
    with settings.build_repository() as repository:
        assert isinstance(repository, InMemoryChatMemoryRepository)
    monkeypatch.setenv("CHATMEM_REPOSITORY_OPTIONS", json.dumps({"tll": 60}))
    with pytest.raises(ConfigurationError, match=r"'tll'.*did you mean 'ttl'"):
        ChatMemorySettings().build_repository()


def test_driver_options_from_the_environment_reach_the_driver_and_stay_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("redis")
    options = {
        "key_prefix": "app",
        "driver_options": {"password": "s3cr3t-pw", "socket_keepalive": True},
    }
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", "redis://127.0.0.1:1/0?max_connections=4")
    monkeypatch.setenv("CHATMEM_REPOSITORY_OPTIONS", json.dumps(options))
    settings = ChatMemorySettings()
    assert "s3cr3t-pw" not in repr(settings)
    with settings.build_repository() as repository:  # redis-py connects on first use only
        pool = repository._client.connection_pool
        assert pool.connection_kwargs["password"] == "s3cr3t-pw"
        assert pool.connection_kwargs["socket_keepalive"] is True
        assert pool.max_connections == 4
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", "redis://127.0.0.1:1/0?max_conections=4")
    with pytest.raises(ConfigurationError, match="did you mean 'max_connections'"):
        ChatMemorySettings().build_repository()
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", "memory://")
    monkeypatch.setenv("CHATMEM_REPOSITORY_OPTIONS", json.dumps({"driver_options": {"x": 1}}))
    with pytest.raises(ConfigurationError, match="no driver"):
        ChatMemorySettings().build_repository()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CHATMEM_MAX_MESSAGES", "0"),
        ("CHATMEM_MEMORY", "summary_window"),
        ("CHATMEM_TTL", "-5"),
        ("CHATMEM_REPOSITORY_OPTIONS", "not json"),
    ],
)
def test_bad_values_are_rejected(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises((ValidationError, ValueError)):
        ChatMemorySettings()


def test_unknown_scheme_is_a_configuration_error() -> None:
    settings = ChatMemorySettings(repository_url="redsi://localhost")
    with pytest.raises(ConfigurationError, match="did you mean 'redis'"):
        settings.build_repository()


def test_password_not_in_repr_or_errors() -> None:
    settings = ChatMemorySettings(repository_url="nosuch://app:s3cr3t-pw@db.example/app")
    assert "s3cr3t-pw" not in repr(settings)
    assert "s3cr3t-pw" not in str(settings)
    assert "***" in settings.redacted_url
    with pytest.raises(ConfigurationError) as caught:
        settings.build_repository()
    assert "s3cr3t-pw" not in str(caught.value)
    with pytest.raises(ConfigurationError, match="scheme://") as invalid:
        ChatMemorySettings(repository_url="app:s3cr3t-pw@db.example/app").build_repository()
    assert "s3cr3t-pw" not in str(invalid.value)


async def test_async_builders() -> None:
    settings = ChatMemorySettings(max_messages=3)
    memory = settings.build_async_memory()
    assert isinstance(memory, AsyncMessageWindowChatMemory)
    assert isinstance(memory.repository, AsyncInMemoryChatMemoryRepository)
    for i in range(5):
        await memory.add("c", UserMessage(f"q{i}"))
    assert [m.text for m in await memory.get("c")] == ["q2", "q3", "q4"]  # type: ignore[union-attr]
    await memory.repository.aclose()  # type: ignore[attr-defined]
    token_memory = ChatMemorySettings(
        memory="token_window", max_tokens=10, token_estimator="character"
    ).build_async_memory()
    assert isinstance(token_memory, AsyncTokenWindowChatMemory)
