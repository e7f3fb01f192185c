"""What session reads return, and the events chatmem's own session operations store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from chatmem._records import Position, StoredMessage
from chatmem.exceptions import MessageDecodeError
from chatmem.messages import EventMessage, decode_message

__all__ = [
    "FORKED_EVENT",
    "FORK_EVENT",
    "REWIND_EVENT",
    "REWOUND_EVENT",
    "Fork",
    "SessionHistory",
    "SessionWindow",
    "fork_of",
    "merged_by_position",
    "rewound_message",
]

FORK_EVENT = "chatmem.fork"
"""The first entry of a fork: ``{"parent": id, "at": position, "carried": count}``."""
FORKED_EVENT = "chatmem.forked"
"""Stored in a parent for each fork: ``{"fork": id, "at": position}``."""
REWIND_EVENT = "chatmem.rewind"
"""Records a rewind: ``{"to": position, "count": messages taken back}``."""
REWOUND_EVENT = "chatmem.rewound"
"""A message a rewind took back: ``{"position": old position, "message": its JSON}``."""


@dataclass(frozen=True, slots=True)
class SessionWindow:
    """A conversation's system message and newest chat messages, with its version."""

    system: StoredMessage | None
    """The current system message, or ``None``."""
    messages: list[StoredMessage]
    """The newest user, assistant and tool messages, oldest first."""
    version: int
    """The version read before the messages: pass it as ``expected_version``."""


@dataclass(frozen=True, slots=True)
class SessionHistory:
    """A page of a conversation's history, with its version."""

    entries: list[StoredMessage]
    """Messages and events, oldest first."""
    version: int
    """The version read before the entries: pass it as ``expected_version``."""


@dataclass(frozen=True, slots=True)
class Fork:
    """A conversation started from a point of another."""

    conversation_id: str
    """The fork."""
    parent_id: str
    """The conversation it was forked from (which may since have been deleted)."""
    at: Position | None
    """The last parent position the fork holds; ``None`` if the parent was empty."""
    created_at: datetime
    """When it was forked."""


def fork_of(conversation_id: str, first: StoredMessage) -> Fork | None:
    """The fork a conversation's first event describes, or ``None`` if it is not one."""
    event = first.message
    if not isinstance(event, EventMessage) or event.event_type != FORK_EVENT:
        return None
    parent = event.payload.get("parent")
    at = event.payload.get("at")
    if not isinstance(parent, str) or not (at is None or isinstance(at, int | str)):
        return None
    return Fork(conversation_id, parent, at, event.created_at)


def merged_by_position(
    system: StoredMessage | None, chat: list[StoredMessage]
) -> list[StoredMessage]:
    """``chat`` with ``system`` placed where its position puts it."""
    if system is None:
        return chat
    before = [s for s in chat if s.position < system.position]  # type: ignore[operator]
    return [*before, system, *chat[len(before) :]]


def rewound_message(entry: StoredMessage) -> StoredMessage | None:
    """Return the message a ``chatmem.rewound`` event holds, at its old position.

    Args:
        entry: An entry of a conversation's history.

    Returns:
        The message a rewind took back, or ``None`` if ``entry`` is not such an event.

    Raises:
        MessageDecodeError: The event does not hold a message.
    """
    event = entry.message
    if not isinstance(event, EventMessage) or event.event_type != REWOUND_EVENT:
        return None
    position = event.payload.get("position")
    data = event.payload.get("message")
    if not isinstance(position, int | str) or not isinstance(data, dict):
        raise MessageDecodeError(f"rewound event {event.id!r} does not hold a message")
    return StoredMessage(position, decode_message(json.dumps(data)))
