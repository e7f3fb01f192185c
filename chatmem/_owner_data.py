"""What erasing and exporting an owner's data and rotating keys report, and the export's lines.

Pure, shared by both twins: the work is in :mod:`chatmem._async.owner_data`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import TypeVar

from chatmem._records import Position
from chatmem._summaries import ConversationSummary
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, encode_message

__all__ = [
    "ErasureReport",
    "ExportReport",
    "RotationReport",
    "add_up",
    "checked_concurrency",
    "checked_owner",
    "message_line",
    "summary_line",
]


@dataclass
class ErasureReport:
    """What erasing an owner's data deleted (a run that finds nothing left reports zeros)."""

    conversations: int = 0
    """The owner's conversations deleted (those that still held something)."""
    forks: int = 0
    """Forks of them deleted that are not the owner's own conversations."""
    messages: int = 0
    """Messages and events deleted, in both."""
    summaries: int = 0
    """Summaries deleted."""
    vector_entries: int = 0
    """Vector-store entries deleted (0 without a vector store)."""


@dataclass
class ExportReport:
    """What exporting an owner's data wrote."""

    conversations: int = 0
    """The owner's conversations written (those holding something)."""
    forks: int = 0
    """Forks of them written that are not the owner's own conversations."""
    messages: int = 0
    """Message and event lines written."""
    summaries: int = 0
    """Summary lines written."""


@dataclass
class RotationReport:
    """What a key rotation did."""

    conversations: int = 0
    """Conversations visited."""
    rewrapped: int = 0
    """Data keys wrapped anew by the current key-encryption key."""


Report = TypeVar("Report", ErasureReport, ExportReport, RotationReport)


def add_up(total: Report, part: Report) -> None:
    """Add every count of ``part`` to ``total``."""
    for field in fields(total):
        setattr(total, field.name, getattr(total, field.name) + getattr(part, field.name))


def checked_concurrency(concurrency: object) -> int:
    """Return ``concurrency`` if it is a positive integer.

    Raises:
        ConfigurationError: It is not.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency must be a positive integer, got {concurrency!r}")
    return concurrency


def checked_owner(owner: object) -> str:
    """Return ``owner`` if it is a non-empty string.

    Raises:
        ConfigurationError: It is not.
    """
    if not isinstance(owner, str) or not owner:
        raise ConfigurationError(f"owner must be a non-empty string, got {owner!r}")
    return owner


def _prefix(conversation_id: str) -> str:
    return '{"conversation_id":' + json.dumps(conversation_id, ensure_ascii=False)


def message_line(conversation_id: str, position: Position, message: Message) -> str:
    """One export line: the conversation, the message's position, the message (its JSON).

    ``message`` is exactly :func:`chatmem.encode_message`'s output, as the command line's
    whole-store export writes it, so ``chatmem import`` reads these lines too.
    """
    where = json.dumps(position)
    return f'{_prefix(conversation_id)},"position":{where},"message":{encode_message(message)}}}\n'


def summary_line(conversation_id: str, summary: ConversationSummary) -> str:
    """One export line holding a conversation's summary (its text, what it covers, version)."""
    body = json.dumps(
        {"text": summary.text, "covers": summary.covers, "version": summary.version},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return f'{_prefix(conversation_id)},"summary":{body}}}\n'
