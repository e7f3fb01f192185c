"""Expiry and the lives of a conversation, without transactions and without TTL indexes.

With a TTL, the conversation document stores the expiry and every message the expiry its
append set (see ``.._codec``). A conversation's ``gen`` names its life: messages of
another ``gen`` are leftovers, of a life a TTL index or a delete ended while an append was in
flight. This module keeps documents, messages and lives consistent while appends, purges and
the server's TTL monitor race, on MongoDB and on FerretDB 1.24, which has no TTL indexes and
runs a conditional delete as a read followed by a delete by ``_id``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure

from chatmem.backend import Clock, check_clock
from chatmem.conversation_ids import owner_of

from .._codec import dead, is_expired, live
from .._drivers import AsyncCollection, Document
from .._errors import NOT_IMPLEMENTED

__all__ = ["AsyncExpiry"]

_RESTORE_ATTEMPTS = 100
_PURGE_BATCH = 200


class AsyncExpiry:
    """The stored expiry of one repository's conversations, their lives and their purge.

    Example:
        ```python
        expiry = AsyncExpiry(messages, conversations, timedelta(hours=1))
        await expiry.create_index()
        scope = await expiry.scope("007")  # None when the conversation has expired
        ```

    Args:
        messages: The messages collection.
        conversations: The conversations collection.
        ttl: How long a conversation lives after its last write; ``None`` keeps it forever.
        clock: Returns the current time, an aware UTC datetime; every "now" is read from it.
        summaries: The summaries collection, whose documents of an earlier life go with it.
    """

    def __init__(
        self,
        messages: AsyncCollection,
        conversations: AsyncCollection,
        ttl: timedelta | None,
        clock: Clock | None = None,
        summaries: AsyncCollection | None = None,
    ) -> None:
        self._messages = messages
        self._conversations = conversations
        self._summaries = summaries
        self.ttl = ttl
        """The time to live, or ``None``."""
        self.now: Clock = check_clock(clock)
        """The clock: the current time, an aware UTC datetime."""
        self.native_ttl = False
        """Whether the server removes expired conversation documents itself (TTL index)."""

    @property
    def checks_purges(self) -> bool:
        """Whether each append checks that a concurrent purge left its document (see confirm)."""
        return self.ttl is not None and not self.native_ttl

    def expiry(self, now: datetime) -> datetime | None:
        """The expiry a write at ``now`` sets, or ``None`` without a TTL."""
        return None if self.ttl is None else now + self.ttl

    async def create_index(self) -> None:
        """Create the TTL index where the server has them, else a plain index for the purge.

        Reads filter on the stored expiry either way: MongoDB's TTL monitor runs once a
        minute, so expired documents can linger.
        """
        try:
            await self._conversations.create_index(
                [("expires_at", ASCENDING)], expireAfterSeconds=0, name="expires_at_ttl"
            )
        except OperationFailure as exc:
            if exc.code != NOT_IMPLEMENTED:
                raise
            await self._conversations.create_index([("expires_at", ASCENDING)], name="expires_at")
            self.native_ttl = False
            return
        self.native_ttl = True

    async def scope(self, conversation_id: str) -> Document | None:
        """Return the filter of the messages a read may show, or ``None`` if it has expired.

        With a TTL, messages are also filtered by the conversation's ``gen``, so leftovers of
        an earlier life never show; without one nothing is read.
        """
        if self.ttl is None:
            return {"conversation_id": conversation_id}
        return (await self.scope_and_counter(conversation_id))[0]

    async def scope_and_counter(self, conversation_id: str) -> tuple[Document | None, int | None]:
        """Return :meth:`scope` and the conversation's position counter, from one lookup.

        The conversation document is read by ``_id`` (with or without a TTL). The counter
        is ``None`` when there is no document; the filter is ``None`` when the conversation
        has expired (or, with a TTL, does not exist).
        """
        query, document = await self.scope_and_document(conversation_id)
        if query is None or document is None:
            return query, None
        return query, int(document.get("last_position", 0))

    async def scope_and_document(
        self, conversation_id: str
    ) -> tuple[Document | None, Document | None]:
        """Return :meth:`scope` and the conversation document it was read from.

        The document (``None`` when there is none) is returned even when the conversation
        has expired (the filter is then ``None``): a version-checked append starting a new
        life positions it after the expired one's counter.
        """
        query: Document = {"conversation_id": conversation_id}
        document = await self._conversations.find_one(
            {"_id": conversation_id},
            projection={"expires_at": 1, "gen": 1, "last_position": 1, "deleted_through": 1},
        )
        if self.ttl is None:
            return query, document
        now = self.now()
        if document is None and not self.native_ttl:
            # A purge may have deleted the document under live messages an instant ago (see
            # restore); until it or the append puts it back, the messages speak for it.
            newest = await self.newest_live(conversation_id, now)
            if newest is None:
                return None, None
            return {**query, "gen": newest.get("gen"), **live(now)}, None
        if document is None or is_expired(document, now):
            return None, document
        return {**query, "gen": document.get("gen")}, document

    async def newest_live(self, conversation_id: str, now: datetime) -> Document | None:
        """Return the newest message written less than a TTL before ``now``."""
        return await self._messages.find_one(
            {"conversation_id": conversation_id, **live(now)},
            projection={"_id": 0, "gen": 1, "position": 1, "expires_at": 1},
            sort=[("position", DESCENDING)],
        )

    async def clear_previous_life(
        self, conversation_id: str, gen: Any, before: Document | None, *, wipe: bool
    ) -> bool:
        """Remove what an earlier life (or, for ``wipe``, the current one) left behind.

        Returns whether live messages of another life joined this one, which happens when a
        purge deleted the conversation document under them (see ``restore``).
        """
        now = self.now()
        if self._summaries is not None and (before is None or wipe or is_expired(before, now)):
            # A new life (or a replaced history) starts without the old summary.
            await self._summaries.delete_many({"conversation_id": conversation_id})
        if before is None:
            others: Document = {"conversation_id": conversation_id, "gen": {"$ne": gen}}
            if self.ttl is None or wipe:
                await self._messages.delete_many(others)
                return False
            await self._messages.delete_many({**others, **dead(now)})
            adopted = await self._messages.update_many(
                {**others, **live(now)}, {"$set": {"gen": gen}}
            )
            return adopted.modified_count > 0
        last = int(before.get("last_position", 0))
        if wipe:
            # Positions only grow, so everything at or below the old counter is the past.
            await self._messages.delete_many(
                {"conversation_id": conversation_id, "position": {"$lte": last}}
            )
        elif is_expired(before, now):
            await self._messages.delete_many(
                {"conversation_id": conversation_id, "position": {"$lte": last}, **dead(now)}
            )
        return False

    async def confirm(self, conversation_id: str, gen: Any) -> None:
        """After an append's insert, put its conversation document back if a purge took it.

        A purge that read this conversation as expired can delete the document an append has
        just revived or created (the server deletes by ``_id`` what its read matched). This
        check pairs with the purge's check after its delete (``_restore_live``): whichever
        runs second sees the other's write, so one of them always puts the document back.
        """
        current = await self._conversations.find_one(
            {"_id": conversation_id}, projection={"gen": 1}
        )
        if current is None or current.get("gen") != gen:
            await self.restore(conversation_id)

    async def restore(self, conversation_id: str) -> None:
        """Give live messages a conversation document again after a purge deleted it.

        Live messages (written less than a TTL ago) whose document is gone, or whose ``gen``
        is not the document's, join one life: the newest message's, or that of a document
        another writer created meanwhile. Dead ones stay out, for ``purge`` or the next
        creation to delete.
        """
        for _ in range(_RESTORE_ATTEMPTS):
            now = self.now()
            newest = await self.newest_live(conversation_id, now)
            if newest is None:
                return
            gen, last, expires_at = newest.get("gen"), newest["position"], newest["expires_at"]
            try:
                await self._conversations.insert_one(
                    {
                        "_id": conversation_id,
                        "owner": owner_of(conversation_id),
                        "gen": gen,
                        "last_position": last,
                        "updated_at": now,
                        "expires_at": expires_at,
                    }
                )
            except DuplicateKeyError:
                current = await self._conversations.find_one_and_update(
                    {"_id": conversation_id},
                    {"$max": {"last_position": last, "expires_at": expires_at}},
                    return_document=ReturnDocument.AFTER,
                )
                if current is None:  # deleted again in between: look again
                    continue
                gen = current.get("gen")
            await self._messages.update_many(
                {"conversation_id": conversation_id, "gen": {"$ne": gen}, **live(now)},
                {"$set": {"gen": gen}},
            )
            return

    async def purge(self) -> int:
        """Delete expired conversations and their messages; returns how many conversations.

        With a TTL index the server removes conversation documents itself and this removes
        the messages they left.
        """
        if self.ttl is None:
            return 0
        purged = 0
        while True:
            now = self.now()
            expired = await self._conversations.find(
                {"expires_at": {"$lte": now}},
                projection={"_id": 1, "last_position": 1},
                limit=_PURGE_BATCH,
            ).to_list(None)
            if not expired:
                break
            ids = [d["_id"] for d in expired]
            # Only messages that had expired themselves: an append reviving or re-creating the
            # conversation meanwhile writes messages that expire later, whatever their position
            # (a re-created conversation starts again from 1).
            await self._messages.delete_many(
                {
                    "$or": [
                        {"conversation_id": d["_id"], "position": {"$lte": d["last_position"]}}
                        for d in expired
                    ],
                    **dead(now),
                }
            )
            result = await self._conversations.delete_many(
                {"_id": {"$in": ids}, "expires_at": {"$lte": now}}
            )
            purged += result.deleted_count
            await self._restore_live(ids)
            if len(expired) < _PURGE_BATCH or result.deleted_count == 0:
                break
        if self.native_ttl:
            await self._purge_orphans()
        return purged

    async def _restore_live(self, ids: list[Any]) -> None:
        # The purge's half of the check described in confirm: after deleting, look for
        # messages written since the listing and give them their document back.
        found = await self._messages.find(
            {"conversation_id": {"$in": ids}, **live(self.now())},
            projection={"_id": 0, "conversation_id": 1},
        ).to_list(None)
        for conversation_id in sorted({d["conversation_id"] for d in found}):
            await self.restore(conversation_id)

    async def _purge_orphans(self) -> None:
        # Messages whose conversation document the server's TTL monitor removed.
        ids = await self._messages.distinct("conversation_id")
        for start in range(0, len(ids), _PURGE_BATCH):
            chunk = ids[start : start + _PURGE_BATCH]
            alive = await self._conversations.find(
                {"_id": {"$in": chunk}}, projection={"_id": 1}
            ).to_list(None)
            gone = set(chunk) - {d["_id"] for d in alive}
            if gone:
                # Live messages are an append re-creating the conversation right now.
                await self._messages.delete_many(
                    {"conversation_id": {"$in": sorted(gone)}, **dead(self.now())}
                )
