"""UUID version 7 strings (RFC 9562), monotonic within one process."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_last_counter = 0


def uuid7() -> str:
    """Return a new UUIDv7 as a canonical lowercase string.

    The 48-bit millisecond timestamp is followed by a 12-bit counter (RFC 9562 method 1),
    so ids made in the same millisecond by this process still sort in creation order.
    """
    global _last_ms, _last_counter
    with _lock:
        now = time.time_ns() // 1_000_000
        if now > _last_ms:
            _last_ms = now
            _last_counter = int.from_bytes(os.urandom(2), "big") & 0x1FF
        else:
            _last_counter += 1
            if _last_counter > 0xFFF:
                # Counter exhausted: borrow the next millisecond rather than break order.
                _last_ms += 1
                _last_counter = 0
        ms, counter = _last_ms, _last_counter
    rand = int.from_bytes(os.urandom(8), "big") & 0x3FFF_FFFF_FFFF_FFFF
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
