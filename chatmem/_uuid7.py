"""UUID version 7 strings (RFC 9562), monotonic within one process."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_time_ns = time.time_ns
_last_ms = 0
_last_counter = 0
_prefix = ""
# Random hex digits from os.urandom, fetched 4 KiB at a time: one system call per 431 ids.
_POOL_BYTES = 4096
_pool = ""
_pool_at = 0
# Each id takes 19 random digits: the variant digit, 15 random digits and, when a new
# millisecond starts, the counter's random start. Formatting is table lookups and slices.
_COUNTERS = tuple(f"{n:03x}" for n in range(0x1000))
_VARIANT = {f"{n:x}": f"{0x8 | (n & 0x3):x}" for n in range(16)}


def _drop_pool() -> None:
    # A forked child must not reuse the random digits its parent will use too.
    global _pool, _pool_at
    _pool, _pool_at = "", 0


os.register_at_fork(after_in_child=_drop_pool)


def uuid7() -> str:
    """Return a new UUIDv7 as a canonical lowercase string.

    The 48-bit millisecond timestamp is followed by a 12-bit counter (RFC 9562 method 1),
    so ids made in the same millisecond by this process still sort in creation order.
    """
    global _last_ms, _last_counter, _prefix, _pool, _pool_at
    now = _time_ns() // 1_000_000
    with _lock:
        at = _pool_at
        if at + 19 > len(_pool):
            _pool, at = os.urandom(_POOL_BYTES).hex(), 0
        _pool_at = at + 19
        random = _pool[at : at + 19]
        if now > _last_ms:
            # A new millisecond: the counter restarts at a random value below 512.
            _last_ms = now
            _last_counter = counter = int(random[16:], 16) & 0x1FF
            ms = f"{now:012x}"
            _prefix = prefix = f"{ms[:8]}-{ms[8:]}-7"
        else:
            counter = _last_counter + 1
            if counter > 0xFFF:
                # Counter exhausted: borrow the next millisecond rather than break order.
                _last_ms += 1
                counter = 0
                ms = f"{_last_ms:012x}"
                _prefix = f"{ms[:8]}-{ms[8:]}-7"
            _last_counter = counter
            prefix = _prefix
    return f"{prefix}{_COUNTERS[counter]}-{_VARIANT[random[0]]}{random[1:4]}-{random[4:16]}"
