"""Messages and summaries sealed with a conversation's data key (AES-256-GCM). No I/O.

A sealed message keeps in clear what the store needs to order, window and expire it: its
id, type, creation time (and an event's type); everything else (text, media, tool calls and
results, reasoning, provider items, usage, metadata, an event's payload) is one ciphertext
in the message's metadata (an event's payload), under :data:`SEALED`. The associated data
binds the ciphertext to its conversation, its message id and its type, so a record copied
into another conversation, or over another message, does not open.

A conversation's data keys are stored in the conversation itself, wrapped, as events of
type :data:`DATA_KEY_EVENT` whose id names the data key and the key-encryption key, so
storing one again is a no-op (appends skip ids already stored).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from chatmem._keys import KEY_BYTES, KeyProvider, WrappedKey
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    Message,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)

__all__ = [
    "DATA_KEY_EVENT",
    "DEFAULT_SEARCH_SCAN_LIMIT",
    "SEALED",
    "DataKey",
    "EncryptedSearchLimitError",
    "is_data_key_event",
    "new_data_key",
    "open_message",
    "open_summary",
    "read_data_key_event",
    "rewrapped",
    "seal_message",
    "seal_summary",
    "sealed_key_id",
    "summary_key_id",
]

SEALED = "chatmem.sealed"
"""The metadata (or event payload) entry that holds a sealed message's ciphertext."""
DATA_KEY_EVENT = "chatmem.data_key"
"""The event type of a stored, wrapped data key."""
DEFAULT_SEARCH_SCAN_LIMIT = 10_000
"""Messages one text search of an encrypted conversation reads at most (on the client)."""


class EncryptedSearchLimitError(ConfigurationError):
    """A text search of an encrypted conversation would read more than its bound.

    The store cannot search ciphertext, so the log reads the conversation and searches on
    the client, at most ``search_scan_limit`` messages per call. Narrow the search (``since``,
    ``until``, ``types``, ``after``) or raise the bound.
    """


_VERSION = "1"
_NONCE_BYTES = 12
_SUMMARY_PREFIX = "chatmem-sealed:"
_PLACEHOLDER = ToolResponse(id="sealed", name="sealed", response_data="")


@dataclass(frozen=True, slots=True)
class DataKey:
    """A conversation's data key, unwrapped, with the event that stores it wrapped."""

    data_key_id: str
    """Random id of the data key, named by every message it sealed."""
    raw: bytes
    """The key's bytes (kept in this process only, to wrap it anew)."""
    cipher: AESGCM
    """The AES-256-GCM cipher of the key."""
    event: EventMessage
    """The data key wrapped by a key-encryption key, as it is stored."""


def new_data_key(provider: KeyProvider) -> DataKey:
    """Make a random data key, wrapped by the provider's current key."""
    key = AESGCM.generate_key(bit_length=8 * KEY_BYTES)
    return _data_key(os.urandom(8).hex(), key, provider.wrap(key))


def rewrapped(key: bytes, data_key_id: str, provider: KeyProvider) -> DataKey:
    """The same data key wrapped by the provider's current key (a rotation)."""
    return _data_key(data_key_id, key, provider.wrap(key))


def _data_key(data_key_id: str, key: bytes, wrapped: WrappedKey) -> DataKey:
    event = EventMessage(
        id=f"chatmem-data-key-{data_key_id}-{wrapped.key_id}",
        event_type=DATA_KEY_EVENT,
        payload={
            "data_key_id": data_key_id,
            "key_id": wrapped.key_id,
            "wrapped": base64.b64encode(wrapped.wrapped).decode("ascii"),
        },
    )
    return DataKey(data_key_id, key, AESGCM(key), event)


def is_data_key_event(message: Message) -> bool:
    """Whether a stored message is a wrapped data key (which reads leave out)."""
    return isinstance(message, EventMessage) and message.event_type == DATA_KEY_EVENT


def read_data_key_event(event: EventMessage) -> tuple[str, WrappedKey]:
    """Return ``(data key id, wrapped key)`` of a data-key event.

    Raises:
        MessageDecodeError: The event does not hold a wrapped key.
    """
    payload = event.payload
    data_key_id, key_id, wrapped = (
        payload.get("data_key_id"),
        payload.get("key_id"),
        payload.get("wrapped"),
    )
    if not (isinstance(data_key_id, str) and isinstance(key_id, str) and isinstance(wrapped, str)):
        raise MessageDecodeError(f"data-key event {event.id!r} is malformed")
    try:
        raw = base64.b64decode(wrapped, validate=True)
    except (binascii.Error, ValueError):
        raise MessageDecodeError(f"data-key event {event.id!r} is malformed") from None
    return data_key_id, WrappedKey(key_id, raw)


