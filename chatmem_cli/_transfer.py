"""Streaming copies: export to JSON Lines, import from it, and migrate between backends.

Nothing here holds a whole conversation list or history in memory: conversations are read a
page at a time with ``list_conversations`` and messages with ``find_history``. Copies are
idempotent because a repository's ``append`` skips message ids it already has, so an
interrupted run is resumed by running it again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from chatmem import ChatMemoryLog, Message, decode_message, encode_message
from chatmem.exceptions import MessageDecodeError

__all__ = [
    "ImportReport",
    "MigrationReport",
    "check_lines",
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
    repository: ChatMemoryLog,
    out: IO[str],
    *,
    owner: str | None = None,
    on_conversation: Callable[[str, int], Any] | None = None,
) -> tuple[int, int]:
    """Write one JSON line per message: ``{"conversation_id": ..., "message": {...}}``.

    The message is exactly :func:`chatmem.encode_message`'s output, so an import gives back
    equal messages (ids, timestamps, tool calls, media and metadata included).

    Args:
        repository: Where to read.
        out: A text stream to write to.
        owner: Only this owner's conversations.
        on_conversation: Called with each conversation id and its message count when written
            (drives the progress bar).

    Returns:
        How many conversations and messages were written.
    """
    conversations = messages = 0
    for conversation_id in iter_conversations(repository, owner=owner):
        conversations += 1
        prefix = '{"conversation_id":' + json.dumps(conversation_id, ensure_ascii=False)
        written = 0
        for page in iter_history(repository, conversation_id):
            for message in page:
                out.write(f'{prefix},"message":{encode_message(message)}}}\n')
            written += len(page)
        messages += written
        if on_conversation is not None:
            on_conversation(conversation_id, written)
    return conversations, messages


def _parse_line(line: str, number: int) -> tuple[str, Message]:
    try:
        record = json.loads(line)
        conversation_id = record["conversation_id"]
        encoded = json.dumps(record["message"], ensure_ascii=False)
    except (ValueError, KeyError, TypeError) as exc:
        raise MessageDecodeError(f"line {number} is not an exported message: {exc}") from exc
    except RecursionError:
        raise MessageDecodeError(
            f"line {number} is not an exported message: nested too deeply"
        ) from None
    if not isinstance(conversation_id, str):
        raise MessageDecodeError(f"line {number}: conversation_id must be a string")
    return conversation_id, decode_message(encoded, conversation_id=conversation_id)


@dataclass
class ImportReport:
    """What an import did."""

    read: int = 0
    """Messages read from the input."""
    stored: int = 0
    """Messages newly stored."""
    conflicts: list[str] = field(default_factory=list)
    """One line per message whose id was already stored with different content (it was not
    written)."""

    @property
    def known(self) -> int:
        """Messages skipped because the same message was already stored."""
        return self.read - self.stored - len(self.conflicts)


def check_lines(lines: Iterable[str]) -> int:
    """Parse every line without writing anything; return how many messages there are.

    Args:
        lines: JSON lines as written by :func:`export_lines`.

    Raises:
        MessageDecodeError: For the first line that is not an exported message (naming its
            number).
    """
    count = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            _parse_line(line, number)
            count += 1
    return count


def _digest(message: Message) -> bytes:
    return hashlib.blake2b(encode_message(message).encode(), digest_size=16).digest()


class _Pending:
    """Messages an append skipped, by id, until they are compared with the stored ones.

    Only digests are kept, so a re-import of a long conversation holds little memory.
    """

    def __init__(self) -> None:
        self.conversation_id = ""
        self.digests: dict[str, list[bytes]] = {}

    def add(self, conversation_id: str, batch: list[Message], stored: list[Any]) -> None:
        new = {item.message.id for item in stored}
        for message in batch:
            if message.id in new:
                new.discard(message.id)  # a later copy in this batch was skipped
            else:
                self.conversation_id = conversation_id
                self.digests.setdefault(message.id, []).append(_digest(message))

    def check(self, repository: ChatMemoryLog) -> list[str]:
        """Compare the skipped messages with the stored ones; return the conflicts."""
        conflicts: list[str] = []
        remaining = dict(self.digests)
        for page in iter_history(repository, self.conversation_id):
            for message in page:
                digests = remaining.pop(message.id, None)
                if digests and any(d != _digest(message) for d in digests):
                    conflicts.append(
                        f"conversation {self.conversation_id!r}: message id {message.id!r} is "
                        "already stored with different content"
                    )
            if not remaining:
                break
        self.digests = {}
        return conflicts


def import_lines(
    repository: ChatMemoryLog,
    source: IO[str],
    *,
    batch_size: int = PAGE,
    on_checked: Callable[[int], Any] | None = None,
    on_batch: Callable[[int], Any] | None = None,
) -> ImportReport:
    """Check every line, then append the messages, batching lines of one conversation.

    Nothing is written unless every line is an exported message, so a corrupt file stores
    nothing. A message whose id is already stored is skipped: counted as known if it is the
    same message, reported as a conflict (and not written) if its content differs.

    Args:
        repository: Where to write.
        source: JSON lines as written by :func:`export_lines`, in a seekable text file (it is
            read twice: once to check, once to write).
        batch_size: Messages per append.
        on_checked: Called with the number of messages once every line is checked.
        on_batch: Called with the number of messages of each batch once it is appended.

    Raises:
        MessageDecodeError: For a line that is not an exported message (naming its number);
            nothing has been written then.
    """
    total = check_lines(source)
    if on_checked is not None:
        on_checked(total)
    source.seek(0)
    report = ImportReport()
    pending = _Pending()
    batch: list[Message] = []
    current = ""

    def flush() -> None:
        stored = repository.append(current, batch)
        report.stored += len(stored)
        pending.add(current, batch, stored)
        if on_batch is not None:
            on_batch(len(batch))

    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        conversation_id, message = _parse_line(line, number)
        report.read += 1
        if batch and (conversation_id != current or len(batch) >= batch_size):
            flush()
            batch = []
            if conversation_id != current and pending.digests:
                report.conflicts += pending.check(repository)
        current = conversation_id
        batch.append(message)
    if batch:
        flush()
    if pending.digests:
        report.conflicts += pending.check(repository)
    return report


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
