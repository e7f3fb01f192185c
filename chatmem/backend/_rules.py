"""Argument checks, shared rules and time helpers of the backend toolkit (no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from chatmem._records import ConversationPage
from chatmem.exceptions import ConfigurationError
from chatmem.messages import Message, MessageType, searchable_text

__all__ = [
    "MAX_LIMIT",
    "Clock",
    "check_clock",
    "check_initialize_schema",
    "check_limit",
    "conversation_page",
    "epoch_micros",
    "escape_like",
    "matches_history_filters",
    "normalize_ttl",
    "unique_by_id",
    "utc_now",
]

Clock: TypeAlias = Callable[[], datetime]
"""Where a repository reads "now": a callable returning an aware UTC datetime.

Repositories that compute expiry on the client take one as ``clock=`` so tests can step
time forward instead of sleeping (see :class:`chatmem.testing.ManualClock`).
"""


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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def epoch_micros(moment: datetime) -> int:
    """Return a datetime as whole microseconds since the Unix epoch, exactly.

    A naive datetime is taken as UTC, as messages take it. Times before the epoch are
    negative; nothing is rounded (a datetime has no unit below the microsecond).

    Args:
        moment: The time to convert, naive (UTC) or aware.

    Returns:
        The number of microseconds from 1970-01-01T00:00:00Z to ``moment``.

    Example:
        ```python
        from datetime import UTC, datetime

        from chatmem.backend import epoch_micros

        assert epoch_micros(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == 1_000_005
        assert epoch_micros(datetime(1970, 1, 1, 0, 0, 1, 5)) == 1_000_005
        ```
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime: the default :data:`Clock`."""
    return datetime.now(UTC)


def check_clock(clock: Clock | None) -> Clock:
    """Return ``clock``, or :func:`utc_now` when it is ``None``.

    Args:
        clock: A callable returning aware datetimes, or ``None``.

    Raises:
        ConfigurationError: If ``clock`` is not callable.
    """
    if clock is None:
        return utc_now
    if not callable(clock):
        raise ConfigurationError(f"clock must be a callable returning a datetime, got {clock!r}")
    return clock


def unique_by_id(messages: Sequence[Message]) -> list[Message]:
    """Drop repeats of a message id within one call, keeping the first.

    Every ``append`` and ``save_all`` stores a message id at most once per conversation; a
    batch that repeats an id stores its first occurrence.

    Args:
        messages: The messages, in order.
    """
    seen: set[str] = set()
    unique = []
    for message in messages:
        if message.id not in seen:
            seen.add(message.id)
            unique.append(message)
    return unique


def conversation_page(ids: Sequence[str], limit: int) -> ConversationPage:
    """Build a page of ``list_conversations`` from ids fetched with one more than ``limit``.

    A backend asks its store for ``limit + 1`` ids in id order after the cursor; the extra
    one only tells that another page follows, whose cursor is the last id of this page.

    Args:
        ids: Conversation ids in ascending order, at most ``limit + 1`` of them.
        limit: The page size asked for.
    """
    page = list(ids[:limit])
    more = len(ids) > limit and bool(page)
    return ConversationPage(page, page[-1] if more else None)


def check_initialize_schema(initialize_schema: str) -> bool:
    """Return whether to create the schema on first use, from ``"always"`` or ``"never"``.

    Args:
        initialize_schema: ``"always"`` or ``"never"``.

    Raises:
        ConfigurationError: For any other value.
    """
    if initialize_schema not in ("always", "never"):
        raise ConfigurationError(
            f"initialize_schema must be 'always' or 'never', got {initialize_schema!r}"
        )
    return initialize_schema == "always"
