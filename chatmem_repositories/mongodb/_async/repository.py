"""The MongoDB repository: documents, appends of whole batches, bounded reads."""

from __future__ import annotations

import math
from collections import abc
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pymongo import ASCENDING, IndexModel

from chatmem.backend import (
    AsyncLock,
    Clock,
    ConversationPage,
    InitializeSchema,
    Position,
    StoredMessage,
    check_limit,
    conversation_page,
    normalize_ttl,
)
from chatmem.conversation_ids import validate_conversation_id
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import Message, MessageType
from chatmem.repository import ConversationSummary

from .._codec import (
    UNWINDOWED,
    check_position,
    history_filter,
    server_product,
    stored_from_document,
    whole_batches,
)
from .._drivers import AsyncCollection, AsyncMongoClient, Document
from .._errors import mapped_driver_errors, tracks_sent_commands
from .._options import parse_url
from .._schema import CONVERSATION_INDEXES, MESSAGE_INDEXES, SUMMARY_INDEXES, missing
from .batches import AsyncBatches
from .expiry import AsyncExpiry
from .summaries import AsyncSummaries

__all__ = ["AsyncMongoChatMemoryRepository"]


async def _ensure_indexes(collection: AsyncCollection, indexes: list[IndexModel]) -> None:
    # Only the missing ones, one at a time: FerretDB 1.24 drops the connection when one
    # createIndexes command names several indexes that all exist already.
    existing = {index["name"] async for index in await collection.list_indexes()}
    for index in missing(existing, indexes):
        await collection.create_indexes([index])


