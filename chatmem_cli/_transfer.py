"""Streaming copies: export to JSON Lines, import from it, and migrate between backends.

Nothing here holds a whole conversation list or history in memory: conversations are read a
page at a time with ``list_conversations`` and messages with ``find_history``. Copies are
idempotent because a repository's ``append`` skips message ids it already has, so an
interrupted run is resumed by running it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from chatmem import ChatMemoryLog, Message, decode_message, encode_message
from chatmem.exceptions import MessageDecodeError

__all__ = [
    "MigrationReport",
    "count_conversations",
    "export_lines",
    "import_lines",
    "iter_conversations",
    "iter_history",
    "migrate",
]

PAGE = 500
"""Messages or conversation ids read per round trip."""


def iter_conversations(
    repository: ChatMemoryLog, *, owner: str | None = None, page_size: int = PAGE
) -> Iterator[str]:
    """Yield every conversation id, one page per round trip.

    Args:
        repository: Where to list.
        owner: Only this owner's conversations.
        page_size: Ids per page.
    """
    cursor: str | None = None
    while True:
        page = repository.list_conversations(owner=owner, limit=page_size, cursor=cursor)
        yield from page.conversation_ids
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def count_conversations(repository: ChatMemoryLog, *, owner: str | None = None) -> int:
    """Count conversations by paging through their ids (nothing is kept).

    Args:
        repository: Where to count.
        owner: Only this owner's conversations.
    """
    return sum(1 for _ in iter_conversations(repository, owner=owner))


def iter_history(
    repository: ChatMemoryLog, conversation_id: str, *, page_size: int = PAGE
) -> Iterator[list[Message]]:
    """Yield a conversation's history in order, one page of messages at a time.

    Args:
        repository: Where to read.
        conversation_id: The conversation.
        page_size: Messages per page.
    """
    after = None
    while True:
        page = repository.find_history(conversation_id, after=after, limit=page_size)
        if page:
            yield [stored.message for stored in page]
        if len(page) < page_size:
            return
        after = page[-1].position


def export_lines(
    repository: ChatMemoryLog, out: IO[str], *, owner: str | None = None
) -> tuple[int, int]:
    """Write one JSON line per message: ``{"conversation_id": ..., "message": {...}}``.

    The message is exactly :func:`chatmem.encode_message`'s output, so an import gives back
    equal messages (ids, timestamps, tool calls, media and metadata included).

    Args:
        repository: Where to read.
        out: A text stream to write to.
        owner: Only this owner's conversations.

    Returns:
        How many conversations and messages were written.
    """
    conversations = messages = 0
    for conversation_id in iter_conversations(repository, owner=owner):
        conversations += 1
        prefix = '{"conversation_id":' + json.dumps(conversation_id, ensure_ascii=False)
        for page in iter_history(repository, conversation_id):
            for message in page:
                out.write(f'{prefix},"message":{encode_message(message)}}}\n')
            messages += len(page)
    return conversations, messages


def _parse_line(line: str, number: int) -> tuple[str, Message]:
    try:
        record = json.loads(line)
        conversation_id = record["conversation_id"]
        encoded = json.dumps(record["message"], ensure_ascii=False)
    except (ValueError, KeyError, TypeError) as exc:
        raise MessageDecodeError(f"line {number} is not an exported message: {exc}") from exc
    if not isinstance(conversation_id, str):
        raise MessageDecodeError(f"line {number}: conversation_id must be a string")
    return conversation_id, decode_message(encoded, conversation_id=conversation_id)


def import_lines(
    repository: ChatMemoryLog, lines: Iterable[str], *, batch_size: int = PAGE
) -> tuple[int, int]:
    """Append exported messages, batching consecutive lines of one conversation.

    Messages whose ids the repository already has are skipped, so importing twice adds
    nothing.

    Args:
        repository: Where to write.
        lines: JSON lines as written by :func:`export_lines`.
        batch_size: Messages per append.

    Returns:
        How many messages were read and how many were newly stored.

    Raises:
        MessageDecodeError: For a line that is not an exported message (naming its number).
    """
    read = stored = 0
    batch: list[Message] = []
    current = ""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        conversation_id, message = _parse_line(line, number)
        read += 1
        if batch and (conversation_id != current or len(batch) >= batch_size):
            stored += len(repository.append(current, batch))
            batch = []
        current = conversation_id
        batch.append(message)
    if batch:
        stored += len(repository.append(current, batch))
    return read, stored


@dataclass
class MigrationReport:
    """What a migration did and what its verification found."""

    conversations: int = 0
    """Conversations visited."""
    read: int = 0
    """Messages read from the source."""
    stored: int = 0
    """Messages newly stored in the destination (0 on a re-run)."""
    mismatches: list[str] = field(default_factory=list)
    """One line per conversation whose destination count is below the source's."""
    extra: int = 0
    """Conversations whose destination already held more messages than the source."""


def _count(repository: ChatMemoryLog, conversation_id: str) -> int:
    return sum(len(page) for page in iter_history(repository, conversation_id))


def migrate(
    source: ChatMemoryLog,
    destination: ChatMemoryLog,
    *,
    owner: str | None = None,
    verify: bool = True,
    on_conversation: Callable[[str, int], Any] | None = None,
) -> MigrationReport:
    """Copy every conversation from ``source`` to ``destination``, a page at a time.

    Messages keep their ids, timestamps and metadata; the destination assigns positions in
    the source's order. Re-running copies nothing twice. With ``verify``, each conversation's
    message count is compared right after it is copied.

    Args:
        source: Where to read.
        destination: Where to write.
        owner: Only this owner's conversations.
        verify: Count each conversation in the destination after copying it.
        on_conversation: Called with each conversation id and its message count when done.
    """
    report = MigrationReport()
    for conversation_id in iter_conversations(source, owner=owner):
        read = 0
        for page in iter_history(source, conversation_id):
            read += len(page)
            report.stored += len(destination.append(conversation_id, page))
        report.read += read
        report.conversations += 1
        if verify:
            copied = _count(destination, conversation_id)
            if copied < read:
                report.mismatches.append(
                    f"{conversation_id!r}: {read} in the source, {copied} in the destination"
                )
            elif copied > read:
                report.extra += 1
        if on_conversation is not None:
            on_conversation(conversation_id, read)
    return report
