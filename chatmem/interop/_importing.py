"""What every importer yields, and appending it to a repository; no framework needed."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from chatmem.messages import Message
from chatmem.repository import ChatMemoryLog, ChatMemoryRepository

__all__ = ["ImportReport", "ImportedConversation", "import_conversations", "stable_id"]

_NAMESPACE = uuid.UUID("6f1c3a52-7d0e-4f43-9b7e-2f0b8f0c1a11")


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


def import_conversations(
    conversations: Iterable[ImportedConversation], repository: ChatMemoryRepository
) -> ImportReport:
    """Append imported conversations to a repository; running it again stores nothing.

    Args:
        conversations: What a source function yields.
        repository: A chatmem repository with the log capabilities (every built-in backend).

    Raises:
        TypeError: If the repository cannot append.
    """
    if not isinstance(repository, ChatMemoryLog):
        raise TypeError("importing needs a repository that appends (a ChatMemoryLog)")
    count = read = stored = left_out = 0
    for conversation in conversations:
        count += 1
        read += len(conversation.messages)
        left_out += conversation.left_out
        if conversation.messages:
            stored += len(repository.append(conversation.conversation_id, conversation.messages))
    return ImportReport(count, read, stored, left_out)