def _associated_data(conversation_id: str, message: Message) -> bytes:
    kind = message.event_type if isinstance(message, EventMessage) else str(message.type)
    parts = ("chatmem message", _VERSION, conversation_id, message.id, kind)
    return "\0".join(parts).encode("utf-8")


def seal_message(message: Message, conversation_id: str, key: DataKey) -> Message:
    """Return the stored form of ``message``: its content one ciphertext, its id in clear."""
    nonce = os.urandom(_NONCE_BYTES)
    plain = encode_message(message).encode("utf-8")
    sealed = key.cipher.encrypt(nonce, plain, _associated_data(conversation_id, message))
    token = f"{_VERSION}.{key.data_key_id}.{base64.b64encode(nonce + sealed).decode('ascii')}"
    common = {"id": message.id, "created_at": message.created_at}
    if isinstance(message, EventMessage):
        return EventMessage(event_type=message.event_type, payload={SEALED: token}, **common)
    envelope = {SEALED: token}
    if isinstance(message, SystemMessage):
        return SystemMessage(text="", metadata=envelope, **common)
    if isinstance(message, UserMessage):
        return UserMessage(text="", metadata=envelope, **common)
    if isinstance(message, AssistantMessage):
        return AssistantMessage(text="", metadata=envelope, **common)
    return ToolResponseMessage(responses=[_PLACEHOLDER], metadata=envelope, **common)


def _token(message: Message) -> str | None:
    holder = message.payload if isinstance(message, EventMessage) else message.metadata
    token = holder.get(SEALED)
    return token if isinstance(token, str) else None


def sealed_key_id(message: Message) -> str | None:
    """The data key id a stored message was sealed with; ``None`` if it is in clear."""
    token = _token(message)
    if token is None:
        return None
    version, _, rest = token.partition(".")
    data_key_id, dot, _ = rest.partition(".")
    return data_key_id if version == _VERSION and dot else ""


def open_message(message: Message, conversation_id: str, cipher: AESGCM) -> Message:
    """Return the message a sealed stored message holds.

    Raises:
        MessageDecodeError: The ciphertext does not open: altered, or copied from another
            conversation or message.
    """
    token = _token(message)
    assert token is not None  # the caller found its key id
    _, _, rest = token.partition(".")
    _, _, encoded = rest.partition(".")
    try:
        raw = base64.b64decode(encoded, validate=True)
        plain = cipher.decrypt(
            raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _associated_data(conversation_id, message)
        )
    except (binascii.Error, ValueError, InvalidTag):
        raise MessageDecodeError(
            f"sealed message {message.id!r} of conversation {conversation_id!r} does not "
            "open: it was altered, or copied from another conversation or message",
            conversation_id=conversation_id,
        ) from None
    opened = decode_message(plain, conversation_id=conversation_id)
    if opened.id != message.id or opened.type != message.type:
        raise MessageDecodeError(
            f"sealed message {message.id!r} holds another message",
            conversation_id=conversation_id,
        )
    return opened


def seal_summary(text: str, conversation_id: str, key: DataKey) -> str:
    """Return the stored form of a conversation's summary."""
    nonce = os.urandom(_NONCE_BYTES)
    sealed = key.cipher.encrypt(nonce, text.encode("utf-8"), _summary_data(conversation_id))
    encoded = base64.b64encode(nonce + sealed).decode("ascii")
    return f"{_SUMMARY_PREFIX}{_VERSION}.{key.data_key_id}.{encoded}"


def summary_key_id(stored: str) -> str | None:
    """The data key id a stored summary was sealed with; ``None`` if it is in clear."""
    if not stored.startswith(_SUMMARY_PREFIX):
        return None
    _, _, rest = stored[len(_SUMMARY_PREFIX) :].partition(".")
    return rest.partition(".")[0]


def open_summary(stored: str, conversation_id: str, cipher: AESGCM) -> str:
    """Return the summary a sealed stored summary holds.

    Raises:
        MessageDecodeError: The ciphertext does not open.
    """
    encoded = stored.rpartition(".")[2]
    try:
        raw = base64.b64decode(encoded, validate=True)
        nonce, sealed = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
        plain = cipher.decrypt(nonce, sealed, _summary_data(conversation_id))
    except (binascii.Error, ValueError, InvalidTag):
        raise MessageDecodeError(
            f"the sealed summary of conversation {conversation_id!r} does not open",
            conversation_id=conversation_id,
        ) from None
    return plain.decode("utf-8")


def _summary_data(conversation_id: str) -> bytes:
    return "\0".join(("chatmem summary", _VERSION, conversation_id)).encode("utf-8")
