"""The history checker's runs: seeded replay, and broken repositories caught in a real run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.messages import Message
from chatmem.repository import StoredMessage
from chatmem.testing import (
    AsyncHistoryChecker,
    CheckerSettings,
    History,
    HistoryChecker,
    HistoryCheckError,
)

# Small and quick: a short ttl, few conversations.
QUICK = CheckerSettings(workers=3, purgers=2, conversations=12, cycles=4, steps_per_cycle=12)
QUICK_TTL = 0.3


def _schedule(history: History) -> dict[str, list[tuple[Any, ...]]]:
    """Each process's calls in its own order, named by labels: what a seed decides."""
    per_process: dict[str, list[tuple[Any, ...]]] = {}
    for operation in sorted(history.operations, key=lambda o: o.invoked):
        per_process.setdefault(operation.process, []).append(
            (
                operation.action,
                history.label(operation.conversation),
                tuple(history.label(i) for i in operation.batch),
                operation.limit,
            )
        )
    return per_process


def test_the_same_seed_replays_the_same_schedule() -> None:
    settings = CheckerSettings(workers=3, purgers=0, conversations=5, cycles=2, steps_per_cycle=15)

    def run(seed: int) -> dict[str, list[tuple[Any, ...]]]:
        checker = HistoryChecker(
            InMemoryChatMemoryRepository, seed=seed, ttl=None, settings=settings
        )
        return _schedule(checker.run().history)

    first = run(1234)
    assert first == run(1234)
    assert first != run(4321)
    assert sum(len(calls) for calls in first.values()) > 50


def test_the_seed_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_CHECKER_SEED", "99")
    assert HistoryChecker(InMemoryChatMemoryRepository).seed == 99
    assert HistoryChecker(InMemoryChatMemoryRepository, seed=5).seed == 5
    monkeypatch.delenv("CHATMEM_CHECKER_SEED")
    assert (
        HistoryChecker(InMemoryChatMemoryRepository).seed
        != HistoryChecker(InMemoryChatMemoryRepository).seed
    )


def test_a_correct_repository_passes_with_expiry() -> None:
    report = HistoryChecker(InMemoryChatMemoryRepository, ttl=QUICK_TTL, settings=QUICK).run()
    assert report.revives == QUICK.conversations * (QUICK.cycles - 1)
    assert report.operations > 200


# -- broken repositories ---------------------------------------------------------------------------


class RacyPurgeRepository(InMemoryChatMemoryRepository):
    """Purges decide what expired, then delete it later: a revive in between is lost."""

    def __init__(self, *, ttl: timedelta) -> None:
        super().__init__(ttl=ttl)
        self._idle_after = ttl.total_seconds()
        self._written: dict[str, float] = {}

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        stored = super().append(conversation_id, messages, expected_version=expected_version)
        self._written[conversation_id] = time.monotonic()
        return stored

    def purge_expired(self) -> int:
        now = time.monotonic()
        doomed = [c for c, t in list(self._written.items()) if now - t >= self._idle_after]
        time.sleep(0.02)  # the race: a revive now is deleted below
        for conversation_id in doomed:
            self.delete_by_conversation_id(conversation_id)
        return len(doomed)


class AsyncTearingRepository(AsyncInMemoryChatMemoryRepository):
    """Appends one message at a time: readers in between see half a batch."""

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        stored: list[StoredMessage] = []
        for message in messages:
            # The version is checked before the first message only.
            stored += await super().append(
                conversation_id, [message], expected_version=expected_version
            )
            expected_version = None
            await asyncio.sleep(0.002)
        return stored


def test_a_revive_lost_to_a_racing_purge_is_caught() -> None:
    checker = HistoryChecker(RacyPurgeRepository, ttl=QUICK_TTL, settings=QUICK)
    with pytest.raises(HistoryCheckError) as caught:
        checker.run()
    error = caught.value
    assert "lost-append" in {a.kind for a in error.anomalies}
    assert error.seed == checker.seed
    assert f"CHATMEM_CHECKER_SEED={checker.seed}" in str(error)
    assert len(error.shrunk) < 10


async def test_a_torn_batch_is_caught_in_the_async_variant() -> None:
    async def factory(**options: Any) -> AsyncTearingRepository:
        return AsyncTearingRepository(**options)

    checker = AsyncHistoryChecker(factory, ttl=None, settings=QUICK)
    with pytest.raises(HistoryCheckError) as caught:
        await checker.run()
    kinds = {a.kind for a in caught.value.anomalies}
    assert "torn-batch" in kinds
