"""Batches of messages written whole and read whole, without transactions.

A batch (the messages of one append) is written by one ordered ``insert_many`` at consecutive
positions, which the server applies as one transaction (see ``.._codec``), and nothing
writes a batch in parts. Reads keep only whole batches, so what a delete racing a write leaves
of a batch (MongoDB's multi-document deletes yield between documents) never shows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError

from chatmem.backend import AsyncLock, StoredMessage, unique_by_id
from chatmem.conversation_ids import owner_of
from chatmem.exceptions import RepositoryError, VersionConflictError
from chatmem.messages import Message, MessageType

from .._codec import (
    UNWINDOWED,
    batch_documents,
    count_pipeline,
    counted_messages,
    is_dead,
    partial_batches,
    version_of,
    whole_batches,
)
from .._drivers import AsyncCollection, Document
from .._errors import BACKEND, is_duplicate_key
from .expiry import AsyncExpiry

__all__ = ["AsyncBatches"]

_INSERT_ATTEMPTS = 100
# How far below the position counter a window read reaches beyond its limit, for the
# positions that hold no message shown there (system messages, unused positions).
_WINDOW_SLACK = 8
_HINTS = 10_000  # conversations whose newest position a repository remembers
_PROJECTION = {"_id": 0, "position": 1, "data": 1, "batch": 1}
_WINDOW_PROJECTION = {**_PROJECTION, "type": 1}


_SYSTEM = MessageType.SYSTEM.value


class AsyncBatches:
    """Writes and reads the messages of one repository, a batch at a time.

    Example:
        ```python
        batches = AsyncBatches(messages, conversations, expiry)
        stored = await batches.write("007", [UserMessage("hi"), AssistantMessage("hello")])
        page = await batches.page({"conversation_id": "007"}, limit=10, newest_first=True)
        ```

    Args:
        messages: The messages collection.
        conversations: The conversations collection (position counters).
        expiry: The repository's expiry, which sets ``expires_at`` and ends lives.
    """

    def __init__(
        self, messages: AsyncCollection, conversations: AsyncCollection, expiry: AsyncExpiry
    ) -> None:
        self._messages = messages
        self._conversations = conversations
        self._expiry = expiry
        self._writers: dict[str, list[Any]] = {}  # conversation id -> [lock, holders]
        # conversation id -> the newest position this process saw stored (a hint only)
        self._newest: dict[str, int] = {}

    def newest(self, conversation_id: str) -> int | None:
        """The newest position this process saw stored in the conversation, if it has one.

        Only a hint for :meth:`window`, which answers right whatever it is: another process
        may have appended since, or deleted the conversation.
        """
        return self._newest.get(conversation_id)

    def _saw(self, conversation_id: str, position: int | None) -> None:
        if position is None:
            self._newest.pop(conversation_id, None)
            return
        if len(self._newest) >= _HINTS and conversation_id not in self._newest:
            self._newest.clear()  # bounded; losing hints costs one lookup each
        self._newest[conversation_id] = position

    def forget(self, conversation_id: str) -> None:
        """Drop the position hint of a conversation (it was deleted)."""
        self._newest.pop(conversation_id, None)

    # -- reads --------------------------------------------------------------------------------

    async def documents(
        self, query: Document, *, newest_first: bool, limit: int = 0
    ) -> list[Document]:
        """Fetch message documents as they are, without looking at batches."""
        cursor = self._messages.find(
            query,
            projection=_PROJECTION,
            sort=[("position", DESCENDING if newest_first else ASCENDING)],
            limit=limit,
        )
        return await cursor.to_list(None)

    async def count(self, scope: Document) -> int:
        """Count the messages of whole batches in ``scope``: one ``aggregate``.

        The server counts (see ``count_pipeline``); a few rows come back, not the messages.
        """
        cursor = await self._messages.aggregate(count_pipeline(scope))
        return counted_messages(await cursor.to_list(None))

    async def window(
        self, conversation_id: str, scope: Document, limit: int, counter: int | None
    ) -> tuple[Document | None, list[Document]]:
        """Fetch the newest system message and the newest ``limit`` others (newest first).

        The others are documents of whole batches, as :meth:`page` keeps them. With the
        conversation's position counter (or the newest position this process saw, which
        serves as well: only how often this needs a second query depends on it), usually
        one ``find``: every message positioned within ``limit + _WINDOW_SLACK`` of the
        counter (or after it), and the system
        messages, newest first, at most one more than that reach. The newest system
        message there is the current one: every system message matches the filter, and all
        that matched above the last one returned are returned. When the answer cannot tell
        (no system message among a full answer; fewer others than ``limit`` although the
        reach did not go back to position 1: unused positions, or a counter behind the
        stored positions), the missing part is read as ``find_latest`` and ``find_recent``
        read it (one more query each).
        """
        if counter is None:
            return await self._system(scope), await self._recent(scope, limit)
        reach = limit + _WINDOW_SLACK
        bottom = counter - reach  # every message above this position is in the answer
        fetch = reach + 1
        found = await self._messages.find(
            {**scope, "$or": [{"position": {"$gt": bottom}}, {"type": _SYSTEM}]},
            projection=_WINDOW_PROJECTION,
            sort=[("position", DESCENDING)],
            limit=fetch,
        ).to_list(None)
        full = len(found) == fetch
        self._saw(conversation_id, int(found[0]["position"]) if found else None)
        system = next((d for d in found if d.get("type") == _SYSTEM), None)
        if system is None and full:
            system = await self._system(scope)
        low = bottom + 1
        if full:
            low = max(low, int(found[-1]["position"]))
        shown = [d for d in found if int(d["position"]) >= low]  # every message from low up
        kept = [d for d in whole_batches(shown, low=low) if d.get("type") not in UNWINDOWED]
        if len(kept) >= limit or (low <= 1 and not full):
            return system, kept[:limit]
        return system, await self._recent(scope, limit)

    async def _system(self, scope: Document) -> Document | None:
        found = await self.documents({**scope, "type": _SYSTEM}, newest_first=True, limit=1)
        return found[0] if found else None

    async def _recent(self, scope: Document, limit: int) -> list[Document]:
        query = {**scope, "type": {"$nin": UNWINDOWED}}
        return await self.page(query, limit=limit, newest_first=True, chat_only=True)

    async def page(
        self,
        query: Document,
        *,
        limit: int,
        newest_first: bool,
        low: float = -math.inf,
        high: float = math.inf,
        chat_only: bool = False,
        scope: Document | None = None,
    ) -> list[Document]:
        """Fetch up to ``limit`` documents of whole batches, in position order.

        Without ``scope``, the query selects every message from position ``low`` to ``high``
        (but system messages and events, with ``chat_only``), so the page alone tells whole batches
        (see ``whole_batches``); a batch the limit cuts at the far end of a full page shows
        in part, as windows show it. With ``scope``, the query filters on more (the time, type
        and text filters of ``find_history``), and batches with members missing from the page
        are counted in ``scope`` (one more query). When batches are dropped, the page is
        fetched again, twice as large, so that it still holds ``limit`` messages if there are.
        """
        fetch = limit
        while True:
            documents = await self.documents(query, newest_first=newest_first, limit=fetch)
            full = len(documents) == fetch
            if scope is not None:
                kept = await self.whole_in(scope, documents)
            else:
                edge = float(documents[-1]["position"]) if full else None
                kept = whole_batches(
                    documents,
                    low=edge if edge is not None and newest_first else low,
                    high=edge if edge is not None and not newest_first else high,
                    chat_only=chat_only,
                )
            if len(kept) >= limit or not full:
                return kept[:limit]
            fetch *= 2

    async def whole_in(self, scope: Document, documents: list[Document]) -> list[Document]:
        """Keep the documents of batches with every member in ``scope``.

        Batches with every member among ``documents`` need no query; the others are counted.
        """
        partial = partial_batches(documents)
        if not partial:
            return documents
        members = await self._messages.find(
            {**scope, "batch.id": {"$in": list(partial)}}, projection={"_id": 0, "batch.id": 1}
        ).to_list(None)
        counts = Counter(m["batch"]["id"] for m in members)
        broken = {key for key, size in partial.items() if counts[key] < size}
        return [d for d in documents if d.get("batch") is None or d["batch"]["id"] not in broken]

    # -- writes -------------------------------------------------------------------------------

    async def _reserve(
        self, conversation_id: str, count: int, now: datetime, expires_at: datetime | None
    ) -> tuple[int, Any, Document | None]:
        """Reserve ``count`` positions; returns (first position, gen, document before)."""
        fresh_gen = ObjectId()
        update: Document = {
            "$inc": {"last_position": count},
            "$set": {"updated_at": now, "expires_at": expires_at},
            "$setOnInsert": {"owner": owner_of(conversation_id), "gen": fresh_gen},
        }
        before = await self._upsert(conversation_id, update)
        first = (0 if before is None else int(before.get("last_position", 0))) + 1
        gen = fresh_gen if before is None else before.get("gen")
        return first, gen, before

    async def _max_position(self, conversation_id: str) -> int:
        newest = await self._messages.find_one(
            {"conversation_id": conversation_id},
            projection={"_id": 0, "position": 1},
            sort=[("position", DESCENDING)],
        )
        return 0 if newest is None else int(newest["position"])

    async def _raise_counter(self, conversation_id: str, position: int) -> None:
        await self._conversations.update_one(
            {"_id": conversation_id}, {"$max": {"last_position": position}}
        )

    async def _settle(
        self, conversation_id: str, gen: Any, batch: list[Message]
    ) -> tuple[set[str], set[str]]:
        """Look at the stored copies of a batch's message ids, after its insert met one.

        Returns the ids a retry skips, stored by whole batches that reads show (or, live ones
        of another life, will show: they join this one here, as ``AsyncExpiry.restore`` would
        move them), and every id found. Any other copy is deleted, so the append writes it
        again with the rest of its batch: part of a batch that is not whole (a write cut
        short, or one a concurrent delete removed in part), or an expired copy of another
        life. Skipping such a copy would complete the batch around a hole. The copies skipped
        were whole when they were looked at; a delete that takes them (or some of them) right
        after leaves nothing of the batch that reads show, as if it came after the append.
        """
        found = await self._messages.find(
            {"conversation_id": conversation_id, "message_id": {"$in": [m.id for m in batch]}},
            projection={"message_id": 1, "gen": 1, "expires_at": 1, "batch": 1},
        ).to_list(None)
        now = self._expiry.now()
        # Expired copies of another life are never moved into this one (see clear_previous_life).
        kept = [
            d
            for d in found
            if d.get("gen") == gen or self._expiry.ttl is None or not is_dead(d, now)
        ]
        whole = await self.whole_in({"conversation_id": conversation_id}, kept)
        stored = {d["message_id"] for d in whole}
        stale = [d["_id"] for d in found if d["message_id"] not in stored]
        if stale:
            await self._messages.delete_many({"_id": {"$in": stale}})
        strays = [d for d in whole if d.get("gen") != gen]
        if strays:
            await self._messages.update_many(
                {
                    "conversation_id": conversation_id,
                    "$or": [
                        {"_id": {"$in": [d["_id"] for d in strays]}},
                        {"batch.id": {"$in": [d["batch"]["id"] for d in strays if "batch" in d]}},
                    ],
                },
                {"$set": {"gen": gen}},
            )
        return stored, {d["message_id"] for d in found}

    async def _insert(
        self,
        conversation_id: str,
        gen: Any,
        expires_at: datetime | None,
        batch: list[Message],
        first: int,
        *,
        moved: bool = False,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Insert the batch whole at consecutive positions from ``first``.

        One ordered ``insert_many``, which the server applies as one transaction (see
        ``.._codec``), so reads and deletes find all of the batch or none of it. When it
        stops at a duplicate key, the documents it stored before are deleted again and the
        batch is looked at as a whole (``_settle``): ids a whole batch of this life stores
        are skipped (a retry), and the rest is inserted again, whole. A taken position,
        which happens on servers whose ``$inc`` is not atomic (FerretDB 1.24 loses
        concurrent updates), moves the batch past the newest stored position and the counter
        is raised to match (as it is when ``moved``). With ``expected_version``, a taken
        position means another writer stored a message since the version was checked: the
        append stores nothing and raises :class:`~chatmem.exceptions.VersionConflictError`.
        """
        pending, position = batch, first
        for _ in range(_INSERT_ATTEMPTS):
            if not pending:
                return []
            documents = batch_documents(
                conversation_id, gen, position, pending, expires_at=expires_at
            )
            try:
                await self._messages.insert_many(documents, ordered=True)
            except BulkWriteError as exc:
                error = exc.details["writeErrors"][0]  # ordered: the first failure stops it
                if not is_duplicate_key(error):
                    raise
                index = int(error["index"])
                if index:
                    # Stored one by one after the combined insert failed: reads hide them
                    # (their batch is not whole), and they must not stay as a part of it.
                    await self._messages.delete_many(
                        {"_id": {"$in": [d["_id"] for d in documents[:index]]}}
                    )
                stored, found = await self._settle(conversation_id, gen, pending)
                if pending[index].id not in found:  # a taken position, not a stored id
                    if expected_version is not None:
                        actual = await self.version(conversation_id)
                        raise VersionConflictError(
                            conversation_id, expected_version, actual
                        ) from exc
                    position, moved = await self._max_position(conversation_id) + 1, True
                pending = [m for m in pending if m.id not in stored]
                continue
            if moved:
                await self._raise_counter(conversation_id, position + len(pending) - 1)
            return [StoredMessage(position + i, m) for i, m in enumerate(pending)]
        raise RepositoryError(
            f"could not store messages of conversation {conversation_id!r}: "
            f"positions stayed contended after {_INSERT_ATTEMPTS} attempts",
            backend=BACKEND,
        )

    async def version(self, conversation_id: str) -> int:
        """Return the conversation's version (see ``version_of``): 0 if it holds nothing.

        The conversation document by ``_id``, then the newest message of its current life
        (one indexed lookup): two round trips, or one when the conversation has expired.
        """
        return (await self._checked_start(conversation_id))[0]

    async def _checked_start(self, conversation_id: str) -> tuple[int, int]:
        """Return the conversation's version and the position a checked append stores at.

        The position is the one after the version, so that the unique position index lets a
        checked append store only if no other writer stored there first, including a writer
        that had reserved its positions before the version was read; it is the one after the
        expired life's counter when the conversation starts a new life.
        """
        scope, document = await self._expiry.scope_and_document(conversation_id)
        if scope is None:
            restart = 0 if document is None else int(document.get("last_position", 0))
            return 0, restart + 1
        newest = await self._messages.find_one(
            scope, projection={"_id": 0, "position": 1}, sort=[("position", DESCENDING)]
        )
        version = version_of(newest, document)
        return version, version + 1

    async def write(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        replace: bool,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append a batch (with ``replace``, in place of everything); returns what it stored.

        With ``expected_version``, nothing is written unless the conversation is at that
        version (see :meth:`_write_checked`).
        """
        batch = unique_by_id(messages)
        # Writers in this process take turns per conversation so they do not race for the
        # same positions. Only an optimisation: the unique indexes are what keep writers
        # apart (other processes, or a lost bookkeeping race here), so it needs no guard.
        entry = self._writers.setdefault(conversation_id, [AsyncLock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                if expected_version is not None:
                    return await self._write_checked(conversation_id, batch, expected_version)
                now = self._expiry.now()
                expires_at = self._expiry.expiry(now)
                first, gen, before = await self._reserve(
                    conversation_id, len(batch), now, expires_at
                )
                moved = await self._expiry.clear_previous_life(
                    conversation_id, gen, before, wipe=replace
                )
                if moved:
                    # Adopted messages keep their positions; these go after them, and the
                    # counter passes them now: the batch may turn out to be stored already
                    # (a retry), and later appends must still be positioned after them.
                    first = await self._max_position(conversation_id) + 1
                    await self._raise_counter(conversation_id, first + len(batch) - 1)
                stored = await self._insert(
                    conversation_id, gen, expires_at, batch, first, moved=moved
                )
                if self._expiry.checks_purges:
                    await self._expiry.confirm(conversation_id, gen)
                if stored:
                    self._saw(conversation_id, int(stored[-1].position))
                return stored
        finally:
            entry[1] -= 1
            if entry[1] <= 0:
                self._writers.pop(conversation_id, None)

    async def _write_checked(
        self, conversation_id: str, batch: list[Message], expected_version: int
    ) -> list[StoredMessage]:
        """Append a batch only if the conversation is at ``expected_version``.

        The version is read first (two round trips, see :meth:`version`); when it differs,
        nothing is written. Otherwise the batch goes to the positions right after the
        version: ``findAndModify`` raises the counter to its end (``$max``), sets the
        expiry and creates the conversation if needed, then the ordered insert. The unique
        position index lets it store only where nothing was stored since the read, so in
        position order the batch comes right after the version's message; a writer of
        another process that stored at the next position first makes it raise, leaving
        nothing of its batch, and one that stores further on is ordered after it. Writers
        of this repository take turns (the caller holds the conversation's lock), so among
        them the check is exact in time as well.
        """
        actual, first = await self._checked_start(conversation_id)
        if actual != expected_version:
            raise VersionConflictError(conversation_id, expected_version, actual)
        now = self._expiry.now()
        expires_at = self._expiry.expiry(now)
        last = first + len(batch) - 1
        gen, before = await self._reserve_through(conversation_id, last, now, expires_at)
        moved = await self._expiry.clear_previous_life(conversation_id, gen, before, wipe=False)
        if moved:
            # Live messages of another life joined this one (see AsyncExpiry.restore): the
            # batch goes after them, and the counter passes it, as in a plain append, so a
            # later append is never positioned below it.
            first = max(first, await self._max_position(conversation_id) + 1)
            await self._raise_counter(conversation_id, first + len(batch) - 1)
        stored = await self._insert(
            conversation_id,
            gen,
            expires_at,
            batch,
            first,
            moved=moved,
            expected_version=expected_version,
        )
        if self._expiry.checks_purges:
            await self._expiry.confirm(conversation_id, gen)
        if stored:
            self._saw(conversation_id, int(stored[-1].position))
        return stored

    async def _reserve_through(
        self, conversation_id: str, last: int, now: datetime, expires_at: datetime | None
    ) -> tuple[Any, Document | None]:
        """Raise the counter to at least ``last``; returns (gen, document before)."""
        fresh_gen = ObjectId()
        update: Document = {
            "$max": {"last_position": last},
            "$set": {"updated_at": now, "expires_at": expires_at},
            "$setOnInsert": {"owner": owner_of(conversation_id), "gen": fresh_gen},
        }
        before = await self._upsert(conversation_id, update)
        return (fresh_gen if before is None else before.get("gen")), before

    async def _upsert(self, conversation_id: str, update: Document) -> Document | None:
        """Apply ``update`` to the conversation document, creating it; return it as it was."""
        try:
            return await self._conversations.find_one_and_update(
                {"_id": conversation_id}, update, upsert=True, return_document=ReturnDocument.BEFORE
            )
        except DuplicateKeyError:
            # Two upserts created the same conversation at once and this one lost; the
            # document exists now, so the retry is a plain update.
            return await self._conversations.find_one_and_update(
                {"_id": conversation_id}, update, upsert=True, return_document=ReturnDocument.BEFORE
            )

    async def delete_before(self, scope: Document, position: int) -> int:
        """Delete the chat messages of ``scope`` before ``position``; return how many.

        A batch this cuts keeps its system messages, its events and its part from
        ``position`` on, as single messages: their ``batch`` goes first (one ``update``), or
        reads would hide them for good (the batch would never be whole again). Meanwhile
        the part to delete is hidden already: what is left of its batch is not whole.
        """
        await self._messages.update_many(
            {
                **scope,
                "batch": {"$exists": True},
                "$or": [
                    {"position": {"$lt": position}, "type": {"$in": UNWINDOWED}},
                    {"position": {"$gte": position}, "batch.first": {"$lt": position}},
                ],
            },
            {"$unset": {"batch": ""}},
        )
        doomed = {**scope, "position": {"$lt": position}, "type": {"$nin": UNWINDOWED}}
        return (await self._messages.delete_many(doomed)).deleted_count

    async def delete_between(
        self, conversation_id: str, scope: Document, after: int | None, through: int
    ) -> int:
        """Delete the chat messages of ``scope`` in ``(after, through]``; return how many.

        Four round trips: a ``find`` of the doomed messages' positions and batches; an
        ``update`` that makes what stays of the batches they belong to (their system
        messages, events and members outside the range) single messages, as
        :meth:`delete_before` does; ``$max`` of ``deleted_through`` on the conversation
        document to the newest doomed position, so the version never goes back (see
        ``version_of``); then the ``delete``. Nothing is written when nothing is doomed.
        """
        span: Document = {"$lte": through}
        if after is not None:
            span["$gt"] = after
        doomed: Document = {**scope, "position": span, "type": {"$nin": UNWINDOWED}}
        found = await self._messages.find(
            doomed, projection={"_id": 0, "position": 1, "batch.id": 1}
        ).to_list(None)
        if not found:
            return 0
        batches = list({d["batch"]["id"] for d in found if d.get("batch")})
        if batches:
            await self._messages.update_many(
                {
                    **scope,
                    "batch.id": {"$in": batches},
                    "$or": [{"position": {"$not": span}}, {"type": {"$in": UNWINDOWED}}],
                },
                {"$unset": {"batch": ""}},
            )
        newest = max(int(d["position"]) for d in found)
        await self._conversations.update_one(
            {"_id": conversation_id}, {"$max": {"deleted_through": newest}}
        )
        return (await self._messages.delete_many(doomed)).deleted_count
