"""The async Cassandra repository: a partition per conversation, TIMEUUID positions."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from cassandra.cluster import Session

from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._repository_support import check_limit, matches_history_filters
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import RepositoryError
from chatmem.messages import Message, MessageType
from chatmem_repositories._options import parse_options
from chatmem_repositories.cassandra._drivers import AsyncSessionAdapter, Row, ttl_seconds
from chatmem_repositories.cassandra._errors import BACKEND
from chatmem_repositories.cassandra._positions import (
    CLAIM_POSITION,
    decode_cursor,
    encode_cursor,
    listing_bucket,
    new_positions,
    parse_position,
    position_key,
)
from chatmem_repositories.cassandra._rows import (
    MAX_LIMIT,
    message_rows,
    stored,
    unique_by_id,
)
from chatmem_repositories.cassandra._schema import CHAT, SYSTEM, Cql
from chatmem_repositories.cassandra._settings import (
    CassandraOptions,
    check_identifier,
    parse_url,
)

__all__ = ["AsyncCassandraChatMemoryRepository"]

_PAGE = 200  # rows per slice when a read walks a partition


def _scope(owner: str | None) -> str:
    return "*" if owner is None else "@" + owner


class AsyncCassandraChatMemoryRepository:
    """Stores conversations in Apache Cassandra, one partition per conversation.

    Appends are one conditional batch (idempotent by message id), the memory window is one
    ``LIMIT`` slice, and the current system message sits in static columns. The connection
    is opened on first use.

    Example:
        ```python
        repository = AsyncCassandraChatMemoryRepository.from_url(
            "cassandra://127.0.0.1:9042/chat?create_keyspace=true&ttl=86400"
        )
        await repository.append("007", [UserMessage("My name is James Bond")])
        recent = await repository.find_recent("007", limit=10)
        await repository.aclose()
        ```

    Args:
        session: A connected driver session; the repository borrows it and never shuts it
            down. Use :meth:`from_url` to let the repository own its connection.
        keyspace: The keyspace of the tables.
        **options: See :class:`~chatmem_repositories.cassandra.CassandraOptions`.
    """

    def __init__(self, session: Session, *, keyspace: str, **options: Any) -> None:
        parsed = parse_options(CassandraOptions, {}, options, backend=BACKEND)
        cql = Cql(check_identifier(keyspace, "keyspace"), parsed.table_prefix)
        self._setup(AsyncSessionAdapter(cql, parsed, session=session), parsed)

    def _setup(self, db: AsyncSessionAdapter, options: CassandraOptions) -> None:
        self._db = db
        self._options = options
        self._ttl = ttl_seconds(options)
        self._buckets = options.listing_buckets

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncCassandraChatMemoryRepository:
        """Create a repository that owns its connection from a ``cassandra://`` URL.

        Args:
            url: ``cassandra://[user:password@]host1,host2[:port]/keyspace?option=value``.
            **options: Options; they win over the URL's.

        Raises:
            ConfigurationError: For a malformed URL or an unknown or invalid option.
        """
        settings, parsed = parse_url(url, options)
        repository = cls.__new__(cls)
        cql = Cql(settings.keyspace, parsed.table_prefix)
        repository._setup(AsyncSessionAdapter(cql, parsed, settings=settings), parsed)
        return repository

    def __repr__(self) -> str:
        where = self._db.settings.hosts if self._db.settings else "borrowed session"
        return f"{type(self).__name__}(hosts={where!r}, keyspace={self._db.cql.keyspace!r})"

    async def _ready(self) -> AsyncSessionAdapter:
        await self._db.setup()
        return self._db

    # -- Spring AI's four methods -----------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations (pages through the listing)."""
        ids: list[str] = []
        cursor = None
        while True:
            page = await self.list_conversations(limit=1000, cursor=cursor)
            ids += page.conversation_ids
            cursor = page.next_cursor
            if cursor is None:
                return ids

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        history = await self._scan_forward(conversation_id, None, MAX_LIMIT, None)
        return [s.message for s in history]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages in one single-partition batch."""
        validate_conversation_id(conversation_id)
        if not messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        db = await self._ready()
        unique = unique_by_id(messages)
        owner = owner_of(conversation_id)
        # The partition tombstone gets an older timestamp than the new rows, which take the
        # batch's (later) timestamp from the same monotonic generator: they survive it.
        items: list[tuple[str, Sequence[Any]]] = [("drop", (db.timestamp(), conversation_id))]
        items += message_rows(
            conversation_id, owner, unique, new_positions(len(unique)), self._ttl, conditional=False
        )
        await db.execute_all([db.batch(items), self._listing(db, conversation_id)], write=True)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its listing rows; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        db = await self._ready()
        timestamp = db.timestamp()
        bucket = listing_bucket(conversation_id, self._buckets)
        items: list[tuple[str, Sequence[Any]]] = [("drop", (timestamp, conversation_id))]
        for scope in {_scope(None), _scope(owner_of(conversation_id))}:
            items.append(("unlist", (timestamp, scope, bucket, conversation_id)))
        await db.execute(db.batch(items), write=True)

    # -- log capabilities ---------------------------------------------------------------------

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        """Append messages in one conditional batch; ids already stored are skipped.

        The batch claims each message id with ``IF NOT EXISTS`` and writes the rows in the
        same partition, so it commits whole or not at all. When a claim fails the batch is
        retried without the ids already stored (one more round trip, only for retries).
        """
        validate_conversation_id(conversation_id)
        pending = unique_by_id(messages)
        if not pending:
            return []
        db = await self._ready()
        owner = owner_of(conversation_id)
        while pending:
            positions = new_positions(len(pending))
            batch = db.batch(
                message_rows(
                    conversation_id, owner, pending, positions, self._ttl, conditional=True
                )
            )
            result, _ = await db.execute_all(
                [batch, self._listing(db, conversation_id)], write=True
            )
            if result and result[0].get("[applied]"):
                return [StoredMessage(str(p), m) for m, p in zip(pending, positions, strict=True)]
            taken = {row.get("message_id") for row in result}
            remaining = [m for m in pending if m.id not in taken]
            if len(remaining) == len(pending):
                raise RepositoryError(
                    "Cassandra rejected the append without naming a stored message id",
                    backend=BACKEND,
                )
            pending = remaining
        return []

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` non-system messages, oldest first (one slice)."""
        validate_conversation_id(conversation_id)
        check_limit(limit)
        cutoff = None if before is None else parse_position(before)
        if limit == 0:
            return []
        rows = await self._slice_back(conversation_id, CHAT, cutoff, min(limit, MAX_LIMIT))
        return [stored(conversation_id, r["position"], r["data"]) for r in reversed(rows)]

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message from the partition's static columns."""
        validate_conversation_id(conversation_id)
        db = await self._ready()
        rows = await db.execute(db.bind("current_system", (conversation_id,)))
        if not rows or rows[0]["system_position"] is None:
            return None
        return stored(conversation_id, rows[0]["system_position"], rows[0]["system_data"])

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, walking back from the newest."""
        validate_conversation_id(conversation_id)
        wanted = MessageType(message_type)
        section = SYSTEM if wanted is MessageType.SYSTEM else CHAT
        cutoff = None
        while True:
            rows = await self._slice_back(conversation_id, section, cutoff, _PAGE)
            for row in rows:
                if row["type"] == wanted.value:
                    return stored(conversation_id, row["position"], row["data"])
            if len(rows) < _PAGE:
                return None
            cutoff = rows[-1]["position"]

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of conversation ids, walking the listing buckets in order."""
        check_limit(limit)
        bucket, after = (0, "") if cursor is None else decode_cursor(cursor, self._buckets)
        if limit == 0:
            return ConversationPage([], None)
        db = await self._ready()
        found: list[tuple[int, str]] = []
        wanted = min(limit, MAX_LIMIT - 1) + 1  # one more than the page tells if more exist
        while bucket < self._buckets and len(found) < wanted:
            rows = await db.execute(
                db.bind("list", (_scope(owner), bucket, after, wanted - len(found)))
            )
            found += [(bucket, r["conversation_id"]) for r in rows]
            bucket, after = bucket + 1, ""
        page = found[:limit]
        more = len(found) > limit
        return ConversationPage(
            [cid for _, cid in page], encode_cursor(*page[-1]) if more and page else None
        )

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every given filter, oldest first."""
        validate_conversation_id(conversation_id)
        check_limit(limit)
        start = None if after is None else parse_position(after)
        if limit == 0:
            return []

        def keep(message: Message) -> bool:
            return matches_history_filters(message, since, until, types, text)

        return await self._scan_forward(conversation_id, start, limit, keep)

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete non-system messages positioned before ``position`` (a range tombstone)."""
        validate_conversation_id(conversation_id)
        cutoff = parse_position(position)
        db = await self._ready()
        rows = await db.execute(db.bind("count_before", (conversation_id, CHAT, cutoff)))
        count = int(rows[0]["count"]) if rows else 0
        if count:
            await db.execute(db.bind("delete_before", (conversation_id, CHAT, cutoff)), write=True)
        return count

    async def purge_expired(self) -> int:
        """Return 0: Cassandra expires data itself (``USING TTL``)."""
        return 0

    async def aclose(self) -> None:
        """Shut down the cluster connection if this repository opened it."""
        await self._db.aclose()

    async def __aenter__(self) -> AsyncCassandraChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- helpers ---------------------------------------------------------------------------------

    def _listing(self, db: AsyncSessionAdapter, conversation_id: str) -> Any:
        bucket = listing_bucket(conversation_id, self._buckets)
        scopes = {_scope(None), _scope(owner_of(conversation_id))}
        return db.batch(
            [("list_row", (scope, bucket, conversation_id, self._ttl)) for scope in scopes],
            logged=False,
        )

    async def _slice_back(
        self, conversation_id: str, section: str, before: uuid.UUID | None, limit: int
    ) -> list[Row]:
        db = await self._ready()
        if before is None:
            statement = db.bind("recent", (conversation_id, section, limit))
        else:
            statement = db.bind("recent_before", (conversation_id, section, before, limit))
        return await db.execute(statement)

    async def _scan_forward(
        self, conversation_id: str, after: uuid.UUID | None, limit: int, keep: Any
    ) -> list[StoredMessage]:
        """Merge the chat and system sections in position order, from ``after`` on."""
        db = await self._ready()
        cursors = {CHAT: after or CLAIM_POSITION, SYSTEM: after or CLAIM_POSITION}
        buffers: dict[str, list[Row]] = {CHAT: [], SYSTEM: []}
        done: set[str] = set()
        found: list[StoredMessage] = []
        while len(found) < limit:
            for section in (CHAT, SYSTEM):
                if not buffers[section] and section not in done:
                    rows = await db.execute(
                        db.bind("forward", (conversation_id, section, cursors[section], _PAGE))
                    )
                    buffers[section] = rows
                    if len(rows) < _PAGE:
                        done.add(section)
                    if rows:
                        cursors[section] = rows[-1]["position"]
            heads = [s for s in (CHAT, SYSTEM) if buffers[s]]
            if not heads:
                break
            section = min(heads, key=lambda s: position_key(buffers[s][0]["position"]))
            row = buffers[section].pop(0)
            item = stored(conversation_id, row["position"], row["data"])
            if keep is None or keep(item.message):
                found.append(item)
        return found
