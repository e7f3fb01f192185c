"""Twin helpers for the client: what differs between the async and the sync code.

``scripts/unasync.py`` turns ``async_x`` into ``x``, so async source calling these names
becomes sync code calling their twins.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

from chatmem.exceptions import ConfigurationError
from chatmem.tools import Tool

__all__ = ["async_closing", "async_run_tool", "closing", "run_tool"]

T = TypeVar("T")


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
