"""Helpers shared by repository implementations (no I/O)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, MessageType, searchable_text

__all__ = [
    "MAX_LIMIT",
    "check_limit",
    "escape_like",
    "matches_history_filters",
    "normalize_ttl",
]


MAX_LIMIT = 1_000_000_000
"""Largest page size accepted. Stores take 32- or 64-bit limits and some backends ask for
one row more than the page to see whether another follows; a billion fits every one."""


def check_limit(limit: int) -> int:
    """Reject a negative, non-integer or too large page size before it reaches a store.

    Raises:
        ConfigurationError: If ``limit`` is not an integer from 0 to :data:`MAX_LIMIT`.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_LIMIT:
        raise ConfigurationError(f"limit must be an integer from 0 to {MAX_LIMIT:_}, got {limit!r}")
    return limit


def normalize_ttl(ttl: timedelta | float | int | None) -> timedelta | None:
    """Accept a timedelta or seconds; reject zero and negative values."""
    if ttl is None:
        return None
    value = ttl if isinstance(ttl, timedelta) else timedelta(seconds=ttl)
    if value <= timedelta(0):
        raise ConfigurationError(f"ttl must be positive, got {ttl!r}")
    return value


def matches_history_filters(
    message: Message,
    since: datetime | None,
    until: datetime | None,
    types: Collection[MessageType] | None,
    text: str | None,
) -> bool:
    """Apply find_history's filters to one message, as every backend must."""
    if since is not None and message.created_at < since:
        return False
    if until is not None and message.created_at >= until:
        return False
    if types is not None and message.type not in types:
        return False
    return text is None or text.casefold() in searchable_text(message).casefold()


def escape_like(text: str, escape: str = "\\") -> str:
    """Escape LIKE wildcards so user text matches literally (use with ``ESCAPE``)."""
    return (
        text.replace(escape, escape + escape).replace("%", escape + "%").replace("_", escape + "_")
    )
