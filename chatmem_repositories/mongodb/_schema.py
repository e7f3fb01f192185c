"""The indexes of the MongoDB repository's collections (no I/O).

The repository creates the missing ones on first use when ``initialize_schema="always"``,
one at a time (see ``_async/repository.py``); the expiry index is made by ``_async/expiry.py``
because it depends on the server (a TTL index where there is one).
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

__all__ = ["CONVERSATION_INDEXES", "MESSAGE_INDEXES", "SUMMARY_INDEXES", "missing"]

MESSAGE_INDEXES = [
    # Serves windows (backwards), history pages (forwards), delete_before, and reserves
    # nothing twice: positions are unique per conversation.
    IndexModel(
        [("conversation_id", ASCENDING), ("position", ASCENDING)],
        unique=True,
        name="conversation_position",
    ),
    # Idempotency: a message id is stored at most once per conversation.
    IndexModel(
        [("conversation_id", ASCENDING), ("message_id", ASCENDING)],
        unique=True,
        name="conversation_message_id",
    ),
    # find_latest(type) and type-filtered history without walking other types.
    IndexModel(
        [("conversation_id", ASCENDING), ("type", ASCENDING), ("position", ASCENDING)],
        name="conversation_type_position",
    ),
]
"""Indexes of the messages collection."""

CONVERSATION_INDEXES = [
    IndexModel([("owner", ASCENDING), ("_id", ASCENDING)], name="owner_id"),
]
"""Indexes of the conversations collection (the expiry index is made separately)."""


SUMMARY_INDEXES = [
    # The version-checked write: of two writers inserting the same next version of one
    # conversation's summary (in one life), exactly one succeeds.
    IndexModel(
        [("conversation_id", ASCENDING), ("gen", ASCENDING), ("version", ASCENDING)],
        unique=True,
        name="conversation_gen_version",
    ),
]
"""Indexes of the summaries collection."""


def missing(existing: set[str], indexes: list[IndexModel]) -> list[IndexModel]:
    """The indexes whose names are not among ``existing``, in order."""
    return [index for index in indexes if index.document["name"] not in existing]
