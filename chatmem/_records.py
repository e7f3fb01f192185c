"""Plain data that repositories return: stored messages, positions and pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from chatmem.messages import Message

__all__ = ["ConversationPage", "Position", "StoredMessage"]

Position: TypeAlias = int | str
"""Where a message sits in its conversation's log, assigned by the repository.

Opaque to callers: an integer, a TIMEUUID or a stream id. Positions are unique within a
conversation and increase in the order the repository accepted the messages; they never come
from the client's clock. Pass one back as ``before=`` or ``after=`` to page.
"""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message together with the position its repository assigned to it."""

    position: Position
    """The repository-assigned position."""
    message: Message
    """The message, exactly as appended."""


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """One page of conversation ids.

    Pass ``next_cursor`` back to get the following page; it is ``None`` on the last page.
    """

    conversation_ids: list[str]
    """The ids on this page."""
    next_cursor: str | None
    """Opaque cursor of the next page, or ``None`` if this is the last."""