class AsyncMongoChatMemoryRepository:
    """Stores conversations in MongoDB, one document per message.

    Works on MongoDB and on MongoDB wire-protocol servers without transactions or TTL
    indexes (FerretDB 1.x). An append is two round trips (reserve positions with ``$inc``,
    then insert the batch whole); a memory read (:meth:`find_window`) is one ``find`` that
    returns the system message and the window together, after the conversation document
    by ``_id`` (its stored expiry and position counter) with a TTL or the first time.
    Reads show a batch of messages appended together whole or not at all. With a TTL, on
    servers without TTL indexes each append then checks that a concurrent ``purge_expired``
    did not delete its conversation document (one more round trip).
    Summaries (:class:`~chatmem.repository.AsyncSummaryStore`) live in a third collection,
    ``<prefix>summaries``: each write inserts the next version, and a unique index lets one
    writer of a version win (FerretDB's filtered updates are not atomic).

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
        initialize_schema: ``"always"`` creates the indexes on first use; ``"never"`` leaves
            them to you (they are required).
        clock: Returns the current time, an aware UTC datetime; the stored expiry is
            computed and compared with it (the default is the system clock).
    """

    db_system: ClassVar[str] = "mongodb"
    """The OpenTelemetry ``db.system.name`` of this store."""

    def __init__(
        self,
        client: AsyncMongoClient[Document],
        *,
        database: str = "chatmem",
        collection_prefix: str = "chatmem_",
        ttl: timedelta | float | None = None,
        initialize_schema: InitializeSchema = "always",
        clock: Clock | None = None,
    ) -> None:
        if initialize_schema not in ("always", "never"):
            raise ConfigurationError(
                f"initialize_schema must be 'always' or 'never', got {initialize_schema!r}"
            )
        self._client = client
        self._owns_client = False
        self._url = "<client>"
        db = client[database]
        self._database = database
        self._messages: AsyncCollection = db[collection_prefix + "messages"]
        self._conversations: AsyncCollection = db[collection_prefix + "conversations"]
        self._ttl = normalize_ttl(ttl)
        self._summaries_collection: AsyncCollection = db[collection_prefix + "summaries"]
        self._expiry = AsyncExpiry(
            self._messages, self._conversations, self._ttl, clock, self._summaries_collection
        )
        self._batches = AsyncBatches(self._messages, self._conversations, self._expiry)
        self._summaries = AsyncSummaries(self._summaries_collection, self._expiry)
        self._ready_done = initialize_schema == "never"
        self._ready_lock = AsyncLock()
        # With the listener, a failed write knows whether it sent anything (see _errors).
        self._tracked = tracks_sent_commands(client)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncMongoChatMemoryRepository:
        """Create a repository that owns its client, from a ``mongodb://`` URL.

        A query parameter is one of chatmem's options
        (:class:`~chatmem_repositories.mongodb.MongoOptions`: ``database``,
        ``collection_prefix``, ``ttl``, ``initialize_schema``, ``connect_timeout``,
        ``read_timeout``) or a connection-string option in
        :data:`~chatmem_repositories.mongodb.DRIVER_PARAMETERS` (``replicaSet``, ``tls``...),
        which pymongo reads; anything else is an error naming it. Other ``MongoClient``
        arguments go in ``driver_options``. Timeouts are bounded (5 s to select a server or
        connect, 10 s per reply).

        Args:
            url: ``mongodb://[user:password@]host[:port][/database][?options]`` or
                ``mongodb+srv://...``.
            **options: chatmem's options (``clock`` too), declared driver parameters and
                ``driver_options={...}``; they win over the URL's.

        Raises:
            ConfigurationError: For an unknown option (naming it, with a suggestion) or a
                bad value.
        """
        settings = parse_url(url, options)
        with mapped_driver_errors():
            client: AsyncMongoClient[Document] = AsyncMongoClient(
                settings.url, **settings.client_options
            )
        repository = cls(
            client,
            database=settings.database,
            collection_prefix=settings.options.collection_prefix,
            ttl=settings.options.ttl,
            initialize_schema=settings.options.initialize_schema,
            clock=settings.options.clock,
        )
        repository._owns_client = True
        repository._url = settings.redacted_url
        return repository

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(url={self._url!r}, database={self._database!r}, "
            f"messages={self._messages.name!r})"
        )

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``"MongoDB 7.0.14"``.

        A MongoDB wire-protocol server that says what it is (FerretDB) is named with the
        MongoDB version it reports, as ``"FerretDB 1.24.0 (MongoDB 7.0.42)"``.
        """
        with mapped_driver_errors():
            return server_product(await self._client.admin.command("buildInfo"))

    @property
    def db_collection_name(self) -> str:
        """The messages collection's name, for telemetry's ``db.collection.name``."""
        return self._messages.name

    @property
    def native_ttl(self) -> bool:
        """Whether the server removes expired conversation documents itself (TTL index)."""
        return self._expiry.native_ttl

    # -- setup --------------------------------------------------------------------------------

    async def _ready(self) -> None:
        if self._ready_done:
            return
        async with self._ready_lock:
            if self._ready_done:
                return
            with mapped_driver_errors():
                await _ensure_indexes(self._messages, MESSAGE_INDEXES)
                await _ensure_indexes(self._conversations, CONVERSATION_INDEXES)
                await _ensure_indexes(self._summaries_collection, SUMMARY_INDEXES)
                if self._ttl is not None:
                    await self._expiry.create_index()
            self._ready_done = True

    # -- Spring AI's four methods -------------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        await self._ready()
        query: Document = {}
        if self._ttl is not None:
            query = {"$or": [{"expires_at": None}, {"expires_at": {"$gt": self._expiry.now()}}]}
        with mapped_driver_errors():
            documents = await self._conversations.find(query, projection={"_id": 1}).to_list(None)
        return [str(d["_id"]) for d in documents]

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors():
            query = await self._expiry.scope(conversation_id)
            if query is None:
                return []
            documents = whole_batches(await self._batches.documents(query, newest_first=False))
            return [stored_from_document(d, conversation_id).message for d in documents]

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired).

        The server counts the messages ``find_by_conversation_id`` shows (those of the
        current life, in whole batches) with one ``aggregate``; with a TTL, the conversation
        document is read first, as every read does.
        """
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors():
            query = await self._expiry.scope(conversation_id)
            return 0 if query is None else await self._batches.count(query)

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
        with mapped_driver_errors(write=True, tracked=self._tracked):
            await self._batches.write(conversation_id, messages, replace=True)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its messages; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            # Messages first: a crash in between leaves an empty conversation, not orphans.
            self._batches.forget(conversation_id)
            await self._messages.delete_many({"conversation_id": conversation_id})
            await self._conversations.delete_one({"_id": conversation_id})
            await self._summaries.delete(conversation_id)

    # -- log capabilities ---------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages; ids already stored in the conversation are skipped.

        Two round trips: ``find_one_and_update`` with ``$inc`` reserves a block of positions,
        then ``insert_many`` stores the documents. A writer that dies in between leaves unused
        positions (a gap), nothing else. Two writers appending the same message id: the
        unique ``(conversation_id, message_id)`` index lets exactly one store it.

        With ``expected_version``, the version is read first (two round trips) and nothing
        is written unless it matches; the batch then goes to the positions right after it,
        so the unique position index refuses it if another writer stored there meanwhile
        (see ``AsyncBatches._write_checked``).

        Raises:
            VersionConflictError: ``expected_version`` is given and is not the
                conversation's version; nothing was stored.
        """
        validate_conversation_id(conversation_id)
        if not messages:
            if expected_version is not None:
                await self._check_version(conversation_id, expected_version)
            return []
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            return await self._batches.write(
                conversation_id, messages, replace=False, expected_version=expected_version
            )

    async def _check_version(self, conversation_id: str, expected_version: int) -> None:
        actual = await self.find_version(conversation_id)
        if actual != expected_version:
            raise VersionConflictError(conversation_id, expected_version, actual)

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: 0 if it holds nothing (or expired).

        The newest stored position (events and system messages count), or the newest one
        ``delete_between`` deleted when that is higher: the conversation document by
        ``_id``, then one indexed lookup of the newest message.
        """
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors():
            return await self._batches.version(conversation_id)

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` chat messages, oldest first (one round trip).

        Chat messages are user, assistant and tool messages: system messages and events are
        left out.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        if before is not None:
            check_position(before)
        if limit == 0:
            return []
        await self._ready()
        with mapped_driver_errors():
            query = await self._expiry.scope(conversation_id)
            if query is None:
                return []
            query["type"] = {"$nin": UNWINDOWED}
            high = math.inf
            if before is not None:
                query["position"] = {"$lt": before}
                high = check_position(before) - 1
            documents = await self._batches.page(
                query, limit=limit, newest_first=True, high=high, chat_only=True
            )
            newest = [stored_from_document(d, conversation_id) for d in documents]
        newest.reverse()
        return newest

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` others, oldest first.

        What :meth:`find_system_message` and :meth:`find_recent` return, usually in two
        round trips: the conversation document by ``_id`` (its expiry, its life and its
        position counter), then one ``find`` of the messages near the counter and the
        system messages (see ``AsyncBatches.window``). Without a TTL, once this repository
        has written or read the conversation, the newest position it saw stands in for the
        counter and the read is that one ``find``. When the answer leaves the system
        message or part of the window unknown, one more query reads it.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        if limit == 0:
            return await self.find_system_message(conversation_id), []
        await self._ready()
        with mapped_driver_errors():
            hint = None if self._ttl is not None else self._batches.newest(conversation_id)
            counter: int | None = hint
            if hint is not None:
                query = await self._expiry.scope(conversation_id)
            else:
                query, counter = await self._expiry.scope_and_counter(conversation_id)
            if query is None:
                return None, []
            system, documents = await self._batches.window(conversation_id, query, limit, counter)
            window = [stored_from_document(d, conversation_id) for d in reversed(documents)]
            found = None if system is None else stored_from_document(system, conversation_id)
        return found, window

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest system message: one indexed lookup, no scan."""
        return await self.find_latest(conversation_id, MessageType.SYSTEM)

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``.

        One message, so its batch is not checked: a read of one type shows one member of a
        batch by design (and checking would cost a round trip on every memory read).
        """
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors():
            query = await self._expiry.scope(conversation_id)
            if query is None:
                return None
            query["type"] = MessageType(message_type).value
            found = await self._batches.documents(query, newest_first=True, limit=1)
            return stored_from_document(found[0], conversation_id) if found else None

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
            query["$or"] = [{"expires_at": None}, {"expires_at": {"$gt": self._expiry.now()}}]
        with mapped_driver_errors():
            documents = await self._conversations.find(
                query, projection={"_id": 1}, sort=[("_id", ASCENDING)], limit=limit + 1
            ).to_list(None)
        return conversation_page([str(d["_id"]) for d in documents], limit)

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
        (bounded by the conversation and the page size, not served by an index). With any of
        those filters, a page holding part of a batch costs one more query, which checks
        that the batch is whole.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        filters = history_filter(
            conversation_id, since=since, until=until, types=types, text=text, after=after
        )
        if limit == 0:
            return []
        await self._ready()
        with mapped_driver_errors():
            scope = await self._expiry.scope(conversation_id)
            if scope is None:
                return []
            filtered = any(f is not None for f in (since, until, types, text))
            documents = await self._batches.page(
                {**filters, **scope},
                limit=limit,
                newest_first=False,
                low=-math.inf if after is None else check_position(after) + 1,
                scope=scope if filtered else None,
            )
            return [stored_from_document(d, conversation_id) for d in documents]

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages positioned before ``position``.

        A batch this cuts keeps its system messages and its part from ``position`` on; they
        stay readable as single messages (one more round trip, an ``update``, before the
        delete).
        """
        validate_conversation_id(conversation_id)
        before = check_position(position)
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            query = await self._expiry.scope(conversation_id)
            return 0 if query is None else await self._batches.delete_before(query, before)

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete the user, assistant and tool messages positioned in ``(after, through]``.

        System messages and events are kept, as single messages where they belonged to a
        batch the range cuts (see ``AsyncBatches.delete_between``); the conversation
        document records the newest position deleted, so the version does not go back.
        """
        validate_conversation_id(conversation_id)
        low = None if after is None else check_position(after)
        high = check_position(through)
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            query = await self._expiry.scope(conversation_id)
            if query is None:
                return 0
            return await self._batches.delete_between(conversation_id, query, low, high)

    async def purge_expired(self) -> int:
        """Delete expired conversations and their messages; returns how many conversations.

        Needed where the server has no TTL index (FerretDB). With a TTL index the server
        removes conversation documents itself and this removes the messages they left.
        """
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            return await self._expiry.purge()

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary, or ``None``."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors():
            return await self._summaries.find(conversation_id)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version``."""
        validate_conversation_id(conversation_id)
        await self._ready()
        with mapped_driver_errors(write=True, tracked=self._tracked):
            return await self._summaries.save(conversation_id, text, covers, expected_version)

    async def aclose(self) -> None:
        """Close the client if this repository created it (from a URL)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncMongoChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
