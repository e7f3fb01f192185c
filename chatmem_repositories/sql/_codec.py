"""Rows <-> messages: the batch an append writes and the decoding of what a read returns.

No I/O and no dialect: every plan and the repository share these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatmem.backend import Position, StoredMessage
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import (
    CHAT_MESSAGE_TYPES,
    Message,
    SystemMessage,
    decode_message,
    encode_message,
    searchable_text,
)
from chatmem_repositories.sql._schema import MAX_MESSAGE_ID_LENGTH

__all__ = [
    "FIRST_POSITION",
    "INSERT_CHUNK",
    "Batch",
    "as_position",
    "check_version",
    "chunks",
    "id_text",
    "is_out_of_windows",
    "search_text",
    "stored_in",
    "to_stored",
]

# Rows per INSERT: well under every dialect's bound-parameter limit (SQLite: 32766).
INSERT_CHUNK = 500
FIRST_POSITION = 1
"""Position of a new conversation's first message: a reservation starting here created the
conversation row, so it has no messages yet."""


# Not shared with the other backends: this one also takes back its positions as digit text.
def as_position(value: Position) -> int:
    """Return a position this backend handed out as an int, or raise ConfigurationError."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise ConfigurationError(f"not a position of the SQL repository: {value!r}")


def search_text(message: Message) -> str:
    """The text the search column holds for a message: its searchable text, case-folded."""
    return searchable_text(message).casefold()


def is_out_of_windows(message: Message) -> bool:
    """The value of a message's ``is_system`` column: whether windows leave it out.

    True for system messages and events, false for user, assistant and tool messages. The
    window reads, ``delete_before`` and ``delete_between`` all select ``is_system = false``
    through the ``messages_window`` index, so events are kept out of them with no column
    of their own; the current system message is found through ``system_position`` or by
    ``type``, never by this flag.
    """
    return message.type not in CHAT_MESSAGE_TYPES


def check_version(conversation_id: str, expected: int | None, start: int, *, revived: bool) -> None:
    """Refuse an append whose reservation shows the conversation was not at ``expected``.

    Called right after the reservation, inside its transaction: raising rolls the
    reservation back with everything else, so nothing is stored, bumped or touched.

    Args:
        conversation_id: The conversation.
        expected: The caller's ``expected_version``; ``None`` checks nothing.
        start: The first position reserved: the version before it is ``start - 1``.
        revived: The reservation started a new life of an expired conversation, whose
            version was 0 (a new conversation's first reservation starts at 1: version 0).

    Raises:
        VersionConflictError: The version before the reservation was not ``expected``.
    """
    if expected is None:
        return
    actual = 0 if revived else start - 1
    if actual != expected:
        raise VersionConflictError(conversation_id, expected, actual)


def to_stored(row: Sequence[Any], conversation_id: str) -> StoredMessage:
    """Decode a ``(position, body)`` row; a corrupt body raises MessageDecodeError."""
    return StoredMessage(int(row[0]), decode_message(row[1], conversation_id=conversation_id))


def id_text(value: Any) -> str:
    """Return an id read through a ``UNION`` as text (MySQL's VARBINARY comes back raw)."""
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split insert rows into statements of at most :data:`INSERT_CHUNK` rows."""
    return [rows[i : i + INSERT_CHUNK] for i in range(0, len(rows), INSERT_CHUNK)]


class Batch:
    """Messages to store in one transaction: de-duplicated by id, first occurrence wins.

    Raises:
        ConfigurationError: If a message id is longer than the schema stores.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        seen: set[str] = set()
        self.messages: list[Message] = []
        for message in messages:
            if len(message.id) > MAX_MESSAGE_ID_LENGTH:
                raise ConfigurationError(
                    f"message id is {len(message.id)} characters long; "
                    f"the SQL repository stores at most {MAX_MESSAGE_ID_LENGTH}"
                )
            if message.id not in seen:
                seen.add(message.id)
                self.messages.append(message)
        last_system = None
        for index, message in enumerate(self.messages):
            if isinstance(message, SystemMessage):
                last_system = index
        self.system_offset: int | None = last_system
        """Index of the last system message, whose position becomes the current one."""

    def __len__(self) -> int:
        return len(self.messages)

    def rows(self, conversation_id: str, start: int) -> list[dict[str, Any]]:
        """Return one insert row per message, positions ``start``, ``start + 1``, ..."""
        return [
            {
                "conversation_id": conversation_id,
                "position": start + i,
                "message_id": message.id,
                "type": str(message.type),
                "is_system": is_out_of_windows(message),
                "created_at": message.created_at,
                "search_text": search_text(message),
                "body": encode_message(message),
            }
            for i, message in enumerate(self.messages)
        ]


def stored_in(batch: Batch, start: int, positions: set[int]) -> list[StoredMessage]:
    """Return the batch's messages that were stored, at ``positions`` counted from ``start``."""
    return [
        StoredMessage(start + i, message)
        for i, message in enumerate(batch.messages)
        if start + i in positions
    ]
