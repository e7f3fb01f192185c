"""Rows, positions and cursors to and from chatmem's values, for both twins (no I/O).

A position is an integer from a per-conversation counter, the static column
``next_position``. Every append states the value it expects as a Paxos condition
(``IF next_position = ?``) and advances it in the same batch, so Cassandra serialises the
positions: an acknowledged append's messages are after every message acknowledged before it,
whatever the clocks of the processes that wrote them say.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import zlib
from collections.abc import Sequence
from typing import Any

from chatmem.backend import Position, StoredMessage, VectorDocument, VectorFilter, check_identifier
from chatmem.exceptions import ConfigurationError
from chatmem.messages import (
    EventMessage,
    Message,
    SystemMessage,
    decode_message,
    encode_message,
)
from chatmem_repositories.cassandra._schema import CHAT, CLAIMS, EVENTS, SYSTEM

__all__ = [
    "CLAIM_POSITION",
    "FIRST_POSITION",
    "MAX_LIMIT",
    "MAX_POSITION",
    "NextPositions",
    "decode_cursor",
    "document_values",
    "encode_cursor",
    "filter_values",
    "listing_bucket",
    "message_rows",
    "parse_position",
    "section_of",
    "stored",
]

MAX_LIMIT = 2**31 - 1
"""Largest LIMIT CQL accepts."""

Item = tuple[str, Sequence[Any]]

CLAIM_POSITION = 0
"""The fixed clustering position of id-claim rows, below every message's."""
FIRST_POSITION = 1
"""The position of a conversation's first message."""
MAX_POSITION = 2**63 - 1
"""The largest ``bigint``."""


class NextPositions:
    """This process's last known ``next_position`` of recent conversations (bounded).

    Only a guess that saves a round trip: an append sends it as its Paxos condition, and a
    stale guess makes the batch fail with the current value, which the retry uses. Unknown
    means "a new conversation", the right guess for a first append.

    Args:
        size: How many conversations to remember; the least recently set are forgotten.
    """

    def __init__(self, size: int = 10_000) -> None:
        self._size = size
        self._known: dict[str, int] = {}
        # The sync repository is shared by threads; eviction iterates the dict.
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> int | None:
        """Return the last known ``next_position``, or ``None`` (new or unknown)."""
        return self._known.get(conversation_id)

    def set(self, conversation_id: str, value: int | None) -> None:
        """Record the value Cassandra answered with (``None`` forgets the conversation)."""
        with self._lock:
            self._known.pop(conversation_id, None)
            if value is None:
                return
            self._known[conversation_id] = value
            if len(self._known) > self._size:
                del self._known[next(iter(self._known))]

    def observe(self, conversation_id: str, value: int | None) -> None:
        """Record a value seen by a read, unless an append already recorded a later one.

        A read that overlaps an append of this process may answer with the value from
        before it; the counter only grows within a conversation's life, so the larger
        value is the fresher.
        """
        known = self._known.get(conversation_id)
        if value is not None and (known is None or value > known):
            self.set(conversation_id, value)


# Not shared: only ASCII digit text, and only values a bigint clustering column can hold.
def parse_position(position: Position) -> int:
    """Turn a position previously returned (an integer) back into the stored value.

    Raises:
        ConfigurationError: If it is not a position of this repository.
    """
    value: int | None = None
    if isinstance(position, int) and not isinstance(position, bool):
        value = position
    elif isinstance(position, str) and position.isascii() and position.isdigit():
        value = int(position)
    if value is None or not CLAIM_POSITION <= value <= MAX_POSITION:
        raise ConfigurationError(f"not a position of the cassandra repository: {position!r}")
    return value


def listing_bucket(conversation_id: str, buckets: int) -> int:
    """Return the listing bucket of a conversation: a stable hash of its id."""
    return zlib.crc32(conversation_id.encode("utf-8")) % buckets


def encode_cursor(bucket: int, after: str) -> str:
    """Encode a listing cursor: the bucket to resume in and the last id returned there."""
    raw = json.dumps([bucket, after], ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_cursor(cursor: str, buckets: int) -> tuple[int, str]:
    """Decode a cursor made by :func:`encode_cursor`.

    Raises:
        ConfigurationError: If the cursor was not made by this repository.
    """
    try:
        bucket, after = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, TypeError, UnicodeError, binascii.Error):
        raise ConfigurationError(f"invalid listing cursor: {cursor!r}") from None
    if not isinstance(bucket, int) or not isinstance(after, str) or not 0 <= bucket < buckets:
        raise ConfigurationError(f"invalid listing cursor: {cursor!r}")
    return bucket, after


def section_of(message: Message) -> str:
    """Return the section a message is stored in."""
    if isinstance(message, SystemMessage):
        return SYSTEM
    return EVENTS if isinstance(message, EventMessage) else CHAT


def message_rows(
    conversation_id: str,
    owner: str | None,
    messages: Sequence[Message],
    first: int,
    expected: int | None,
    *,
    replace: bool = False,
    token: str | None = None,
) -> list[Item]:
    """Return the statements that store messages at ``first``, ``first + 1``, and so on.

    They claim the ids, write the rows and the static columns (at least ``touched``) and
    set the counter to the position after the last message, only if the counter still is
    ``expected``: the batch is conditional, so Paxos orders it. For an append, also only if
    no id is claimed yet; with ``replace`` (``save_all``, whose batch also clears the
    partition) the claims are plain. Each claim carries ``token``, the append call's own, so
    the call can tell its own earlier attempt from another writer's. The caller adds the
    liveness cell when the repository has a TTL.
    """
    claim = "claim_plain" if replace else "claim"
    positions = range(first, first + len(messages))
    items: list[Item] = []
    system: tuple[int, str] | None = None
    for message, position in zip(messages, positions, strict=True):
        data = encode_message(message)
        items.append(
            (claim, (conversation_id, CLAIMS, CLAIM_POSITION, message.id, position, token))
        )
        items.append(
            (
                "insert",
                (
                    conversation_id,
                    section_of(message),
                    position,
                    message.id,
                    message.type.value,
                    message.created_at,
                    data,
                ),
            )
        )
        if isinstance(message, SystemMessage):
            system = (position, data)
    # One statement writes the static columns and the counter (see _cql.statements).
    head: tuple[Any, ...] = ()
    suffix = ""
    if system is not None:
        head, suffix = (owner, *system), "_system"
    elif owner is not None:
        head, suffix = (owner,), "_owner"
    after = first + len(messages)
    items.append(("advance" + suffix, (*head, after, conversation_id, expected)))
    return items


def stored(conversation_id: str, position: int, data: str | None) -> StoredMessage:
    """Decode one stored row; a corrupt record raises ``MessageDecodeError``."""
    return StoredMessage(position, decode_message(data or "", conversation_id=conversation_id))


def filter_values(where: VectorFilter) -> list[str]:
    """Return the bound values of a filter: key, value, key, value...

    Args:
        where: The filter.
    """
    values: list[str] = []
    for key, value in where:
        values += [check_identifier(key, "a filter key"), value]
    return values


def document_values(document: VectorDocument, vector: list[float]) -> tuple[Any, ...]:
    """Return the bound values of the insert statement.

    Args:
        document: The document.
        vector: Its embedding.
    """
    metadata = json.dumps(document.metadata, ensure_ascii=False)
    return (document.id, document.text, metadata, document.filterable(), vector)
