"""The async Cassandra repository: a partition per conversation, counter positions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from cassandra.cluster import Cluster, Session
from cassandra.query import SimpleStatement

from chatmem.backend import (
    ConversationPage,
    InitializeSchema,
    Position,
    StoredMessage,
    check_limit,
    matches_history_filters,
    parse_url_options,
    unique_by_id,
)
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import VersionConflictError
from chatmem.messages import Message, MessageType
from chatmem.repository import ConversationSummary
from chatmem_repositories.cassandra._async.conditional import (
    AsyncConditionalWrites,
    listing_scope,
)
from chatmem_repositories.cassandra._async.summaries import AsyncSummaries
from chatmem_repositories.cassandra._codec import (
    CLAIM_POSITION,
    MAX_LIMIT,
    decode_cursor,
    encode_cursor,
    listing_bucket,
    parse_position,
    stored,
)
from chatmem_repositories.cassandra._drivers import (
    AsyncSessionAdapter,
    LazyCluster,
    Row,
    ttl_seconds,
)
from chatmem_repositories.cassandra._options import (
    BACKEND,
    CassandraOptions,
    Consistency,
    SerialConsistency,
    check_identifier,
    parse_url,
)
from chatmem_repositories.cassandra._schema import (
    CHAT,
    EVENTS,
    MESSAGE_SECTIONS,
    SYSTEM,
    TRACKED,
    Cql,
)

__all__ = ["AsyncCassandraChatMemoryRepository"]

_PAGE = 200  # rows per slice when a read walks a partition


class AsyncCassandraChatMemoryRepository:
    """Stores conversations in Apache Cassandra, one partition per conversation.

    Appends are one conditional batch (idempotent by message id) that takes its positions
    from a per-conversation counter under Paxos, so the order of messages is the order in
    which Cassandra accepted them, never a clock's. ``save_all`` and the deletes are
    conditional batches too, so they remove exactly what was appended before them. The
    memory window and the current system message (static columns) are one ``LIMIT``
    query. With a ``ttl``, a conversation lives while it is appended to and expires whole
    ``ttl`` after its last append (see ``docs/backends/cassandra.md``). A summarizing
    memory's running summary (:class:`~chatmem.repository.AsyncSummaryStore`) is kept in
    static columns of the conversation's partition and written under Paxos, so it goes with
    the conversation. The connection is opened on first use.

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
        session: A connected driver session, a ``Cluster`` to connect on first use, or a
            callable that builds one on first use; the repository borrows a session or
            cluster and never shuts it down. Use :meth:`from_url` to let the
            repository own its connection.
        keyspace: The keyspace of the tables.
        ttl: Expire a conversation this long after its last append (seconds or a timedelta);
            ``None`` keeps it forever.
        table_prefix: Prefix of the table names (a lowercase letter, then up to 30
            lowercase letters, digits or ``_``).
        initialize_schema: ``"always"`` creates the tables if missing; ``"never"`` does not.
        create_keyspace: Create the keyspace if it does not exist.
        replication_factor: Replication factor of a created keyspace (SimpleStrategy).
        replication: ``dc1:3,dc2:3`` creates the keyspace with NetworkTopologyStrategy.
        listing_buckets: Partitions the conversation listing is spread over.
        read_consistency: Consistency level of reads.
        write_consistency: Consistency level of writes.
        serial_consistency: Consistency level of the Paxos phase of writes.
        read_timeout: How long to wait for one statement's answer (seconds or a timedelta).

    Raises:
        ConfigurationError: For a bad keyspace or option value.
    """

    db_system: ClassVar[str] = "cassandra"
    """The OpenTelemetry ``db.system.name`` of this store."""

    def __init__(
        self,
        session: Session | Cluster | Callable[[], Cluster],
        *,
        keyspace: str,
        ttl: timedelta | float | None = None,
        table_prefix: str = "chatmem_",
        initialize_schema: InitializeSchema = "always",
        create_keyspace: bool = False,
        replication_factor: int = 1,
        replication: str | None = None,
        listing_buckets: int = 16,
        read_consistency: Consistency = "LOCAL_QUORUM",
        write_consistency: Consistency = "LOCAL_QUORUM",
        serial_consistency: SerialConsistency = "LOCAL_SERIAL",
        read_timeout: timedelta | float = 10.0,
    ) -> None:
        options = parse_url_options(
            CassandraOptions,
            "",
            {
                "ttl": ttl,
                "table_prefix": table_prefix,
                "initialize_schema": initialize_schema,
                "create_keyspace": create_keyspace,
                "replication_factor": replication_factor,
                "replication": replication,
                "listing_buckets": listing_buckets,
                "read_consistency": read_consistency,
                "write_consistency": write_consistency,
                "serial_consistency": serial_consistency,
                "read_timeout": read_timeout,
            },
            backend=BACKEND,
        ).options
        cql = Cql(check_identifier(keyspace, "keyspace"), options.table_prefix)
        self._db = AsyncSessionAdapter(cql, options, session, owned=False)
        self._options = options
        self._ttl = ttl_seconds(options)
        self._buckets = options.listing_buckets
        # An append keeps re-sending for up to read_timeout while other writers win.
        self._writes = AsyncConditionalWrites(
            self._ttl, self._buckets, options.read_timeout.total_seconds()
        )
        self._next = self._writes.next
        self._summaries = AsyncSummaries(self._ttl)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncCassandraChatMemoryRepository:
        """Create a repository that owns its connection from a ``cassandra://`` URL.

        The connection is opened on first use.

        Args:
            url: ``cassandra://[user:password@]host1,host2[:port]/keyspace?option=value``.
            **options: Options of :class:`~chatmem_repositories.cassandra.CassandraOptions`
                (they win over the URL's), and ``driver_options``, a mapping of further
                ``cassandra.cluster.Cluster`` arguments.

        Raises:
            ConfigurationError: For a malformed URL or an unknown or invalid option.
        """
        settings, parsed, driver_options = parse_url(url, options)
        chosen = parsed.model_dump(exclude={"local_datacenter", "connect_timeout"})
        cluster = LazyCluster(settings, parsed, driver_options)
        repository = cls(cluster, keyspace=settings.keyspace, **chosen)
        repository._db.owns_session = True
        return repository

    def __repr__(self) -> str:
        hosts = self._db.ref.hosts()
        return f"{type(self).__name__}(hosts={hosts!r}, keyspace={self._db.cql.keyspace!r})"

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

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired).

        One ``SELECT COUNT(position)`` of the partition's message rows (chat, events and
        system messages; not the id claims), counted by the server; with a TTL, an expired
        life's rows (not yet dropped) count as none.
        """
        validate_conversation_id(conversation_id)
        db = await self._ready()
        rows = await db.execute(db.bind("count", (conversation_id,)))
        if not rows or self._expired(rows):
            return 0
        return int(rows[0]["count"])

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages in one conditional batch.

        The batch clears the partition and writes the new messages at the positions after
        the last one handed out, with the counter after them, ``IF`` the counter is the one
        this process last saw (a stale guess costs one more round), so positions are never
        reused and the version grows. Paxos orders it with the appends, so it replaces
        exactly the messages appended before it, whatever this process's clock says.
        """
        validate_conversation_id(conversation_id)
        if not messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        db = await self._ready()
        unique = unique_by_id(messages)
        async with self._writes.locks.hold(conversation_id):
            await self._writes.replace(db, conversation_id, unique)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its listing rows; unknown ids are ignored.

        The partition is deleted by a conditional batch, so Paxos orders the delete with the
        appends: it removes every message appended before it and none appended after it,
        whatever this process's clock says. The listing rows are deleted alongside.
        """
        validate_conversation_id(conversation_id)
        db = await self._ready()
        timestamp = db.timestamp()
        bucket = listing_bucket(conversation_id, self._buckets)
        scopes = {listing_scope(None), listing_scope(owner_of(conversation_id)), TRACKED}
        unlist = db.batch(
            [("unlist", (timestamp, scope, bucket, conversation_id)) for scope in scopes]
        )
        items = [("clear", (conversation_id,)), ("forget", (conversation_id,))]
        async with self._writes.locks.hold(conversation_id):
            self._next.set(conversation_id, None)
            await self._writes.in_order(db, items, unlist)

    # -- log capabilities ---------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages in one conditional batch; ids already stored are skipped.

        The batch claims each message id with ``IF NOT EXISTS``, advances the conversation's
        position counter ``IF next_position = <the value this process last saw>`` and writes
        the rows at the positions it counts off, all in one partition: it commits whole or
        not at all, and Paxos places it after every append acknowledged before it, whatever
        the writers' clocks say. When a condition fails, Cassandra answers with the current
        counter and the ids already stored, and the batch is sent again with those: one more
        round trip, when another process appended since this one last read or wrote the
        conversation, or when a retried message is already stored.

        With a TTL the batch also re-writes the liveness cell ``IF alive = true``. The first
        append of a conversation finds it unset and sends a second batch ``IF alive = null``
        that starts the conversation; after an expiry, the expired data is deleted first.

        With ``expected_version`` the counter condition is the version's (``IF next_position
        = <version + 1>``, or unset for version 0) instead of the last value seen: the same
        one batch, which stores nothing when the conversation moved on.

        Raises:
            VersionConflictError: The conversation is not at ``expected_version``; nothing
                was stored.
        """
        validate_conversation_id(conversation_id)
        pending = unique_by_id(messages)
        if expected_version is not None:
            return await self._append_checked(conversation_id, pending, expected_version)
        if not pending:
            return []
        db = await self._ready()
        async with self._writes.locks.hold(conversation_id):
            return await self._writes.append(db, conversation_id, pending)

    async def _append_checked(
        self, conversation_id: str, pending: list[Message], version: int
    ) -> list[StoredMessage]:
        if not pending:  # nothing to store: the version is only checked
            actual = await self.find_version(conversation_id)
            if actual != version:
                raise VersionConflictError(conversation_id, version, actual)
            return []
        db = await self._ready()
        async with self._writes.locks.hold(conversation_id):
            return await self._writes.append_checked(db, conversation_id, pending, version)

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: the last position handed out, or 0.

        One single-row read of the partition's static counter (``next_position - 1``); 0
        when the conversation does not exist or, with a TTL, has expired. Every append that
        stores something and every ``save_all`` advance it; the deletes of messages keep it.
        """
        validate_conversation_id(conversation_id)
        db = await self._ready()
        rows = await db.execute(db.bind("version", (conversation_id,)))
        if not rows or self._expired(rows) or rows[0]["next_position"] is None:
            return 0
        self._next.observe(conversation_id, rows[0]["next_position"])
        return int(rows[0]["next_position"]) - 1

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the system message and the newest ``limit`` user, assistant and tool messages.

        One query: the head of the partition is the chat section, newest first, and every
        row carries the static columns that hold the current system message (events, in
        their own section, are never part of the window). The same
        answer as ``find_system_message`` plus ``find_recent(limit)``, in one round trip.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        db = await self._ready()
        rows = await db.execute(db.bind("window", (conversation_id, max(1, min(limit, MAX_LIMIT)))))
        if not rows or self._expired(rows):
            return None, []
        head = rows[0]
        self._next.observe(conversation_id, head["next_position"])
        system = None
        if head["system_position"] is not None:
            system = stored(conversation_id, head["system_position"], head["system_data"])
        chat = [row for row in rows if row["section"] == CHAT][:limit]
        return system, [stored(conversation_id, r["position"], r["data"]) for r in reversed(chat)]

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first.

        One slice of the chat section: system messages and events are kept in their own.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        cutoff = None if before is None else parse_position(before)
        if limit == 0:
            return []
        rows = await self._slice_back(conversation_id, CHAT, cutoff, min(limit, MAX_LIMIT))
        if self._expired(rows):
            return []
        return [stored(conversation_id, r["position"], r["data"]) for r in reversed(rows)]

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the current system message from the partition's static columns."""
        validate_conversation_id(conversation_id)
        db = await self._ready()
        rows = await db.execute(db.bind("current_system", (conversation_id,)))
        if rows and not self._expired(rows):
            self._next.observe(conversation_id, rows[0]["next_position"])
        if not rows or rows[0]["system_position"] is None or self._expired(rows):
            return None
        return stored(conversation_id, rows[0]["system_position"], rows[0]["system_data"])

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, walking back from the newest."""
        validate_conversation_id(conversation_id)
        wanted = MessageType(message_type)
        section = {MessageType.SYSTEM: SYSTEM, MessageType.EVENT: EVENTS}.get(wanted, CHAT)
        cutoff = None
        while True:
            rows = await self._slice_back(conversation_id, section, cutoff, _PAGE)
            if self._expired(rows):
                return None
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
                db.bind("list", (listing_scope(owner), bucket, after, wanted - len(found)))
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
        """Delete user, assistant and tool messages positioned before ``position``.

        Counts them, then deletes the range in a conditional batch that Paxos orders with
        the appends, so messages appended after it stay even when ``position`` is past
        the newest message, whatever this process's clock says. The batch applies only
        while the conversation exists (with a TTL, while it is alive); otherwise nothing
        is deleted and 0 is returned. The count is the one made just before the delete.
        System messages and events, in their own sections, are kept; so are the id claims.
        """
        validate_conversation_id(conversation_id)
        cutoff = parse_position(position)
        return await self._delete_chat(conversation_id, "_before", (cutoff,))

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete user, assistant and tool messages positioned in ``(after, through]``.

        One range of the chat section, counted and then deleted like ``delete_before``'s
        (a conditional batch, so Paxos orders it with the appends). System messages and
        events are in their own sections and stay; the current system message's static
        columns and the id claims are untouched, and the counter (the version) is kept.
        """
        validate_conversation_id(conversation_id)
        low = CLAIM_POSITION if after is None else parse_position(after)
        high = parse_position(through)
        if high <= low:
            return 0
        return await self._delete_chat(conversation_id, "_between", (low, high))

    async def purge_expired(self) -> int:
        """Delete the data of conversations whose TTL has passed.

        Reads and listings already ignore them (their liveness cell and listing rows expired
        natively); this reclaims the space of those never appended to again. It walks the
        tracking rows (one query per page of conversations, plus one read per conversation,
        sent together).

        Returns:
            How many expired conversations were deleted.
        """
        db = await self._ready()
        purged = 0
        for bucket in range(self._buckets):
            after = ""
            while True:
                rows = await db.execute(db.bind("list", (TRACKED, bucket, after, _PAGE)))
                ids = [row["conversation_id"] for row in rows]
                states = await db.execute_all([db.bind("touched_at", (c,)) for c in ids])
                for conversation_id, state in zip(ids, states, strict=True):
                    if state and state[0]["alive"] is not None:
                        continue  # still alive
                    touched_at = state[0]["touched_at"] if state else None
                    if touched_at is not None:
                        await self._writes.drop_expired(db, conversation_id)
                        purged += 1
                    # A later append writes its tracking row with a later timestamp.
                    stamp = touched_at if touched_at is not None else db.timestamp()
                    await db.execute(
                        db.bind("unlist", (stamp, TRACKED, bucket, conversation_id)), write=True
                    )
                if len(rows) < _PAGE:
                    break
                after = ids[-1]
        return purged

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary, or ``None`` (also while it is expired).

        One single-row read of the partition's static columns.
        """
        validate_conversation_id(conversation_id)
        db = await self._ready()
        return await self._summaries.find(db, conversation_id)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version``.

        One conditional update of the partition's static columns (a Paxos round): ``IF
        summary_version = ?``, and the conversation exists (with a TTL: is alive). A
        conversation that does not exist gets no summary, so this returns ``False``.
        ``save_all`` and the deletes remove the summary with the messages.

        Raises:
            ConfigurationError: If ``covers`` is not a position of this repository.
        """
        validate_conversation_id(conversation_id)
        db = await self._ready()
        return await self._summaries.save(db, conversation_id, text, covers, expected_version)

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``Apache Cassandra 5.0.2``."""
        db = await self._ready()
        rows = await db.execute(SimpleStatement("SELECT release_version FROM system.local"))
        version = rows[0]["release_version"] if rows else "unknown version"
        return f"Apache Cassandra {version}"

    async def aclose(self) -> None:
        """Shut down the cluster connection if this repository opened it."""
        await self._db.aclose()

    async def __aenter__(self) -> AsyncCassandraChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- helpers ---------------------------------------------------------------------------------

    async def _delete_chat(self, conversation_id: str, bounds: str, values: tuple[int, ...]) -> int:
        """Count, then delete, one range of the chat section (``bounds``: its statements)."""
        db = await self._ready()
        key = (conversation_id, CHAT, *values)
        rows = await db.execute(db.bind("count" + bounds, key))
        count = int(rows[0]["count"]) if rows else 0
        if not count:
            return 0
        exists = "mark_live" if self._ttl else "mark"
        items = [("clear" + bounds, key), (exists, (conversation_id,))]
        result = await self._writes.in_order(db, items)
        return count if result and result[0].get("[applied]") else 0

    def _expired(self, rows: Sequence[Row]) -> bool:
        """Whether rows (each carrying the static columns) belong to an expired life."""
        return bool(self._ttl) and bool(rows) and rows[0].get("alive") is None

    async def _slice_back(
        self, conversation_id: str, section: str, before: int | None, limit: int
    ) -> list[Row]:
        db = await self._ready()
        if before is None:
            statement = db.bind("recent", (conversation_id, section, limit))
        else:
            statement = db.bind("recent_before", (conversation_id, section, before, limit))
        return await db.execute(statement)

    async def _scan_forward(
        self, conversation_id: str, after: int | None, limit: int, keep: Any
    ) -> list[StoredMessage]:
        """Merge the message sections in position order, from ``after`` on.

        The first page of every section is one query: a single-partition read is isolated
        from a single-partition batch, so a history that fits in it is never seen with
        part of an append or a delete. Longer histories are read a page at a time.
        """
        db = await self._ready()
        start = CLAIM_POSITION if after is None else after
        rows = await db.execute(db.bind("forward_all", (conversation_id, start, _PAGE)))
        if self._expired(rows):
            return []
        buffers = {s: [row for row in rows if row["section"] == s] for s in MESSAGE_SECTIONS}
        cursors = {s: buffers[s][-1]["position"] if buffers[s] else start for s in buffers}
        done: set[str] = set(MESSAGE_SECTIONS)
        if len(rows) == _PAGE:
            # The page is in section order: the sections before the one it ended in are whole.
            done = set(MESSAGE_SECTIONS[: MESSAGE_SECTIONS.index(rows[-1]["section"])])
        found: list[StoredMessage] = []
        while len(found) < limit:
            for section in MESSAGE_SECTIONS:
                if not buffers[section] and section not in done:
                    rows = await db.execute(
                        db.bind("forward", (conversation_id, section, cursors[section], _PAGE))
                    )
                    if self._expired(rows):
                        return []
                    buffers[section] = rows
                    if len(rows) < _PAGE:
                        done.add(section)
                    if rows:
                        cursors[section] = rows[-1]["position"]
            heads = [s for s in MESSAGE_SECTIONS if buffers[s]]
            if not heads:
                break
            section = min(heads, key=lambda s: buffers[s][0]["position"])
            row = buffers[section].pop(0)
            item = stored(conversation_id, row["position"], row["data"])
            if keep is None or keep(item.message):
                found.append(item)
        return found
