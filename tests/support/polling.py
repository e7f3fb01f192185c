"""Waiting for a condition with a deadline, where a server decides when it becomes true.

A fixed sleep either waits longer than needed or, on a busy machine, not long enough; these
poll until the condition holds and fail with the reason once the deadline has passed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

INTERVAL = 0.05  # seconds between two checks


def wait_until(condition: Callable[[], object], within: float, reason: str) -> None:
    """Return once ``condition()`` is true; fail the test if it is not within ``within`` s."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {within} s: {reason}")
        time.sleep(INTERVAL)


async def async_wait_until(
    condition: Callable[[], Awaitable[object]], within: float, reason: str
) -> None:
    """Return once ``await condition()`` is true; fail the test if not within ``within`` s."""
    deadline = time.monotonic() + within
    while not await condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {within} s: {reason}")
        await asyncio.sleep(INTERVAL)
