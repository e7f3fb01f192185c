"""Version-checked appends in real runs: repositories that break the version rule are caught.

Each broken repository wraps the in-memory one. The runs are async, without purgers or expiry,
and every wait is a bare yield to the event loop: with a fixed seed the interleaving is the same
on every run, so what is caught is caught every time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from chatmem import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import Message
from chatmem.repository import StoredMessage
from chatmem.testing import (
    AsyncHistoryChecker,
    CheckerSettings,
    HistoryChecker,
    HistoryCheckError,
    HistoryReport,
    Outcome,
)

# Few conversations, all hot, many steps: versioned appends meet on one conversation often.
CONTENDED = CheckerSettings(
    workers=4, purgers=0, conversations=4, hot_conversations=2, cycles=2, steps_per_cycle=30
)
SEEDS = (1, 2, 3)


class AsyncCheckThenAppendRepository(AsyncInMemoryChatMemoryRepository):
    """Checks the version, then appends unchecked: another append may come in between."""

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        if expected_version is not None:
            actual = await self.find_version(conversation_id)
            if actual != expected_version:
                raise VersionConflictError(conversation_id, expected_version, actual)
            for _ in range(3):  # a round trip: another writer's append lands in between
                await asyncio.sleep(0)
        return await super().append(conversation_id, messages)


class AsyncVersionBlindRepository(AsyncInMemoryChatMemoryRepository):
    """Ignores ``expected_version``: every append succeeds."""

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        return await super().append(conversation_id, messages)


class AsyncStoreThenRefuseRepository(AsyncInMemoryChatMemoryRepository):
    """Stores first and compares the version after: a refused append is stored anyway."""

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        before = await self.find_version(conversation_id)
        stored = await super().append(conversation_id, messages)
        if expected_version is not None and before != expected_version:
            raise VersionConflictError(conversation_id, expected_version, before)
        return stored


async def _caught(repository: type[AsyncInMemoryChatMemoryRepository], seed: int) -> set[str]:
    async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
        return repository(**options)

    checker = AsyncHistoryChecker(factory, seed=seed, ttl=None, settings=CONTENDED)
    with pytest.raises(HistoryCheckError) as caught:
        await checker.run()
    assert f"CHATMEM_CHECKER_SEED={seed}" in str(caught.value)
    return {a.kind for a in caught.value.anomalies}


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_check_apart_from_the_append_lets_two_writers_win(seed: int) -> None:
    assert "double-version-win" in await _caught(AsyncCheckThenAppendRepository, seed)


@pytest.mark.parametrize("seed", SEEDS)
async def test_an_append_blind_to_the_version_wins_after_it_moved(seed: int) -> None:
    kinds = await _caught(AsyncVersionBlindRepository, seed)
    assert "stale-version-win" in kinds
    assert "double-version-win" in kinds


@pytest.mark.parametrize("seed", SEEDS)
async def test_an_append_refused_after_storing_is_caught(seed: int) -> None:
    kinds = await _caught(AsyncStoreThenRefuseRepository, seed)
    assert kinds == {"refused-append-stored"}


def _checked(report: HistoryReport) -> dict[Outcome, int]:
    return {o: n for o, n in report.version_checked.items() if n}


@pytest.mark.parametrize("seed", SEEDS)
async def test_the_in_memory_repository_keeps_the_version_rule(seed: int) -> None:
    async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
        return AsyncInMemoryChatMemoryRepository(**options)

    report = await AsyncHistoryChecker(factory, seed=seed, ttl=None, settings=CONTENDED).run()
    counts = _checked(report)
    assert set(counts) == {Outcome.OK, Outcome.CONFLICT}  # some won, some were refused
    versions = [o for o in report.history.operations if o.action == "find_version"]
    assert len(versions) == sum(counts.values())
    assert f"{sum(counts.values())} version-checked appends (" in report.summary()
    assert f"{counts[Outcome.CONFLICT]} conflict, {counts[Outcome.OK]} ok)" in report.summary()


def test_the_sync_variant_checks_versions_with_expiry() -> None:
    settings = CheckerSettings(workers=3, purgers=2, conversations=6, cycles=3, steps_per_cycle=20)
    report = HistoryChecker(InMemoryChatMemoryRepository, ttl=0.3, settings=settings).run()
    assert report.version_checked[Outcome.OK] > 0


class AsyncVersionlessRepository(AsyncInMemoryChatMemoryRepository):
    """A store without versions: it has no ``find_version``."""

    find_version = None  # type: ignore[assignment]


async def test_a_store_without_versions_is_checked_with_plain_appends() -> None:
    async def factory(**options: Any) -> AsyncVersionlessRepository:
        return AsyncVersionlessRepository(**options)

    with pytest.raises(ConfigurationError, match="not a session log"):
        await AsyncHistoryChecker(factory, seed=1, ttl=None, settings=CONTENDED).run()
    checker = AsyncHistoryChecker(
        factory, seed=1, ttl=None, settings=CONTENDED, versioned_appends=False
    )
    report = await checker.run()
    assert sum(report.version_checked.values()) == 0
    assert not [o for o in report.history.operations if o.action == "find_version"]


def test_every_worker_plans_a_versioned_append_each_cycle_however_small_the_run() -> None:
    from chatmem.testing._schedule import plan

    tiny = CheckerSettings(workers=3, purgers=1, conversations=6, cycles=2, steps_per_cycle=2)
    for seed in range(2_000):  # at 2 steps, most seeds would draw none without the rule
        for cycle in range(tiny.cycles):
            for worker in range(tiny.workers):
                steps = plan(seed, cycle, worker, tiny)
                assert len(steps) == tiny.steps_per_cycle
                assert any(step.action == "versioned_append" for step in steps), (seed, cycle)


async def test_a_small_run_the_seed_draws_no_versioned_append_for_still_checks_versions() -> None:
    # Seed 106040669 once drew no version-checked append among 30 mixed steps at this size.
    small = CheckerSettings(workers=3, purgers=1, conversations=6, cycles=2, steps_per_cycle=5)

    async def factory(**options: Any) -> AsyncInMemoryChatMemoryRepository:
        return AsyncInMemoryChatMemoryRepository(**options)

    report = await AsyncHistoryChecker(factory, settings=small, seed=106040669, ttl=0.3).run()
    assert sum(report.version_checked.values()) >= small.workers * small.cycles
