"""A clock that moves only when a test says so, for expiry tests that do not sleep.

A repository that takes ``clock=`` (a callable returning an aware UTC ``datetime``) reads the
time from it wherever it would otherwise ask the system: when it stamps a write's expiry and
when it decides on a read or a purge whether something has expired. Give it a
:class:`ManualClock` and a test steps over a time to live in microseconds of wall time, and
can stand exactly on either side of the boundary.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

__all__ = ["ManualClock"]


class ManualClock:
    """A callable clock for tests: returns the same instant until it is advanced.

    It starts at the current time (so rows it stamps sit among real ones in a shared test
    database) unless given ``start``. Calls and advances may come from any thread.

    Example:
        ```python
        from datetime import timedelta

        from chatmem.testing import ManualClock

        clock = ManualClock()
        start = clock()
        clock.advance(90)
        clock.advance(timedelta(minutes=1))
        assert clock() - start == timedelta(seconds=150)
        ```

    Args:
        start: The first instant; an aware datetime, converted to UTC. Default: now.

    Raises:
        ValueError: ``start`` is naive (no time zone).
    """

    def __init__(self, start: datetime | None = None) -> None:
        if start is None:
            start = datetime.now(UTC)
        elif start.tzinfo is None or start.utcoffset() is None:
            raise ValueError("ManualClock needs an aware datetime (with a time zone)")
        self._now = start.astimezone(UTC)
        # Repositories read the clock from worker threads and driver callbacks; the lock
        # makes each advance a single step that no reader sees half done.
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """Return the clock's current instant, an aware UTC datetime."""
        with self._lock:
            return self._now

    def advance(self, by: float | timedelta) -> datetime:
        """Move the clock forward and return the new instant.

        Args:
            by: Seconds (int or float) or a ``timedelta``; not negative.

        Returns:
            The instant after the advance.

        Raises:
            ValueError: ``by`` is negative: a clock that goes back would make a store's
                expiry decisions contradict each other.
        """
        step = by if isinstance(by, timedelta) else timedelta(seconds=by)
        if step < timedelta(0):
            raise ValueError(f"a ManualClock only moves forward, not by {step}")
        with self._lock:
            self._now += step
            return self._now

    def __repr__(self) -> str:
        return f"ManualClock({self().isoformat()})"
