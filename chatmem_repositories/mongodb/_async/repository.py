"""The MongoDB repository: documents, appends, bounded reads, expiry."""

from __future__ import annotations

from collections import abc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, IndexModel, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

from chatmem._concurrency import AsyncLock
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._repository_support import check_limit, normalize_ttl
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import ConfigurationError, RepositoryError
from chatmem.messages import Message, MessageType

from .._config import parse_url
from .._documents import (
    CONVERSATION_INDEXES,
    MESSAGE_INDEXES,
    check_position,
    dead,
    history_filter,
    is_expired,
    live,
    message_document,
    stored_from_document,
    unique_messages,
)
from .._drivers import AsyncCollection, AsyncMongoClient, Document
from .._errors import (
    BACKEND,
    NOT_IMPLEMENTED,
    is_duplicate_key,
    mapped_errors,
    tracks_sent_commands,
)

__all__ = ["AsyncMongoChatMemoryRepository"]

_INSERT_ATTEMPTS = 100
_PURGE_BATCH = 200


async def _ensure_indexes(collection: AsyncCollection, indexes: list[IndexModel]) -> None:
    # Only the missing ones, one at a time: FerretDB 1.24 drops the connection when one
    # createIndexes command names several indexes that all exist already.
    existing = {index["name"] async for index in await collection.list_indexes()}
    for index in indexes:
        if index.document["name"] not in existing:
            await collection.create_indexes([index])


