"""What differs between the async and the sync twin, in one place.

Code is written once, async, and ``scripts/unasync.py`` generates its sync twin by renaming
``AsyncX`` to ``X`` and ``async_x`` to ``x``. Each name here comes as such a pair, so async
source that uses the async name becomes sync code that uses its twin:

- which twin is running: ``AsyncTwin.IS_ASYNC`` is ``True``, ``Twin.IS_ASYNC`` is ``False``;
- a collaborator of the right twin: :func:`check_flavor` (given ``IS_ASYNC``);
- locks and waits: ``AsyncLock``/``Lock``, ``AsyncSemaphore``/``Semaphore``,
  ``async_sleep``/``sleep``;
- fan-out: :func:`async_run_all` (tasks) / :func:`run_all` (threads);
- closing streams and running tools: :func:`async_closing`/:func:`closing`,
  :func:`async_run_tool`/:func:`run_tool`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

from chatmem.exceptions import ConfigurationError
from chatmem.tools import Tool

__all__ = [
    "AsyncLock",
    "AsyncSemaphore",
    "AsyncTwin",
    "Lock",
    "Semaphore",
    "Twin",
    "async_closing",
    "async_run_all",
    "async_run_tool",
    "async_sleep",
    "check_flavor",
    "closing",
    "run_all",
    "run_tool",
    "sleep",
]

T = TypeVar("T")


class AsyncTwin:
    """The async twin, as code shared by both twins sees it (its sync twin is :class:`Twin`).

    Example:
        ```python
        from chatmem.backend import AsyncTwin, Twin

        # In async source; the generated sync twin reads Twin.IS_ASYNC instead.
        assert AsyncTwin.IS_ASYNC and not Twin.IS_ASYNC
        ```
    """

    IS_ASYNC = True
    """Whether this is the async twin: here, yes."""


class Twin:
    """The sync twin, as code shared by both twins sees it (:class:`AsyncTwin`'s twin)."""

    IS_ASYNC = False
    """Whether this is the async twin: here, no."""


def check_flavor(obj: object, method: str, *, is_async: bool, role: str) -> None:
    """Raise ConfigurationError if ``obj.method`` is not of the expected flavor.

    Guards against handing a sync object to an async class, or the reverse.

    Args:
        obj: The collaborator, such as a repository.
        method: A method every such collaborator has.
        is_async: Whether a coroutine function is expected (``AsyncTwin.IS_ASYNC`` in
            async source).
        role: What the collaborator is, for the message.
    """
    function = getattr(obj, method, None)
    if function is None:
        raise ConfigurationError(f"{type(obj).__name__} is not a {role}: it has no {method}()")
    if inspect.iscoroutinefunction(function) != is_async:
        wanted, twin = ("an async", "Async") if is_async else ("a sync", "")
        raise ConfigurationError(
            f"{type(obj).__name__} is not {wanted} {role}; use the {twin or 'non-Async'} twin"
        )


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


@asynccontextmanager
async def async_closing(iterator: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """Close an async iterator (an async generator, a provider stream) when leaving the block.

    An abandoned async generator is otherwise closed only when garbage-collected, which may
    be long after its connection should have been released.
    """
    try:
        yield iterator
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


@contextmanager
def closing(iterator: Iterator[T]) -> Iterator[Iterator[T]]:
    """Close an iterator (a generator, a provider stream) when leaving the block."""
    try:
        yield iterator
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


async def async_run_tool(tool: Tool, arguments: dict[str, Any]) -> Any:
    """Run a tool from async code.

    A sync tool function is user code that may block, so it runs in a worker thread
    (``asyncio.to_thread``): a deliberate, documented offload, never the event loop.
    """
    if tool.is_async:
        return await tool.function(**arguments)
    return await asyncio.to_thread(tool.function, **arguments)


def run_tool(tool: Tool, arguments: dict[str, Any]) -> Any:
    """Run a tool from sync code.

    Raises:
        ConfigurationError: If the tool is a coroutine function; use the async client.
    """
    if tool.is_async:
        raise ConfigurationError(
            f"tool {tool.name!r} is async; use AsyncChatClient or make it a plain function"
        )
    return tool.function(**arguments)
