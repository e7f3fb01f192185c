"""Background work of a summarizing memory: a task per key (async) or a worker thread (sync).

``scripts/unasync.py`` maps :class:`AsyncBackground` to :class:`Background`. At most one run
per key is pending; a start while one is pending asks it to run once more when it ends, so
work that arrived during a run (a turn stored after the run read the history) is never
skipped, and a burst of starts costs at most two runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["AsyncBackground", "Background"]


class AsyncBackground:
    """Runs coroutines as tasks on the running loop, at most one pending per key."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()

    def start(self, key: str, work: Callable[[], Awaitable[None]]) -> None:
        """Schedule ``work()``, or one more run of the pending work for ``key``."""
        if key in self._tasks:
            self._again.add(key)
            return

        async def run() -> None:
            try:
                while True:
                    self._again.discard(key)
                    await work()
                    if key not in self._again:
                        return
            finally:
                self._tasks.pop(key, None)

        # The dict holds the strong reference that keeps the task alive until it ends.
        self._tasks[key] = asyncio.get_running_loop().create_task(run())

    async def drain(self) -> None:
        """Wait until no work is pending."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def aclose(self) -> None:
        """Wait for pending work."""
        await self.drain()


class Background:
    """Runs callables on one worker thread, at most one pending per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, Future[None]] = {}
        self._again: set[str] = set()
        self._executor: ThreadPoolExecutor | None = None

    def start(self, key: str, work: Callable[[], None]) -> None:
        """Queue ``work()``, or one more run of the pending work for ``key``."""

        def run() -> None:
            try:
                while True:
                    with self._lock:
                        self._again.discard(key)
                    work()
                    with self._lock:  # decided under the lock that start() takes
                        if key not in self._again:
                            self._pending.pop(key, None)
                            return
            except BaseException:
                with self._lock:
                    self._pending.pop(key, None)
                raise

        with self._lock:
            if key in self._pending:
                self._again.add(key)
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="chatmem-summary")
            self._pending[key] = self._executor.submit(run)

    def drain(self) -> None:
        """Wait until no work is pending."""
        while True:
            with self._lock:
                futures = list(self._pending.values())
            if not futures:
                return
            for future in futures:
                future.exception()  # waits; the work logs its own errors

    def close(self) -> None:
        """Wait for pending work and stop the worker thread."""
        self.drain()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
