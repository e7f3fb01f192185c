"""Row building and decoding shared by both twins (no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatmem._records import StoredMessage
from chatmem.messages import Message, SystemMessage, decode_message, encode_message
from chatmem_repositories.cassandra._positions import CLAIM_POSITION
from chatmem_repositories.cassandra._schema import CHAT, CLAIMS, SYSTEM

__all__ = ["MAX_LIMIT", "message_rows", "section_of", "stored", "unique_by_id"]

MAX_LIMIT = 2**31 - 1
"""Largest LIMIT CQL accepts."""

Item = tuple[str, Sequence[Any]]


def section_of(message: Message) -> str:
    """Return the section a message is stored in."""
    return SYSTEM if isinstance(message, SystemMessage) else CHAT


def unique_by_id(messages: Sequence[Message]) -> list[Message]:
    """Drop repeats of a message id within one call, keeping the first."""
    seen: set[str] = set()
    unique = []
    for message in messages:
        if message.id not in seen:
            seen.add(message.id)
            unique.append(message)
    return unique


def message_rows(
    conversation_id: str,
    owner: str | None,
    messages: Sequence[Message],
    first: int,
    expected: int | None,
    *,
    replace: bool = False,
) -> list[Item]:
    """Return the statements that store messages at ``first``, ``first + 1``, and so on.

    They claim the ids, write the rows and the static columns (at least ``touched``) and
    set the counter to the position after the last message. For an append, only if the
    counter still is ``expected`` and no id is claimed yet. With ``replace`` (``save_all``,
    whose batch also clears the partition) the claims are plain and the counter is set
    whatever it was. Either way the batch is conditional, so Paxos orders it. The caller
    adds the liveness cell when the repository has a TTL.
    """
    claim = "claim_plain" if replace else "claim"
    positions = range(first, first + len(messages))
    items: list[Item] = []
    system: tuple[int, str] | None = None
    for message, position in zip(messages, positions, strict=True):
        data = encode_message(message)
        items.append((claim, (conversation_id, CLAIMS, CLAIM_POSITION, message.id, position)))
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
    if system is not None:
        items.append(("system", (owner, system[0], system[1], conversation_id)))
    elif owner is not None:
        items.append(("owner", (owner, conversation_id)))
    else:
        items.append(("touch", (conversation_id,)))
    after = first + len(messages)
    if replace:
        items.append(("restart", (after, conversation_id)))
    else:
        items.append(("advance", (after, conversation_id, expected)))
    return items


def stored(conversation_id: str, position: int, data: str | None) -> StoredMessage:
    """Decode one stored row; a corrupt record raises ``MessageDecodeError``."""
    return StoredMessage(position, decode_message(data or "", conversation_id=conversation_id))
