"""Positions, listing buckets and cursors (no I/O).

Positions are TIMEUUIDs made in this process. Cassandra orders TIMEUUIDs by their
timestamp, so a per-process monotonic clock with 100 ns ticks keeps the positions of one
process strictly increasing, even for many messages appended in the same millisecond.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import threading
import time
import uuid
import zlib

from chatmem._records import Position
from chatmem.exceptions import ConfigurationError

__all__ = [
    "CLAIM_POSITION",
    "decode_cursor",
    "encode_cursor",
    "listing_bucket",
    "new_positions",
    "parse_position",
    "position_key",
]

# 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000

CLAIM_POSITION = uuid.UUID("00000000-0000-1000-8000-000000000000")
"""The fixed clustering position of id-claim rows (the oldest possible TIMEUUID)."""

_lock = threading.Lock()
_last_ticks = 0
# A random node with the multicast bit set, as RFC 4122 asks of nodes that are not MACs.
_node = secrets.randbits(48) | 0x010000000000
_clock_seq = secrets.randbits(14)


def new_positions(count: int) -> list[uuid.UUID]:
    """Return ``count`` new TIMEUUIDs, strictly increasing within this process."""
    global _last_ticks
    with _lock:
        now = time.time_ns() // 100 + _UUID_EPOCH_OFFSET
        first = max(now, _last_ticks + 1)
        _last_ticks = first + count - 1
    return [_timeuuid(first + i) for i in range(count)]


def _timeuuid(ticks: int) -> uuid.UUID:
    return uuid.UUID(
        fields=(
            ticks & 0xFFFFFFFF,
            (ticks >> 32) & 0xFFFF,
            ((ticks >> 48) & 0x0FFF) | 0x1000,
            ((_clock_seq >> 8) & 0x3F) | 0x80,
            _clock_seq & 0xFF,
            _node,
        )
    )


def parse_position(position: Position) -> uuid.UUID:
    """Turn a position previously returned (a TIMEUUID string) back into a UUID.

    Raises:
        ConfigurationError: If it is not a version 1 UUID.
    """
    try:
        parsed = uuid.UUID(str(position))
    except ValueError:
        parsed = None
    if parsed is None or parsed.version != 1:
        raise ConfigurationError(f"not a position of the cassandra repository: {position!r}")
    return parsed


def position_key(position: uuid.UUID) -> tuple[int, bytes]:
    """Sort key that matches Cassandra's TIMEUUID order closely enough to merge slices."""
    return position.time, position.bytes


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
