"""Summaries as a log of versions: each write inserts the next one, a unique index decides.

A filtered ``update_one`` is not a compare-and-set on FerretDB 1.x (two writers filtering
on the same version both succeed), so the write is an insert of ``(conversation_id, gen,
version + 1)`` under a unique index: exactly one writer of a version wins, on any server.
Older versions stay as small tombstones (their text is emptied) so the versions stay
contiguous: a writer holding a stale version always collides with a stored one. A summary
is neither read nor written while its conversation is expired, and the append that starts
a new life (or a ``save_all``) deletes it first (``AsyncExpiry.clear_previous_life``), so
the new life starts again at version 1. ``gen`` is part of the key for conversations
whose document a purge removed under live messages.
"""

from __future__ import annotations

from typing import Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from chatmem.backend import Position
from chatmem.repository import ConversationSummary

from .._drivers import AsyncCollection
from .expiry import AsyncExpiry

__all__ = ["AsyncSummaries"]


class AsyncSummaries:
    """Reads and version-checked writes of the summaries collection."""

    def __init__(self, collection: AsyncCollection, expiry: AsyncExpiry) -> None:
        self._collection = collection
        self._expiry = expiry

    async def _life(self, conversation_id: str) -> tuple[bool, Any]:
        """Return whether the conversation is live and its ``gen`` (None without a TTL)."""
        scope = await self._expiry.scope(conversation_id)
        if scope is None:
            return False, None
        return True, scope.get("gen")

    async def find(self, conversation_id: str) -> ConversationSummary | None:
        """Return the live conversation's newest summary, or ``None``."""
        live, gen = await self._life(conversation_id)
        if not live:
            return None
        document = await self._collection.find_one(
            {"conversation_id": conversation_id, "gen": gen}, sort=[("version", DESCENDING)]
        )
        if document is None:
            return None
        return ConversationSummary(document["text"], document["covers"], document["version"])

    async def save(
        self, conversation_id: str, text: str, covers: Position, expected_version: int
    ) -> bool:
        """Insert version ``expected_version + 1``; False if it exists or the expected does not."""
        live, gen = await self._life(conversation_id)
        if not live:
            return False  # an expired conversation's summary would outlive it
        key = {"conversation_id": conversation_id, "gen": gen}
        if (
            expected_version > 0
            and await self._collection.find_one(
                {**key, "version": expected_version}, projection={"_id": 1}
            )
            is None
        ):
            return False
        try:
            await self._collection.insert_one(
                {**key, "version": expected_version + 1, "text": text, "covers": covers}
            )
        except DuplicateKeyError:
            return False
        # Tombstones: what only the newest version needs goes from the older ones.
        await self._collection.update_many(
            {**key, "version": {"$lte": expected_version}, "text": {"$ne": ""}},
            {"$set": {"text": ""}},
        )
        return True

    async def delete(self, conversation_id: str) -> None:
        """Delete every version of the conversation's summary."""
        await self._collection.delete_many({"conversation_id": conversation_id})
