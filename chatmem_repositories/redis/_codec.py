"""Messages to script arguments and script replies to stored messages (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.backend import Position, StoredMessage, epoch_micros
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, decode_message, encode_message, searchable_text
from chatmem.repository import ConversationSummary

__all__ = [
    "append_args",
    "as_int",
    "as_text",
    "decode_summary",
    "position_arg",
    "server_product",
    "stored_from_pairs",
]


# Not shared: it returns script text and accepts whatever int() does, as it always has.
def position_arg(position: Position) -> str:
    """A caller's position as the integer text the scripts compare."""
    try:
        return str(int(position))
    except (TypeError, ValueError):
        raise ConfigurationError(f"not a position of the redis repository: {position!r}") from None


def append_args(messages: Sequence[Message]) -> list[str]:
    """Five arguments per message: id, type, created_at (µs), folded search text, JSON."""
    args: list[str] = []
    for message in messages:
        args += [
            message.id,
            message.type.value,
            str(epoch_micros(message.created_at)),
            searchable_text(message).casefold(),
            encode_message(message),
        ]
    return args


def as_int(value: bytes | str | int) -> int:
    """An integer from a Redis reply, whatever the client's ``decode_responses``."""
    return value if isinstance(value, int) else int(value)


def as_text(value: bytes | str | int) -> str:
    """Text from a Redis reply, whatever the client's ``decode_responses``."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def server_product(info: Mapping[str, Any]) -> str:
    """The product and version ``INFO server`` reports, such as ``"Redis 7.0.15"``.

    A server that names itself another way (``server_name: valkey``) is named so.
    """
    product = str(info.get("server_name") or "redis")
    version = info.get(f"{product}_version") or info.get("redis_version") or "unknown"
    return f"{'Redis' if product == 'redis' else product.capitalize()} {version}"


def stored_from_pairs(
    reply: Sequence[bytes | str | int | None], conversation_id: str
) -> list[StoredMessage]:
    """Decode a flat ``[position, body, position, body, ...]`` reply, in reply order.

    A missing body (deleted between the index read and the body read) is skipped.

    Raises:
        MessageDecodeError: If a body does not decode; it names the conversation.
    """
    return [
        StoredMessage(int(position), decode_message(body, conversation_id=conversation_id))
        for position, body in zip(reply[::2], reply[1::2], strict=False)  # pairs; no odd tail
        if position is not None and body is not None and not isinstance(body, int)
    ]


def decode_summary(reply: list[Any]) -> ConversationSummary | None:
    """The summary from ``HMGET meta summary summary_covers summary_version``, or ``None``."""
    text, covers, version = reply
    if version is None:
        return None
    return ConversationSummary(as_text(text), as_int(covers), as_int(version))
