"""Plain data that repositories return: stored messages, positions and pages."""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(frozen=True, slots=True, init=False)
class StoredMessage:
    """A message together with the position its repository assigned to it."""

    position: Position
    """The repository-assigned position."""
    message: Message
    """The message, exactly as appended."""

    def __init__(self, position: Position, message: Message) -> None:
        # Repositories make one per row read: the slots are set through their descriptors,
        # which a frozen dataclass's generated __init__ reaches through object.__setattr__.
        _set_position(self, position)
        _set_message(self, message)


_set_position: Callable[[StoredMessage, Position], None] = vars(StoredMessage)["position"].__set__
_set_message: Callable[[StoredMessage, Message], None] = vars(StoredMessage)["message"].__set__


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """One page of conversation ids.

    Pass ``next_cursor`` back to get the following page; it is ``None`` on the last page.
    """

    conversation_ids: list[str]
    """The ids on this page."""
    next_cursor: str | None
    """Opaque cursor of the next page, or ``None`` if this is the last."""
