"""Conversation ids: validation and owner scoping.

Every repository and memory validates conversation ids with :func:`validate_conversation_id`
before any I/O, and every backend passes them to its store as bound parameters only.

Apps serving several users should derive conversation ids on the server with
:func:`scoped_conversation_id`, so one user can never name another user's conversation;
repositories record the owner of such ids and can list conversations of one owner only.

Example:
    >>> cid = scoped_conversation_id("alice@example.com", "support:42")
    >>> cid
    'alice@example.com:support%3A42'
    >>> owner_of(cid)
    'alice@example.com'
    >>> split_conversation_id(cid)
    ('alice@example.com', 'support:42')
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote, unquote

from chatmem.exceptions import InvalidConversationIdError

__all__ = [
    "MAX_CONVERSATION_ID_LENGTH",
    "owner_of",
    "scoped_conversation_id",
    "split_conversation_id",
    "validate_conversation_id",
]

MAX_CONVERSATION_ID_LENGTH = 512
"""Longest accepted conversation id, in characters (fits a MySQL utf8mb4 index key)."""

_SEPARATOR = ":"

_last_valid: object = object()  # the last id that passed; never None, never a non-string


def validate_conversation_id(conversation_id: object) -> str:
    """Check a conversation id and return it unchanged.

    Args:
        conversation_id: The value to check.

    Returns:
        The conversation id, exactly as given.

    Raises:
        InvalidConversationIdError: If it is not a string, is empty, is longer than
            :data:`MAX_CONVERSATION_ID_LENGTH`, or contains a control character or a lone
            surrogate (which no store can encode).
    """
    global _last_valid
    if conversation_id is _last_valid and isinstance(conversation_id, str):
        # The very string object checked last: a request passes its id from the advisor to
        # the memory to the repository, and each checks it; only the first pays.
        return conversation_id
    if not isinstance(conversation_id, str):
        raise InvalidConversationIdError(
            f"conversation id must be a string, got {type(conversation_id).__name__}"
        )
    if not conversation_id:
        raise InvalidConversationIdError("conversation id must not be empty")
    if len(conversation_id) > MAX_CONVERSATION_ID_LENGTH:
        raise InvalidConversationIdError(
            f"conversation id is {len(conversation_id)} characters long; "
            f"the limit is {MAX_CONVERSATION_ID_LENGTH}"
        )
    if not conversation_id.isprintable():  # printable text has no Cc or Cs character
        for index, char in enumerate(conversation_id):
            if unicodedata.category(char) in ("Cc", "Cs"):
                raise InvalidConversationIdError(
                    f"conversation id contains control character U+{ord(char):04X} at index {index}"
                )
    if type(conversation_id) is str:  # immutable, so a later identical object stays valid
        _last_valid = conversation_id
    return conversation_id


def _encode_part(part: str, what: str) -> str:
    if not isinstance(part, str) or not part:
        raise InvalidConversationIdError(f"{what} must be a non-empty string")
    # Escape only '%' and ':' so the separator is unambiguous and ids stay readable.
    return quote(part, safe="".join(c for c in map(chr, range(32, 127)) if c not in "%:"))


def scoped_conversation_id(owner: str, conversation: str) -> str:
    """Build a conversation id that belongs to one owner.

    The owner and the conversation name are joined with ``:`` after escaping ``%`` and ``:``
    in each part, so the encoding is unambiguous: no two (owner, conversation) pairs give
    the same id, and :func:`owner_of` recovers the owner.

    Args:
        owner: The owner, typically an authenticated user or tenant id.
        conversation: The conversation name within that owner.

    Returns:
        The validated, scoped conversation id.

    Raises:
        InvalidConversationIdError: If a part is empty or the result is not a valid id.
    """
    scoped = _encode_part(owner, "owner") + _SEPARATOR + _encode_part(conversation, "conversation")
    return validate_conversation_id(scoped)


def split_conversation_id(conversation_id: str) -> tuple[str | None, str]:
    """Split a conversation id into (owner, conversation).

    Args:
        conversation_id: Any conversation id.

    Returns:
        ``(owner, conversation)`` for an id made by :func:`scoped_conversation_id`, or
        ``(None, conversation_id)`` for an id without an owner.
    """
    owner, sep, rest = conversation_id.partition(_SEPARATOR)
    if not sep or not owner or not rest or _SEPARATOR in rest:
        return None, conversation_id
    return unquote(owner), unquote(rest)


def owner_of(conversation_id: str) -> str | None:
    """Return the owner encoded in a conversation id, or ``None`` if it has none.

    Args:
        conversation_id: Any conversation id.
    """
    return split_conversation_id(conversation_id)[0]
