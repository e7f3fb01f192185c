"""UUID version 7 strings (RFC 9562), monotonic within one process."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_last_counter = 0
# Random bytes from os.urandom, fetched 4 KiB at a time: one system call per 400 ids.
_POOL_SIZE = 4096
_pool = b""
_pool_at = 0


def _drop_pool() -> None:
    # A forked child must not reuse the random bytes its parent will use too.
    global _pool, _pool_at
    _pool, _pool_at = b"", 0


os.register_at_fork(after_in_child=_drop_pool)


def uuid7() -> str:
    """Return a new UUIDv7 as a canonical lowercase string.

    The 48-bit millisecond timestamp is followed by a 12-bit counter (RFC 9562 method 1),
    so ids made in the same millisecond by this process still sort in creation order.
    """
    global _last_ms, _last_counter, _pool, _pool_at
    with _lock:
        if _pool_at + 10 > len(_pool):
            _pool, _pool_at = os.urandom(_POOL_SIZE), 0
        random = _pool[_pool_at : _pool_at + 10]
        _pool_at += 10
        now = time.time_ns() // 1_000_000
        if now > _last_ms:
            _last_ms = now
            _last_counter = int.from_bytes(random[8:], "big") & 0x1FF
        else:
            _last_counter += 1
            if _last_counter > 0xFFF:
                # Counter exhausted: borrow the next millisecond rather than break order.
                _last_ms += 1
                _last_counter = 0
        ms, counter = _last_ms, _last_counter
    rand = int.from_bytes(random[:8], "big") & 0x3FFF_FFFF_FFFF_FFFF
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
