"""Sessions: a conversation as an append-only log of messages and events, sync and async.

:class:`AsyncSessions` / :class:`Sessions` add to any session log (every built-in backend,
see :class:`~chatmem.repository.AsyncSessionLog`) what Spring AI's Session API and the agent
SDKs' sessions offer: reads that return the conversation's version and appends checked
against it (:class:`~chatmem.exceptions.VersionConflictError`), an application's own events
(:class:`~chatmem.messages.EventMessage`), forks and rewinds.
"""

from __future__ import annotations

from chatmem._async.sessions import AsyncSessions
from chatmem._sessions import (
    FORK_EVENT,
    FORKED_EVENT,
    REWIND_EVENT,
    REWOUND_EVENT,
    Fork,
    SessionHistory,
    SessionWindow,
    rewound_message,
)
from chatmem._sync.sessions import Sessions

__all__ = [
    "FORKED_EVENT",
    "FORK_EVENT",
    "REWIND_EVENT",
    "REWOUND_EVENT",
    "AsyncSessions",
    "Fork",
    "SessionHistory",
    "SessionWindow",
    "Sessions",
    "rewound_message",
]
