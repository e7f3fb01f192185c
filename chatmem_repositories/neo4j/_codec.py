"""Conversions between messages and the values stored on ``Message`` nodes (no I/O)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from chatmem.backend import Position, StoredMessage, VectorDocument, epoch_micros
from chatmem.exceptions import ConfigurationError
from chatmem.messages import (
    Message,
    MessageType,
    decode_message,
    encode_message,
    searchable_text,
)

__all__ = [
    "FIRST_POSITION",
    "NO_POSITION",
    "check_position",
    "document_rows",
    "message_params",
    "stored_messages",
    "ttl_millis",
]

NO_POSITION = 2**63 - 1
"""Above every position: ``before=`` when the caller gives none."""
FIRST_POSITION = 0
"""Below every position: ``after=`` when the caller gives none."""


def ttl_millis(ttl: timedelta | None) -> int | None:
    """Return a TTL in whole milliseconds (at least 1), or ``None``."""
    if ttl is None:
        return None
    return max(1, round(ttl.total_seconds() * 1000))


# Not shared: only ints pass (no digit text, unlike SQL and Cassandra) and the error names Neo4j.
def check_position(position: Position) -> int:
    """Return a position this repository handed out, or raise.

    Raises:
        ConfigurationError: If it is not an integer (positions here are integers).
    """
    if isinstance(position, bool) or not isinstance(position, int):
        raise ConfigurationError(
            f"Neo4j positions are integers returned by this repository, got {position!r}"
        )
    return position


def message_params(message: Message) -> dict[str, Any]:
    """Return the parameter map that the append statements turn into a ``Message`` node."""
    kind = MessageType(message.type)
    return {
        "id": message.id,
        "type": kind.value,
        # An event has none, which keeps it out of the window index (see _cypher).
        "is_system": None if kind is MessageType.EVENT else kind is MessageType.SYSTEM,
        "created_at": epoch_micros(message.created_at),
        # Stored case-folded so `CONTAINS` matches exactly what searchable_text() promises.
        "search_text": searchable_text(message).casefold(),
        "data": encode_message(message),
    }


def stored_messages(
    conversation_id: str, rows: Iterable[Sequence[Any]], *, reverse: bool = False
) -> list[StoredMessage]:
    """Decode ``(position, data)`` rows into stored messages.

    Raises:
        MessageDecodeError: If a record does not decode; the message names the conversation.
    """
    found = [
        StoredMessage(position, decode_message(data, conversation_id=conversation_id))
        for position, data in rows
    ]
    if reverse:
        found.reverse()
    return found


def document_rows(
    documents: Sequence[VectorDocument], vectors: Sequence[list[float]]
) -> list[dict[str, Any]]:
    """Return the ``rows`` parameter of the upsert statement.

    Args:
        documents: The documents.
        vectors: Their embeddings, in order.
    """
    rows = []
    for document, vector in zip(documents, vectors, strict=True):
        props: dict[str, Any] = {
            "id": document.id,
            "text": document.text,
            "metadata": json.dumps(document.metadata, ensure_ascii=False),
            "embedding": vector,
        }
        props.update({f"meta_{k}": v for k, v in document.filterable().items()})
        rows.append({"id": document.id, "props": props})
    return rows
