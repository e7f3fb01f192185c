"""Locks and fan-out for both twins; ``scripts/unasync.py`` maps async names to sync ones."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = [
    "AsyncLock",
    "AsyncSemaphore",
    "Lock",
    "Semaphore",
    "api",
    "async_api",
    "async_run_all",
    "async_sleep",
    "run_all",
    "sleep",
]

T = TypeVar("T")

async_api = True
"""Tells code shared by both twins which one it is running in (``api`` in the sync twin)."""
api = False

AsyncLock = asyncio.Lock
Lock = threading.Lock
# asyncio's semaphore wakes waiters in arrival order; a task releasing and re-acquiring at
# once cannot overtake them (asyncio.Queue's get_nowait can, which starves queued tasks).
AsyncSemaphore = asyncio.Semaphore
Semaphore = threading.Semaphore
async_sleep = asyncio.sleep
sleep = time.sleep


async def async_run_all(calls: list[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run coroutine factories concurrently as tasks and return their results in order."""
    return list(await asyncio.gather(*(call() for call in calls)))


def run_all(calls: list[Callable[[], T]]) -> list[T]:
    """Run callables concurrently in threads and return their results in order."""
    if not calls:
        return []
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]
