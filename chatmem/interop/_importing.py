"""What every importer yields, and appending it to a repository; no framework needed."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chatmem.exceptions import ChatMemError
from chatmem.messages import Message
from chatmem.repository import ChatMemoryLog, ChatMemoryRepository

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "SourceError",
    "import_conversations",
    "stable_id",
]

_NAMESPACE = uuid.UUID("6f1c3a52-7d0e-4f43-9b7e-2f0b8f0c1a11")
_PAGE = 500


class SourceError(ChatMemError, ValueError):
    """A source of conversations cannot be read as asked.

    Raised for an unknown source kind, an option the source does not take, a table or key
    that is not there, or stored data that is not what the source writes. Nothing is written
    for the conversation being read when it is raised.
    """


def stable_id(source: str, session: str, key: object) -> str:
    """Return the id of a message that its source stored without one (a UUIDv5).

    Args:
        source: The source kind and place, such as ``"langchain-sql:message_store"``.
        session: The session the message belongs to.
        key: Where the message is in the session (a row id or an index).
    """
    return str(uuid.uuid5(_NAMESPACE, f"{source}\n{session}\n{key}"))


@dataclass(frozen=True)
class ImportedConversation:
    """One conversation read from a source."""

    conversation_id: str
    """The source's session id."""
    messages: list[Message]
    """Its messages, oldest first, with stable ids."""
    left_out: int = 0
    """Stored messages the source kept too little of to import (see each source)."""


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_conversations` did."""

    conversations: int
    """Conversations read."""
    messages_read: int
    """Messages read."""
    messages_stored: int
    """Messages newly stored (0 when everything was imported before)."""
    left_out: int = 0
    """Messages the source kept too little of to import."""
    conversations_skipped: int = 0
    """Conversations whose every message the destination already held (nothing appended)."""
    mismatches: tuple[str, ...] = ()
    """One line per conversation whose messages are not all in the destination after the
    import (only with ``verify``)."""


def _stored_ids(repository: ChatMemoryLog, conversation_id: str) -> list[str]:
    """Return the ids of a conversation's stored messages, a page per round trip."""
    ids: list[str] = []
    after = None
    while True:
        page = repository.find_history(conversation_id, after=after, limit=_PAGE)
        ids.extend(stored.message.id for stored in page)
        if len(page) < _PAGE:
            return ids
        after = page[-1].position


def _missing(messages: list[Message], stored: list[str]) -> int:
    """Count the messages whose id is not among the stored ids."""
    held = set(stored)
    return sum(1 for m in messages if m.id not in held)


def import_conversations(
    conversations: Iterable[ImportedConversation],
    repository: ChatMemoryRepository,
    *,
    verify: bool = False,
    batch_size: int = _PAGE,
    on_conversation: Callable[[ImportedConversation, int], object] | None = None,
) -> ImportReport:
    """Append imported conversations to a repository; running it again stores nothing.

    Before appending a conversation its stored message ids are read (a page per round trip):
    a conversation whose every message is already stored is skipped without appending, so a
    re-run costs one read per conversation. Otherwise its messages are appended in batches;
    the repository skips ids it already holds, so an interrupted run is resumed by running
    it again, and messages keep the source's order.

    Args:
        conversations: What a source function (or :func:`chatmem.interop.sources.read_source`)
            yields.
        repository: A chatmem repository with the log capabilities (every built-in backend).
        verify: Read each appended conversation back and check that every message id is
            stored; a shortfall is reported in :attr:`ImportReport.mismatches`.
        batch_size: Messages per append.
        on_conversation: Called with each conversation and the number of messages newly
            stored for it, once it is done (drives a progress bar).

    Raises:
        TypeError: If the repository cannot append.
        ValueError: If ``batch_size`` is below 1.
    """
    if not isinstance(repository, ChatMemoryLog):
        raise TypeError("importing needs a repository that appends (a ChatMemoryLog)")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    count = read = stored = left_out = skipped = 0
    mismatches: list[str] = []
    for conversation in conversations:
        count += 1
        messages = conversation.messages
        read += len(messages)
        left_out += conversation.left_out
        new = 0
        if messages:
            if _missing(messages, _stored_ids(repository, conversation.conversation_id)) == 0:
                skipped += 1
            else:
                for start in range(0, len(messages), batch_size):
                    batch = messages[start : start + batch_size]
                    new += len(repository.append(conversation.conversation_id, batch))
                if verify:
                    ids = _stored_ids(repository, conversation.conversation_id)
                    missing = _missing(messages, ids)
                    if missing:
                        mismatches.append(
                            f"{conversation.conversation_id!r}: {missing} of {len(messages)} "
                            "message(s) are not in the destination"
                        )
        stored += new
        if on_conversation is not None:
            on_conversation(conversation, new)
    return ImportReport(count, read, stored, left_out, skipped, tuple(mismatches))
