"""Key layout, the Redis repository's schema: nothing is created ahead, keys appear on write.

Every key of one conversation starts with the hash tag ``{<prefix>:<escaped id>}``, so a
conversation lives in one Redis Cluster slot and a Lua script may touch all of it. The
conversation id is escaped (``%``, ``{``, ``}`` and control characters as ``%XX``) so no id
can close the hash tag early or collide with another id's keys. Keys that span
conversations share the tag ``{<prefix>}``.

The prefix holds no ``:``, so the first ``:`` in a hash tag ends it: no two (prefix, id)
pairs share a key. (With ``app:tenant2`` allowed, conversation ``chat`` under it and
conversation ``tenant2:chat`` under ``app`` would both be ``{app:tenant2:chat}``.)
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from chatmem.exceptions import ConfigurationError

__all__ = [
    "CONVERSATION_KEY_NAMES",
    "KeyLayout",
    "check_key_prefix",
    "escape_key_part",
    "expiry_member",
]

CONVERSATION_KEY_NAMES: tuple[str, ...] = (
    "meta",  # hash: seq (the position counter)
    "msgs",  # hash: position -> encoded message JSON
    "ids",  # hash: message id -> position (idempotency; survives delete_before)
    "log",  # sorted set: every position, scored by position
    "chat",  # sorted set: user, assistant and tool positions (windowed reads)
    "time",  # sorted set: positions scored by created_at in microseconds
    "facets",  # hash: position -> "type<TAB>created_us<TAB>casefolded searchable text"
    "type:system",  # sorted sets of positions, one per message type
    "type:user",
    "type:assistant",
    "type:tool",
    "type:event",  # written only once the conversation holds an event
)
"""Suffixes of one conversation's keys, in the order the Lua scripts expect them."""


def escape_key_part(text: str) -> str:
    """Percent-escape what could break a key: ``%``, braces and control characters."""
    out = []
    for char in text:
        if char in "%{}" or ord(char) < 32 or ord(char) == 127:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
        else:
            out.append(char)
    return "".join(out)


def check_key_prefix(prefix: str) -> str:
    """Return ``prefix`` if it names a namespace of its own, else raise.

    Raises:
        ConfigurationError: If it is empty or holds ``:``, a brace or a control character.
    """
    if not isinstance(prefix, str) or not prefix:
        raise ConfigurationError(f"key_prefix must be a non-empty string, got {prefix!r}")
    if ":" in prefix:
        suggestion = prefix.replace(":", ".")
        raise ConfigurationError(
            f"key_prefix must not contain ':' (the separator between the prefix and a "
            f"conversation id, so 'app:tenant2' + 'chat' and 'app' + 'tenant2:chat' would be "
            f"the same keys), got {prefix!r} (did you mean {suggestion!r}?)"
        )
    if any(c in "{}" or ord(c) < 32 or ord(c) == 127 for c in prefix):
        raise ConfigurationError(
            f"key_prefix must not contain braces or control characters, got {prefix!r}"
        )
    return prefix


def expiry_member(conversation_id: str, owner: str | None) -> str:
    """Member of the expiry index: escaped owner, newline, id (ids have no newlines)."""
    return f"{escape_key_part(owner) if owner is not None else ''}\n{conversation_id}"


@dataclass(frozen=True)
class KeyLayout:
    """Names of every key the repository uses under one prefix.

    Attributes:
        prefix: The key prefix; no braces (they would disturb the hash tags) and no ``:``
            (the separator after it).
        buckets: 0 for a single Redis server (one index under ``{<prefix>}``); on Redis
            Cluster, how many index buckets (hash-tag groups) the conversations are spread over.
    """

    prefix: str
    buckets: int = 0

    def __post_init__(self) -> None:
        check_key_prefix(self.prefix)
        if not isinstance(self.buckets, int) or not 0 <= self.buckets <= 16384:
            raise ConfigurationError(
                f"cluster_buckets must be an integer from 1 to 16384, got {self.buckets!r}"
            )

    @property
    def clustered(self) -> bool:
        """Whether this is the Redis Cluster layout (index split into buckets)."""
        return self.buckets > 0

    def bucket_of(self, conversation_id: str) -> int | None:
        """The index bucket of a conversation (``None`` on a single server)."""
        if not self.buckets:
            return None
        return zlib.crc32(conversation_id.encode("utf-8")) % self.buckets

    def all_buckets(self) -> list[int | None]:
        """Every index bucket, in order (``[None]`` on a single server: the one index)."""
        return list(range(self.buckets)) if self.buckets else [None]

    def index_tag(self, bucket: int | None) -> str:
        """The hash tag of one bucket's index keys (``{<prefix>}`` on a single server)."""
        return f"{{{self.prefix}}}" if bucket is None else f"{{{self.prefix}:{bucket}}}"

    def conversations_in(self, bucket: int | None) -> str:
        """One bucket's sorted set of live conversation ids (scores 0, id order)."""
        return f"{self.index_tag(bucket)}:conversations"

    def expiry_in(self, bucket: int | None) -> str:
        """One bucket's sorted set of expiring conversations, scored by expiry time (ms)."""
        return f"{self.index_tag(bucket)}:expiry"

    def owner_prefix_in(self, bucket: int | None) -> str:
        """Start of one bucket's per-owner index keys; the escaped owner follows."""
        return f"{self.index_tag(bucket)}:owner:"

    def owner_in(self, owner: str | None, bucket: int | None) -> str:
        """One bucket's sorted set of one owner's conversation ids."""
        return self.owner_prefix_in(bucket) + (escape_key_part(owner) if owner is not None else "")

    def index_keys(self, conversation_id: str, owner: str | None) -> list[str]:
        """The index keys a conversation's writes update: conversations, expiry, owner."""
        bucket = self.bucket_of(conversation_id)
        return [
            self.conversations_in(bucket),
            self.expiry_in(bucket),
            self.owner_in(owner, bucket),
        ]

    @property
    def conversations(self) -> str:
        """Sorted set of live conversation ids (all scores 0: listed in id order).

        On a single server; on Redis Cluster see :meth:`conversations_in`.
        """
        return self.conversations_in(None)

    @property
    def expiry(self) -> str:
        """Sorted set of expiring conversations, scored by expiry time in milliseconds."""
        return self.expiry_in(None)

    @property
    def owner_prefix(self) -> str:
        """Start of every per-owner index key; the escaped owner follows."""
        return self.owner_prefix_in(None)

    def owner(self, owner: str | None) -> str:
        """Sorted set of one owner's conversation ids (``None``: a key never written)."""
        return self.owner_in(owner, None)

    def conversation_tag(self, conversation_id: str) -> str:
        """The hash tag shared by all keys of one conversation."""
        bucket = self.bucket_of(conversation_id)
        if bucket is not None:
            return self.index_tag(bucket)
        return f"{{{self.prefix}:{escape_key_part(conversation_id)}}}"

    def conversation(self, conversation_id: str) -> list[str]:
        """The conversation's keys, in :data:`CONVERSATION_KEY_NAMES` order."""
        tag = self.conversation_tag(conversation_id)
        if self.buckets:
            # The escaped id holds no braces, so "{id}" delimits it within the bucket's slot.
            tag = f"{tag}:{{{escape_key_part(conversation_id)}}}"
        return [f"{tag}:{name}" for name in CONVERSATION_KEY_NAMES]
