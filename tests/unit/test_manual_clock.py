"""ManualClock: the clock the conformance suite and the history checker step over a TTL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest

from chatmem.testing import ManualClock


def test_it_starts_now_in_utc_and_stands_still() -> None:
    before = datetime.now(UTC)
    clock = ManualClock()
    after = datetime.now(UTC)
    first = clock()
    assert before <= first <= after
    assert first.tzinfo is UTC
    assert clock() == first


def test_it_advances_by_seconds_or_a_timedelta_and_returns_the_new_instant() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = ManualClock(start)
    assert clock.advance(1.5) == start + timedelta(seconds=1.5)
    assert clock.advance(timedelta(days=30)) == start + timedelta(days=30, seconds=1.5)
    assert clock.advance(0) == clock()
    assert clock() == start + timedelta(days=30, seconds=1.5)


def test_an_aware_start_in_another_zone_is_converted_to_utc() -> None:
    paris = timezone(timedelta(hours=1))
    clock = ManualClock(datetime(2026, 1, 1, 1, 0, tzinfo=paris))
    assert clock() == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert clock().tzinfo is UTC


def test_it_refuses_a_naive_start_and_going_back() -> None:
    with pytest.raises(ValueError, match="aware"):
        ManualClock(datetime(2026, 1, 1))  # naive: no time zone
    clock = ManualClock()
    now = clock()
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(timedelta(microseconds=-1))
    assert clock() == now


def test_advances_from_many_threads_all_count() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = ManualClock(start)
    threads, steps = 8, 2000
    seen: list[datetime] = []

    def work() -> None:
        for _ in range(steps):
            seen.append(clock.advance(timedelta(microseconds=1)))
            clock()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    assert clock() == start + timedelta(microseconds=threads * steps)
    # Each advance returned its own instant: none was lost or seen twice.
    assert len(set(seen)) == threads * steps
