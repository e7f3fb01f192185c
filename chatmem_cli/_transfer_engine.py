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
from typing import IO, Any, cast

from chatmem import ChatMemoryLog, Message, decode_message, encode_message
from chatmem.backend import run_in_order
from chatmem.exceptions import MessageDecodeError
from chatmem.messages import decode_messages
from chatmem.repository import MessageCounter

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


_PREFIX = '{"conversation_id":'
_MIDDLE = ',"message":'
_POSITION = ',"position":'
_SUMMARY = '"summary":'
_STRING = json.JSONDecoder()
_CHUNK = 1000
"""Lines decoded in one call."""


def _split(line: str) -> tuple[str, str] | None:
    """The conversation id and the message's JSON of a line exactly as export writes it.

    An owner's export (``export --owner``) also gives each message's position, which an
    import leaves out: the destination assigns its own. ``None`` for any other line (it is
    then parsed in full, which says what is wrong).
    """
    if not line.startswith(_PREFIX):
        return None
    try:
        conversation_id, end = _STRING.raw_decode(line, len(_PREFIX))
        if line.startswith(_POSITION, end):
            position, end = _STRING.raw_decode(line, end + len(_POSITION))
            if type(position) not in (int, str):
                return None
    except ValueError:
        return None
    if type(conversation_id) is not str or not line.startswith(_MIDDLE, end):
        return None
    body = line[end + len(_MIDDLE) :].rstrip()
    if not body.endswith("}"):
        return None
    return conversation_id, body[:-1]


def _parse_chunk(chunk: list[tuple[int, str]]) -> list[tuple[str, Message]]:
    """Parse numbered non-blank lines: the export's own lines in one decoding call."""
    split = [_split(line) for _, line in chunk]
    if all(split):
        parts = cast("list[tuple[str, str]]", split)
        try:
            messages = decode_messages([body for _, body in parts])
        except MessageDecodeError:
            pass
        else:
            return [
                (conversation_id, m)
                for (conversation_id, _), m in zip(parts, messages, strict=True)
            ]
    # Something else: line by line, through json, which names the line that is wrong.
    return [_parse_line(line, number) for number, line in chunk]


def _is_summary(line: str) -> bool:
    """Whether a line is a summary as an owner's export writes it (an import skips it).

    A summary's position is one of the exporting store's: it means nothing elsewhere.
    """
    if _SUMMARY not in line:  # cheap, and true of few message lines
        return False
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(record, dict)
        and isinstance(record.get("conversation_id"), str)
        and isinstance(record.get("summary"), dict)
        and "message" not in record
    )


def _numbered(lines: Iterable[str]) -> Iterator[list[tuple[int, str]]]:
    """The non-blank lines with their numbers, summaries left out, a chunk at a time."""
    chunk: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if line.strip() and not _is_summary(line):
            chunk.append((number, line))
            if len(chunk) == _CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _parsed(lines: Iterable[str]) -> Iterator[tuple[str, Message]]:
    """Yield the conversation id and message of every non-blank line, in order."""
    for chunk in _numbered(lines):
        yield from _parse_chunk(chunk)


def _entries(lines: Iterable[str]) -> Iterator[tuple[str, str | Message]]:
    """Yield the conversation id of every line and its message, or the message's JSON.

    The export's own lines (checked already) keep their message as JSON text: one already
    stored is compared with the stored one's encoding, and only new ones are decoded.
    """
    for chunk in _numbered(lines):
        split = [_split(line) for _, line in chunk]
        if all(split):
            yield from cast("list[tuple[str, str]]", split)
        else:
            yield from _parse_chunk(chunk)


_ID = '{"id":'


def _id_of(text: str) -> str | None:
    """The id of an encoded message (encode_message writes it first), or ``None``."""
    if not text.startswith(_ID):
        return None
    try:
        message_id, _ = _STRING.raw_decode(text, len(_ID))
    except ValueError:
        return None
    return message_id if type(message_id) is str else None


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
    return sum(1 for _ in _parsed(lines))


def _same(a: Message, b: Message) -> bool:
    """Whether two messages of one id hold the same content (as encoded)."""
    return a == b or encode_message(a) == encode_message(b)


@dataclass
class _Unit:
    """Consecutive lines of one conversation, imported together."""

    conversation_id: str
    entries: list[str | Message]
    """Each line's message, or its JSON text (decoded only if it is not stored yet)."""
    stored: int = 0
    conflicts: list[str] = field(default_factory=list)


def _import_unit(repository: ChatMemoryLog, unit: _Unit, batch_size: int) -> _Unit:
    """Append what the destination does not hold; compare what it holds.

    The conversation's stored messages are read first (a page per round trip), so messages
    already there are not appended again: each is compared with the stored one (as encoded
    text when the line holds it so, without decoding the line) and counted as known or
    reported as a conflict.
    """
    conversation_id = unit.conversation_id
    held = {
        message.id: message
        for page in iter_history(repository, conversation_id)
        for message in page
    }
    new: list[Message] = []
    for entry in unit.entries:
        if isinstance(entry, str):
            stored = held.get(_id_of(entry) or "")
            if stored is not None and encode_message(stored) == entry:
                continue  # the same message, byte for byte
            message = decode_message(entry, conversation_id=conversation_id)
        else:
            message = entry
        stored = held.get(message.id)
        if stored is None:
            new.append(message)
            held[message.id] = message  # a later copy in the file is compared with it
        elif not _same(stored, message):
            unit.conflicts.append(
                f"conversation {conversation_id!r}: message id {message.id!r} is "
                "already stored with different content"
            )
    for start in range(0, len(new), batch_size):
        unit.stored += len(repository.append(conversation_id, new[start : start + batch_size]))
    return unit


