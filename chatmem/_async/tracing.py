"""Tracing helpers with an async and a sync twin: streams and repositories under spans.

Only used when :data:`chatmem._telemetry.ENABLED`; code paths without ``opentelemetry-api``
never reach this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from chatmem._async.repository import (
    AsyncChatMemoryLog,
    AsyncChatMemoryRepository,
    AsyncWindowReader,
)
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._telemetry import StreamEnd, active, async_step_in, mark_error, span_context
from chatmem._telemetry.db import collection_of, db_span
from chatmem._twins import async_closing
from chatmem.messages import Message, MessageType

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["AsyncTracedRepository", "traced_stream"]

T = TypeVar("T")
_NO_SPAN = nullcontext()


async def traced_stream(
    start: Callable[[], Span],
    stream: AsyncIterator[T],
    on_end: Callable[[Span, list[T]], None] | None = None,
    on_error: Callable[[Span, BaseException], None] | None = None,
) -> AsyncIterator[T]:
    """Pass a stream on under a span that ends when the stream does.

    The span is started at the first step and made current only while the inner stream
    runs, never while the consumer holds a chunk: a span left current across a ``yield``
    would parent the consumer's own spans and be detached in the wrong context.

    Args:
        start: Starts the span (called at the first step, so it gets the current parent).
        stream: The stream.
        on_end: Called with the span and every chunk when the stream ends normally.
        on_error: Records a failure (default: mark the span as failed).
    """
    span = start()
    context = span_context(span)
    chunks: list[T] = []
    try:
        async with async_closing(stream):
            while not isinstance(chunk := await async_step_in(context, stream), StreamEnd):
                if on_end is not None:
                    chunks.append(chunk)
                yield chunk
        if on_end is not None:
            on_end(span, chunks)
    except GeneratorExit:
        # The consumer stopped early: not an error, but worth telling apart.
        span.set_attribute("chatmem.stream.abandoned", True)
        raise
    except Exception as exc:
        if on_error is None:
            mark_error(span, exc)
        else:
            on_error(span, exc)
        raise
    finally:
        span.end()


class AsyncTracedRepository:
    """A chat memory repository whose every operation runs in a database span.

    Attributes follow the database conventions: ``db.system.name`` from the repository's
    ``db_system``, ``db.operation.name`` (the method), ``db.collection.name``. Arguments
    and results are never recorded: they are conversation ids and message content.

    Args:
        inner: The repository.
    """

    def __init__(self, inner: AsyncChatMemoryRepository) -> None:
        self.inner = inner
        """The repository."""
        # Log and window methods are only called when the repository has them.
        self._log = cast(AsyncChatMemoryLog, inner)
        self._collection = collection_of(inner)

    def _span(self, operation: str) -> Any:
        if not active():
            return _NO_SPAN
        return db_span(self.inner, operation, self._collection)

    async def find_conversation_ids(self) -> list[str]:
        """See :meth:`~chatmem.AsyncChatMemoryRepository.find_conversation_ids`."""
        with self._span("find_conversation_ids"):
            return await self.inner.find_conversation_ids()

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """See :meth:`~chatmem.AsyncChatMemoryRepository.find_by_conversation_id`."""
        with self._span("find_by_conversation_id"):
            return await self.inner.find_by_conversation_id(conversation_id)

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """See :meth:`~chatmem.AsyncChatMemoryRepository.save_all`."""
        with self._span("save_all"):
            await self.inner.save_all(conversation_id, messages)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """See :meth:`~chatmem.AsyncChatMemoryRepository.delete_by_conversation_id`."""
        with self._span("delete_by_conversation_id"):
            await self.inner.delete_by_conversation_id(conversation_id)

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """See :meth:`~chatmem.AsyncChatMemoryLog.append`."""
        if not active():  # the per-turn calls skip even an empty span
            return await self._log.append(conversation_id, messages)
        with self._span("append"):
            return await self._log.append(conversation_id, messages)

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """See :meth:`~chatmem.AsyncChatMemoryLog.find_recent`."""
        with self._span("find_recent"):
            return await self._log.find_recent(conversation_id, limit, before=before)

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """See :meth:`~chatmem.AsyncChatMemoryLog.find_system_message`."""
        with self._span("find_system_message"):
            return await self._log.find_system_message(conversation_id)

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """See :meth:`~chatmem.AsyncChatMemoryLog.find_latest`."""
        with self._span("find_latest"):
            return await self._log.find_latest(conversation_id, message_type)

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """See :meth:`~chatmem.AsyncChatMemoryLog.list_conversations`."""
        with self._span("list_conversations"):
            return await self._log.list_conversations(owner=owner, limit=limit, cursor=cursor)

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """See :meth:`~chatmem.AsyncChatMemoryLog.find_history`."""
        with self._span("find_history"):
            return await self._log.find_history(
                conversation_id,
                since=since,
                until=until,
                types=types,
                text=text,
                after=after,
                limit=limit,
            )

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """See :meth:`~chatmem.AsyncChatMemoryLog.delete_before`."""
        with self._span("delete_before"):
            return await self._log.delete_before(conversation_id, position)

    async def purge_expired(self) -> int:
        """See :meth:`~chatmem.AsyncChatMemoryLog.purge_expired`."""
        with self._span("purge_expired"):
            return await self._log.purge_expired()

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """See :class:`~chatmem.AsyncWindowReader`."""
        reader = cast(AsyncWindowReader, self.inner)
        if not active():
            return await reader.find_window(conversation_id, limit)
        with self._span("find_window"):
            return await reader.find_window(conversation_id, limit)

    async def aclose(self) -> None:
        """Close the repository."""
        await self._log.aclose()