class AsyncMongoChatMemoryRepository:
    """Stores conversations in MongoDB, one document per message.

    Works on MongoDB and on MongoDB wire-protocol servers without transactions or TTL
    indexes (FerretDB 1.x). An append is two round trips (reserve positions with ``$inc``,
    then insert); a memory read is two (the system message, then the window, each one
    indexed lookup). With a TTL, each read first checks the conversation's stored expiry
    (one more round trip), and on servers without TTL indexes each append then checks that
    a concurrent ``purge_expired`` did not delete its conversation document (one more).

    Example:
        ```python
        repository = AsyncMongoChatMemoryRepository.from_url("mongodb://localhost/chat", ttl=3600)
        await repository.append("007", [UserMessage("My name is James Bond")])
        recent = await repository.find_recent("007", limit=10)
        await repository.aclose()
        ```

    Args:
        client: A pymongo ``AsyncMongoClient``; the repository does not close it.
        database: Database name.
        collection_prefix: Prefix of the messages and conversations collections.
        ttl: Expire a conversation this long after its last write. ``None`` keeps it forever.
        create_indexes: Create the indexes on first use.
    """

    def __init__(
        self,
        client: AsyncMongoClient[Document],
        *,
        database: str = "chatmem",
        collection_prefix: str = "chatmem_",
        ttl: timedelta | float | None = None,
        create_indexes: bool = True,
    ) -> None:
        self._client = client
        self._owns_client = False
        self._url = "<client>"
        db = client[database]
        self._database = database
        self._messages: AsyncCollection = db[collection_prefix + "messages"]
        self._conversations: AsyncCollection = db[collection_prefix + "conversations"]
        self._ttl = normalize_ttl(ttl)
        self._create_indexes = create_indexes
        self._ready_done = not create_indexes
        self._ready_lock = AsyncLock()
        self._writers: dict[str, list[Any]] = {}  # conversation id -> [lock, holders]
        # With the listener, a failed write knows whether it sent anything (see _errors).
        self._tracked = tracks_sent_commands(client)
        self.native_ttl = False
        """Whether the server removes expired conversation documents itself (TTL index)."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncMongoChatMemoryRepository:
        """Create a repository that owns its client, from a ``mongodb://`` URL.

        chatmem's options (``database``, ``collection_prefix``, ``ttl``, ``create_indexes``)
        and pymongo's (``serverSelectionTimeoutMS``, ``tls``...) may be given in the query
        string or as keywords. Timeouts default to bounded values (5 s to select a server or
        connect, 10 s per socket operation).

        Args:
            url: ``mongodb://[user:password@]host[:port][/database][?options]`` or
                ``mongodb+srv://...``.
            **options: Options; they win over the URL's.

        Raises:
            ConfigurationError: For an unknown option (naming it) or a bad value.
        """
        settings = parse_url(url, options)
        with mapped_errors():
            client: AsyncMongoClient[Document] = AsyncMongoClient(
                settings.url, **settings.client_options
            )
        repository = cls(
            client,
            database=settings.database,
            collection_prefix=settings.options.collection_prefix,
            ttl=settings.options.ttl,
            create_indexes=settings.options.create_indexes,
        )
        repository._owns_client = True
        repository._url = settings.redacted_url
        return repository

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(url={self._url!r}, database={self._database!r}, "
            f"messages={self._messages.name!r})"
        )

    # -- setup --------------------------------------------------------------------------------

    async def _ready(self) -> None:
        if self._ready_done:
            return
        async with self._ready_lock:
            if self._ready_done:
                return
            with mapped_errors():
                await _ensure_indexes(self._messages, MESSAGE_INDEXES)
                await _ensure_indexes(self._conversations, CONVERSATION_INDEXES)
                if self._ttl is not None:
                    self.native_ttl = await self._create_expiry_index()
            self._ready_done = True

    async def _create_expiry_index(self) -> bool:
        # A TTL index where the server has them; otherwise a plain index for purge_expired.
        # Reads filter on the stored expiry either way: MongoDB's TTL monitor runs once a
        # minute, so expired documents can linger.
        try:
            await self._conversations.create_index(
                [("expires_at", ASCENDING)], expireAfterSeconds=0, name="expires_at_ttl"
            )
        except OperationFailure as exc:
            if exc.code != NOT_IMPLEMENTED:
                raise
            await self._conversations.create_index([("expires_at", ASCENDING)], name="expires_at")
            return False
        return True

    # -- helpers ------------------------------------------------------------------------------

    def _expiry(self, now: datetime) -> datetime | None:
        return None if self._ttl is None else now + self._ttl

    async def _live_conversation(self, conversation_id: str) -> tuple[bool, Document | None]:
        """Check the stored expiry; with no TTL configured nothing is read.

        Returns ``(live, filter extension)``: with a TTL, messages are also filtered by the
        conversation's ``gen``, so leftovers of an earlier life never show.
        """
        if self._ttl is None:
            return True, None
        document = await self._conversations.find_one(
            {"_id": conversation_id}, projection={"expires_at": 1, "gen": 1}
        )
        now = datetime.now(UTC)
        if document is None and not self.native_ttl:
            # A purge may have deleted the document under live messages an instant ago (see
            # _restore); until it or the append puts it back, the messages speak for it.
            newest = await self._newest_live(conversation_id, now)
            if newest is None:
                return False, None
            return True, {"gen": newest.get("gen"), **live(now)}
        if document is None or is_expired(document, now):
            return False, None
        return True, {"gen": document.get("gen")}

    async def _newest_live(self, conversation_id: str, now: datetime) -> Document | None:
        return await self._messages.find_one(
            {"conversation_id": conversation_id, **live(now)},
            projection={"_id": 0, "gen": 1, "position": 1, "expires_at": 1},
            sort=[("position", DESCENDING)],
        )

    async def _message_filter(self, conversation_id: str) -> Document | None:
        alive, extra = await self._live_conversation(conversation_id)
        if not alive:
            return None
        query: Document = {"conversation_id": conversation_id}
        if extra:
            query.update(extra)
        return query

    async def _find(
        self, query: Document, conversation_id: str, *, newest_first: bool, limit: int = 0
    ) -> list[StoredMessage]:
        cursor = self._messages.find(
            query,
            projection={"_id": 0, "position": 1, "data": 1},
            sort=[("position", DESCENDING if newest_first else ASCENDING)],
            limit=limit,
        )
        documents = await cursor.to_list(None)
        return [stored_from_document(d, conversation_id) for d in documents]

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
        try:
            before = await self._conversations.find_one_and_update(
                {"_id": conversation_id}, update, upsert=True, return_document=ReturnDocument.BEFORE
            )
        except DuplicateKeyError:
            # Two upserts created the same conversation at once and this one lost; the
            # document exists now, so the retry is a plain update.
            before = await self._conversations.find_one_and_update(
                {"_id": conversation_id}, update, upsert=True, return_document=ReturnDocument.BEFORE
            )
        first = (0 if before is None else int(before.get("last_position", 0))) + 1
        gen = fresh_gen if before is None else before.get("gen")
        return first, gen, before

    async def _clear_previous_life(
        self, conversation_id: str, gen: Any, before: Document | None, *, wipe: bool
    ) -> bool:
        """Remove what an earlier life (or, for ``wipe``, the current one) left behind.

        Returns whether live messages of another life joined this one, which happens when a
        purge deleted the conversation document under them (see ``_restore``).
        """
        now = datetime.now(UTC)
        if before is None:
            others: Document = {"conversation_id": conversation_id, "gen": {"$ne": gen}}
            if self._ttl is None or wipe:
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

    async def _is_stored(self, conversation_id: str, message_id: str) -> bool:
        found = await self._messages.find_one(
            {"conversation_id": conversation_id, "message_id": message_id}, projection={"_id": 1}
        )
        return found is not None

    async def _max_position(self, conversation_id: str) -> int:
        newest = await self._messages.find_one(
            {"conversation_id": conversation_id},
            projection={"_id": 0, "position": 1},
            sort=[("position", DESCENDING)],
        )
        return 0 if newest is None else int(newest["position"])

    async def _insert(
        self,
        conversation_id: str,
        gen: Any,
        expires_at: datetime | None,
        batch: list[Message],
        first: int,
        *,
        moved: bool = False,
    ) -> list[StoredMessage]:
        """Insert in order from ``first``; the unique indexes settle every race.

        A duplicate message id is skipped (idempotency). A taken position means another
        writer got there first, which happens on servers whose ``$inc`` is not atomic
        (FerretDB 1.24 loses concurrent updates): the rest of the batch moves past the newest
        stored position and the counter is raised to match (as it is when ``moved``).
        """
        stored: list[StoredMessage] = []
        pending, position = batch, first
        for _ in range(_INSERT_ATTEMPTS):
            if not pending:
                break
            documents = [
                message_document(conversation_id, gen, position + i, m, expires_at=expires_at)
                for i, m in enumerate(pending)
            ]
            try:
                await self._messages.insert_many(documents, ordered=True)
                index = len(pending)
            except BulkWriteError as exc:
                error = exc.details["writeErrors"][0]  # ordered: the first failure stops it
                if not is_duplicate_key(error):
                    raise
                index = int(error["index"])
            stored += [StoredMessage(position + i, m) for i, m in enumerate(pending[:index])]
            if index == len(pending):
                break
            if await self._is_stored(conversation_id, pending[index].id):
                pending, position = pending[index + 1 :], position + index + 1
            else:
                pending = pending[index:]
                position, moved = await self._max_position(conversation_id) + 1, True
        else:
            raise RepositoryError(
                f"could not store messages of conversation {conversation_id!r}: "
                f"positions stayed contended after {_INSERT_ATTEMPTS} attempts",
                backend=BACKEND,
            )
        if moved and stored:
            await self._conversations.update_one(
                {"_id": conversation_id}, {"$max": {"last_position": stored[-1].position}}
            )
        return stored

    async def _write(
        self, conversation_id: str, messages: Sequence[Message], *, replace: bool
    ) -> list[StoredMessage]:
        batch = unique_messages(messages)
        # Writers in this process take turns per conversation so they do not race for the
        # same positions. Only an optimisation: the unique indexes are what keep writers
        # apart (other processes, or a lost bookkeeping race here), so it needs no guard.
        entry = self._writers.setdefault(conversation_id, [AsyncLock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                now = datetime.now(UTC)
                expires_at = self._expiry(now)
                first, gen, before = await self._reserve(
                    conversation_id, len(batch), now, expires_at
                )
                moved = await self._clear_previous_life(conversation_id, gen, before, wipe=replace)
                if moved:
                    # Adopted messages keep their positions; these go after them.
                    first = await self._max_position(conversation_id) + 1
                stored = await self._insert(
                    conversation_id, gen, expires_at, batch, first, moved=moved
                )
                if self._ttl is not None and not self.native_ttl:
                    await self._confirm(conversation_id, gen)
                return stored
        finally:
            entry[1] -= 1
            if entry[1] <= 0:
                self._writers.pop(conversation_id, None)

    async def _confirm(self, conversation_id: str, gen: Any) -> None:
        # A purge that read this conversation as expired can delete the document this append
        # has just revived or created (the server deletes by _id what its read matched). This
        # check after the insert pairs with the purge's check after its delete: whichever
        # runs second sees the other's write, so one of them always puts the document back.
        current = await self._conversations.find_one(
            {"_id": conversation_id}, projection={"gen": 1}
        )
        if current is None or current.get("gen") != gen:
            await self._restore(conversation_id)

    async def _restore(self, conversation_id: str) -> None:
        """Give live messages a conversation document again after a purge deleted it.

        Live messages (written less than a TTL ago) whose document is gone, or whose ``gen``
        is not the document's, join one life: the newest message's, or that of a document
        another writer created meanwhile. Dead ones stay out, for ``purge_expired`` or the
        next creation to delete.
        """
        for _ in range(_INSERT_ATTEMPTS):
            now = datetime.now(UTC)
            newest = await self._newest_live(conversation_id, now)
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

    # -- Spring AI's four methods -------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        await self._ready()
        query: Document = {}
        if self._ttl is not None:
            query = {"$or": [{"expires_at": None}, {"expires_at": {"$gt": datetime.now(UTC)}}]}
        with mapped_errors():
            documents = await self._conversations.find(query, projection={"_id": 1}).to_list(None)
        return [str(d["_id"]) for d in documents]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_errors():
            query = await self._message_filter(conversation_id)
            if query is None:
                return []
            stored = await self._find(query, conversation_id, newest_first=False)
        return [s.message for s in stored]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages; an empty sequence deletes it.

        MongoDB is used without transactions (FerretDB has none), so a reader running at the
        same time may see the conversation briefly empty. Positions keep increasing.
        """
        validate_conversation_id(conversation_id)
        if not messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        await self._ready()
        with mapped_errors(write=True, tracked=self._tracked):
            await self._write(conversation_id, messages, replace=True)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its messages; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_errors(write=True, tracked=self._tracked):
            # Messages first: a crash in between leaves an empty conversation, not orphans.
            await self._messages.delete_many({"conversation_id": conversation_id})
            await self._conversations.delete_one({"_id": conversation_id})

    # -- log capabilities ---------------------------------------------------------------------

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """Append messages; ids already stored in the conversation are skipped.

        Two round trips: ``find_one_and_update`` with ``$inc`` reserves a block of positions,
        then ``insert_many`` stores the documents. A writer that dies in between leaves unused
        positions (a gap), nothing else. Two writers appending the same message id: the
        unique ``(conversation_id, message_id)`` index lets exactly one store it.
        """
        validate_conversation_id(conversation_id)
        if not messages:
            return []
        await self._ready()
        with mapped_errors(write=True, tracked=self._tracked):
            return await self._write(conversation_id, messages, replace=False)

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` non-system messages, oldest first (one round trip)."""
        validate_conversation_id(conversation_id)
        check_limit(limit)
        if before is not None:
            check_position(before)
        if limit == 0:
            return []
        await self._ready()
        with mapped_errors():
            query = await self._message_filter(conversation_id)
            if query is None:
                return []
            query["type"] = {"$ne": MessageType.SYSTEM.value}
            if before is not None:
                query["position"] = {"$lt": before}
            newest = await self._find(query, conversation_id, newest_first=True, limit=limit)
        newest.reverse()
        return newest

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest system message: one indexed lookup, no scan."""
        return await self.find_latest(conversation_id, MessageType.SYSTEM)

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_errors():
            query = await self._message_filter(conversation_id)
            if query is None:
                return None
            query["type"] = MessageType(message_type).value
            found = await self._find(query, conversation_id, newest_first=True, limit=1)
        return found[0] if found else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        if owner is not None and not isinstance(owner, str):
            raise ConfigurationError(f"owner must be a string, got {type(owner).__name__}")
        if cursor is not None and not isinstance(cursor, str):
            raise ConfigurationError(f"cursor must be a string, got {type(cursor).__name__}")
        if limit == 0:
            return ConversationPage([], None)
        await self._ready()
        query: Document = {}
        if owner is not None:
            query["owner"] = owner
        if cursor is not None:
            query["_id"] = {"$gt": cursor}
        if self._ttl is not None:
            query["$or"] = [{"expires_at": None}, {"expires_at": {"$gt": datetime.now(UTC)}}]
        with mapped_errors():
            documents = await self._conversations.find(
                query, projection={"_id": 1}, sort=[("_id", ASCENDING)], limit=limit + 1
            ).to_list(None)
        ids = [str(d["_id"]) for d in documents]
        page = ids[:limit]
        return ConversationPage(page, page[-1] if len(ids) > limit else None)

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: abc.Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every filter, oldest first.

        Time and type filters use stored fields; text is a case-insensitive ``$regex`` on the
        stored searchable text, evaluated by the server over this conversation's messages
        (bounded by the conversation and the page size, not served by an index).
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        filters = history_filter(
            conversation_id, since=since, until=until, types=types, text=text, after=after
        )
        if limit == 0:
            return []
        await self._ready()
        with mapped_errors():
            query = await self._message_filter(conversation_id)
            if query is None:
                return []
            filters.update(query)
            return await self._find(filters, conversation_id, newest_first=False, limit=limit)

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete non-system messages positioned before ``position``."""
        validate_conversation_id(conversation_id)
        check_position(position)
        await self._ready()
        with mapped_errors(write=True, tracked=self._tracked):
            query = await self._message_filter(conversation_id)
            if query is None:
                return 0
            query["position"] = {"$lt": position}
            query["type"] = {"$ne": MessageType.SYSTEM.value}
            result = await self._messages.delete_many(query)
        return result.deleted_count

    async def purge_expired(self) -> int:
        """Delete expired conversations and their messages; returns how many conversations.

        Needed where the server has no TTL index (FerretDB). With a TTL index the server
        removes conversation documents itself and this removes the messages they left.
        """
        await self._ready()
        if self._ttl is None:
            return 0
        purged = 0
        with mapped_errors(write=True, tracked=self._tracked):
            while True:
                now = datetime.now(UTC)
                expired = await self._conversations.find(
                    {"expires_at": {"$lte": now}},
                    projection={"_id": 1, "last_position": 1},
                    limit=_PURGE_BATCH,
                ).to_list(None)
                if not expired:
                    break
                ids = [d["_id"] for d in expired]
                # Only messages that had expired themselves: an append reviving or re-creating
                # the conversation meanwhile writes messages that expire later, whatever their
                # position (a re-created conversation starts again from 1).
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
        # The purge's half of the check described in _confirm: after deleting, look for
        # messages written since the listing and give them their document back.
        found = await self._messages.find(
            {"conversation_id": {"$in": ids}, **live(datetime.now(UTC))},
            projection={"_id": 0, "conversation_id": 1},
        ).to_list(None)
        for conversation_id in sorted({d["conversation_id"] for d in found}):
            await self._restore(conversation_id)

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
                    {"conversation_id": {"$in": sorted(gone)}, **dead(datetime.now(UTC))}
                )

    async def aclose(self) -> None:
        """Close the client if this repository created it (from a URL)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncMongoChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