def _units(entries: Iterable[tuple[str, str | Message]], limit: int) -> Iterator[_Unit]:
    """Group consecutive lines of a conversation, at most ``limit`` per unit."""
    unit: _Unit | None = None
    for conversation_id, entry in entries:
        if unit is not None and (
            conversation_id != unit.conversation_id or len(unit.entries) >= limit
        ):
            yield unit
            unit = None
        if unit is None:
            unit = _Unit(conversation_id, [])
        unit.entries.append(entry)
    if unit is not None:
        yield unit


def import_lines(
    repository: ChatMemoryLog,
    source: IO[str],
    *,
    batch_size: int = PAGE,
    concurrency: int = 1,
    on_checked: Callable[[int], Any] | None = None,
    on_batch: Callable[[int], Any] | None = None,
) -> ImportReport:
    """Check every line, then append the messages, a conversation's lines together.

    Nothing is written unless every line is an exported message, so a corrupt file stores
    nothing. A message whose id is already stored is skipped: counted as known if it is the
    same message, reported as a conflict (and not written) if its content differs. The
    stored messages of a conversation are read before its lines are appended, so a re-run
    appends nothing.

    Args:
        repository: Where to write.
        source: JSON lines as written by :func:`export_lines`, in a seekable text file (it is
            read twice: once to check, once to write).
        batch_size: Messages per append.
        concurrency: Conversations imported at once, each on a thread (their round trips
            overlap); 1 imports one after another.
        on_checked: Called with the number of messages once every line is checked.
        on_batch: Called with the number of messages of each conversation (or part of a
            long one) once it is appended, in the file's order.

    Raises:
        MessageDecodeError: For a line that is not an exported message (naming its number);
            nothing has been written then.
    """
    total = check_lines(source)
    if on_checked is not None:
        on_checked(total)
    source.seek(0)
    report = ImportReport()

    def done(_: _Unit, unit: _Unit) -> None:
        report.read += len(unit.entries)
        report.stored += unit.stored
        report.conflicts += unit.conflicts
        if on_batch is not None:
            on_batch(len(unit.entries))

    run_in_order(
        _units(_entries(source), batch_size * 20),
        lambda unit: _import_unit(repository, unit, batch_size),
        done,
        workers=concurrency,
        key=lambda unit: unit.conversation_id,
    )
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


def _stored_ids(repository: ChatMemoryLog, conversation_id: str) -> set[str]:
    return {m.id for page in iter_history(repository, conversation_id) for m in page}


@dataclass
class _Copied:
    conversation_id: str
    read: int = 0
    stored: int = 0
    held: int = 0
    """Messages in the destination: before copying, then as verified if anything was appended."""
    appended: bool = False
    """Whether anything was appended (so ``held`` must be counted again to verify)."""


def _copy_one(source: ChatMemoryLog, destination: ChatMemoryLog, conversation_id: str) -> _Copied:
    """Copy the messages of one conversation that the destination does not hold, in order.

    The destination's ids are read first, so a conversation already copied costs one read
    on each side and no append.
    """
    held = _stored_ids(destination, conversation_id)
    copied = _Copied(conversation_id, held=len(held))
    for page in iter_history(source, conversation_id):
        copied.read += len(page)
        new = [message for message in page if message.id not in held]
        if new:
            copied.stored += len(destination.append(conversation_id, new))
            held.update(message.id for message in new)
            copied.appended = True
    return copied


def migrate(
    source: ChatMemoryLog,
    destination: ChatMemoryLog,
    *,
    owner: str | None = None,
    verify: bool = True,
    concurrency: int = 1,
    on_conversation: Callable[[str, int], Any] | None = None,
) -> MigrationReport:
    """Copy every conversation from ``source`` to ``destination``, a page at a time.

    Messages keep their ids, timestamps and metadata; the destination assigns positions in
    the source's order. The destination's ids are read before a conversation is copied, so
    only missing messages are appended and a re-run appends nothing. With ``verify``, each
    conversation's message count in the destination is compared with the source's (read
    back when anything was appended: counted by the store when the destination is a
    :class:`~chatmem.repository.MessageCounter`, else by reading its messages).

    Args:
        source: Where to read.
        destination: Where to write.
        owner: Only this owner's conversations.
        verify: Count each conversation in the destination after copying it.
        concurrency: Conversations copied at once, each on a thread (both repositories must
            be safe to share between threads, as every built-in backend is).
        on_conversation: Called with each conversation id and its message count when done,
            in the source's order.
    """
    report = MigrationReport()
    # A destination that counts on the server is verified by its count: the same number as
    # reading every message back, without decoding them (half of a copy's client CPU).
    counter = destination if isinstance(destination, MessageCounter) else None

    def copy(conversation_id: str) -> _Copied:
        copied = _copy_one(source, destination, conversation_id)
        if verify and copied.appended:
            if counter is not None:
                copied.held = counter.count_messages(conversation_id)
            else:
                copied.held = len(_stored_ids(destination, conversation_id))
        return copied

    def done(_: str, copied: _Copied) -> None:
        report.read += copied.read
        report.stored += copied.stored
        report.conversations += 1
        if verify:
            if copied.held < copied.read:
                report.mismatches.append(
                    f"{copied.conversation_id!r}: {copied.read} in the source, {copied.held} "
                    "in the destination"
                )
            elif copied.held > copied.read:
                report.extra += 1
        if on_conversation is not None:
            on_conversation(copied.conversation_id, copied.read)

    run_in_order(
        iter_conversations(source, owner=owner),
        copy,
        done,
        workers=concurrency,
        key=lambda conversation_id: conversation_id,
    )
    return report
