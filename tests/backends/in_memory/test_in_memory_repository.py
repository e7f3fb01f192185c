"""The in-memory repository's own surface: clock, server version, telemetry name, URL options."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository, UserMessage
from chatmem.exceptions import ConfigurationError
from chatmem.testing import ManualClock
from chatmem_repositories import create_async_repository, create_repository


def test_clock_decides_expiry() -> None:
    clock = ManualClock()
    repository = InMemoryChatMemoryRepository(ttl=60, clock=clock)
    repository.append("c", [UserMessage("hi")])
    clock.advance(59)
    assert repository.find_conversation_ids() == ["c"]
    clock.advance(2)
    assert repository.find_conversation_ids() == []
    assert repository.purge_expired() == 1


def test_default_clock_is_aware_utc_now() -> None:
    repository = InMemoryChatMemoryRepository(ttl=timedelta(hours=1))
    before = datetime.now(UTC)
    repository.append("c", [UserMessage("hi")])
    expires_at = repository._conversations["c"].expires_at
    assert expires_at is not None
    assert before + timedelta(hours=1) <= expires_at <= datetime.now(UTC) + timedelta(hours=1)


def test_url_passes_clock_and_ttl_through() -> None:
    clock = ManualClock()
    repository = create_repository("memory://?ttl=10", clock=clock)
    repository.append("c", [UserMessage("hi")])
    clock.advance(11)
    assert repository.find_by_conversation_id("c") == []


def test_misspelt_url_option_fails_with_suggestion() -> None:
    with pytest.raises(ConfigurationError, match=r"'tll'.*did you mean 'ttl'"):
        create_repository("memory://?tll=10")
    with pytest.raises(ConfigurationError, match="not a URL option"):
        create_repository("memory://?driver_options=x")


@pytest.mark.asyncio
async def test_server_version_and_db_system() -> None:
    repository = create_async_repository("memory://")
    assert isinstance(repository, AsyncInMemoryChatMemoryRepository)
    assert (await repository.server_version()).startswith("chatmem in-memory ")
    assert repository.db_system == InMemoryChatMemoryRepository.db_system == "chatmem.in_memory"
    with InMemoryChatMemoryRepository() as sync_repository:
        assert sync_repository.server_version() == await repository.server_version()
