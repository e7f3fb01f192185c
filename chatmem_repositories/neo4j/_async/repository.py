"""The Neo4j repository over the driver's async API."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, LiteralString

from neo4j import AsyncDriver, AsyncGraphDatabase

from chatmem.backend import (
    Clock,
    ConversationPage,
    InitializeSchema,
    Position,
    StoredMessage,
    check_clock,
    check_initialize_schema,
    check_limit,
    conversation_page,
    epoch_micros,
    normalize_ttl,
    unique_by_id,
)
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import Message, MessageType
from chatmem.repository import ConversationSummary
from chatmem_repositories.neo4j._async.runner import AsyncStatementRunner, seconds
from chatmem_repositories.neo4j._codec import (
    FIRST_POSITION,
    NO_POSITION,
    check_position,
    message_params,
    stored_messages,
    ttl_millis,
)
from chatmem_repositories.neo4j._cypher import Statements
from chatmem_repositories.neo4j._errors import (
    DRIVER_ERRORS,
    map_driver_error,
)
from chatmem_repositories.neo4j._options import parse_url

__all__ = ["AsyncNeo4jChatMemoryRepository"]

_PURGE_BATCH = 500


def _stored_of(batch: Sequence[Message], stored: list[list[Any]]) -> list[StoredMessage]:
    """Pair an append's ``[message id, position]`` rows with the batch's messages."""
    by_id = {m.id: m for m in batch}
    return [StoredMessage(position, by_id[message_id]) for message_id, position in stored]


class AsyncNeo4jChatMemoryRepository:
    """Stores conversations as a graph in Neo4j 5, through the official async driver.

    ``(:Conversation {id, owner, generation, next_position, ...})-[:HAS_MESSAGE]->
    (:Message {generation, position, type, data, ...})``. An append is one statement (one
    round trip) that locks the conversation node, takes its counter and creates the new
    messages; a memory read (:meth:`find_window`) is one statement too. Reads go through
    composite indexes that start with the conversation id, so their cost does not grow with
    history. Deleting or replacing a conversation bumps its generation atomically and then
    removes the old messages in batches. A running summary
    (:class:`~chatmem.repository.AsyncSummaryStore`) is kept on the conversation node and
    written with a compare-and-set under the node's write lock.

    Example:
        ```python
        repository = AsyncNeo4jChatMemoryRepository.from_url("bolt://localhost:7687")
        await repository.append("007", [UserMessage("My name is James Bond")])
        recent = await repository.find_recent("007", limit=10)
        await repository.aclose()
        ```

    Args:
        driver: A driver to use. The repository does not close it.
        database: Database name; ``None`` uses the server's home database.
        label_prefix: Prepended to the ``Conversation`` and ``Message`` labels.
        ttl: Expire a conversation this long after its last write. ``None`` keeps it forever.
        initialize_schema: ``"always"`` creates the constraints and indexes on first use;
            ``"never"`` expects them to exist.
        retry_time: How long a statement is retried after transient errors (deadlocks, a
            lost connection) before the error is raised; seconds or a timedelta.
        read_timeout: How long one statement may wait for the server's answer before its
            connection is closed and a timeout raised; seconds, a timedelta, or ``None`` to
            rely on the driver (which waits until the server's keep-alive hint, if any).
        clock: Where expiry reads "now" (a callable returning an aware datetime). ``None``,
            the default, uses the server's clock (Cypher's ``timestamp()``), so every
            application server agrees; tests pass :class:`chatmem.testing.ManualClock` to
            step over a TTL instead of sleeping.
    """

    db_system: ClassVar[str] = "neo4j"
    """The OpenTelemetry ``db.system.name`` of this store."""

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str | None = None,
        label_prefix: str = "",
        ttl: timedelta | float | None = None,
        initialize_schema: InitializeSchema = "always",
        retry_time: timedelta | float = 10.0,
        read_timeout: timedelta | float | None = 30.0,
        clock: Clock | None = None,
    ) -> None:
        self._statements = Statements.for_prefix(label_prefix)
        self._driver = driver
        self._ttl_ms = ttl_millis(normalize_ttl(ttl))
        create = check_initialize_schema(initialize_schema)
        self._runner = AsyncStatementRunner(
            driver,
            database=database,
            schema=self._statements.schema,
            initialize=create,
            retry_seconds=float(seconds(retry_time) or 0.0),
            read_timeout=seconds(read_timeout),
            clock=None if clock is None else check_clock(clock),
        )
        self._owns_driver = False
        self._description = f"database={database!r}, label_prefix={label_prefix!r}"

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, **options: Any
    ) -> AsyncNeo4jChatMemoryRepository:
        """Create a repository that owns a new driver.

        Args:
            url: ``neo4j://``, ``bolt://`` (or their ``+s``/``+ssc`` forms), with optional
                ``user:password@``, ``/database`` and query options.
            **options: Options (see :class:`~chatmem_repositories.neo4j.Neo4jOptions`);
                they win over the URL's query string. ``driver_options``, a mapping, holds
                further ``GraphDatabase.driver`` arguments.
            clock: Where expiry reads "now"; ``None`` uses the server's clock.

        Raises:
            ConfigurationError: For a bad URL, an unknown option or a bad value.
        """
        settings = parse_url(url, options)
        driver = AsyncGraphDatabase.driver(settings.uri, auth=settings.auth, **settings.config)
        parsed = settings.options
        repository = cls(
            driver,
            database=parsed.database,
            label_prefix=parsed.label_prefix,
            ttl=parsed.ttl,
            initialize_schema=parsed.initialize_schema,
            retry_time=parsed.max_transaction_retry_time,
            read_timeout=parsed.read_timeout,
            clock=clock,
        )
        repository._owns_driver = True
        repository._description = f"url={settings.redacted_url!r}, " + repository._description
        return repository

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._description})"

    # -- plumbing ---------------------------------------------------------------------------

    async def _window(
        self, conversation_id: str, limit: int, *, system: bool, before: int = NO_POSITION
    ) -> list[StoredMessage]:
        params = {"cid": conversation_id, "is_system": system, "before": before, "limit": limit}
        records = await self._runner.read("window read", self._statements.window, params)
        return stored_messages(conversation_id, records[0][0] if records else [], reverse=True)

    # -- Spring AI's four methods -----------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations."""
        ids: list[str] = []
        cursor: str | None = None
        while True:
            page = await self.list_conversations(limit=1000, cursor=cursor)
            ids += page.conversation_ids
            cursor = page.next_cursor
            if cursor is None:
                return ids

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        validate_conversation_id(conversation_id)
        params = self._history_params(conversation_id, limit=NO_POSITION)
        rows = await self._runner.read("read", self._statements.history, params)
        return [s.message for s in stored_messages(conversation_id, rows)]

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired).

        One statement: the server counts the live conversation's messages of its current
        generation, as the history read finds them (through the same index).
        """
        validate_conversation_id(conversation_id)
        params = {"cid": conversation_id, "after": FIRST_POSITION}
        rows = await self._runner.read("count", self._statements.count, params)
        return int(rows[0][0]) if rows else 0

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages atomically; empty deletes it.

        The new messages become visible in one transaction; the old ones are then removed
        in batches.
        """
        validate_conversation_id(conversation_id)
        if not messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        params = self._append_params(conversation_id, messages)
        await self._runner.write_messages("save_all", self._statements.replace, params)
        await self._sweep(conversation_id)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its messages; unknown ids are ignored.

        The conversation disappears in one transaction; its messages are then removed in
        batches (a crash in between leaves invisible leftovers that ``purge_expired``
        removes).
        """
        validate_conversation_id(conversation_id)
        rows = await self._runner.write("delete", self._statements.delete, {"cid": conversation_id})
        if rows:
            await self._sweep(conversation_id)

    async def _sweep(self, conversation_id: str) -> None:
        params = {"cid": conversation_id}
        await self._runner.write("cleanup", self._statements.sweep, params)
        await self._runner.write("cleanup", self._statements.drop_tombstone, params)

    # -- log capabilities ---------------------------------------------------------------------

    def _append_params(self, conversation_id: str, messages: Sequence[Message]) -> dict[str, Any]:
        return {
            "cid": conversation_id,
            "owner": owner_of(conversation_id),
            "ttl_ms": self._ttl_ms,
            "messages": [message_params(m) for m in unique_by_id(messages)],
        }

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages in one write transaction; ids already stored are skipped.

        With ``expected_version`` the same statement compares the conversation's version
        under its lock first (see ``_cypher``): still one round trip.

        Raises:
            VersionConflictError: ``expected_version`` is given and is not the conversation's;
                nothing was stored.
        """
        validate_conversation_id(conversation_id)
        batch = unique_by_id(messages)
        if expected_version is not None:
            return await self._append_checked(conversation_id, batch, expected_version)
        if not batch:
            return []
        params = self._append_params(conversation_id, batch)
        stored, retired = await self._runner.write_messages(
            "append", self._statements.append, params
        )
        if retired:
            # The conversation had expired and started over: remove its old messages.
            await self._sweep(conversation_id)
        return _stored_of(batch, stored)

    async def _append_checked(
        self, conversation_id: str, batch: Sequence[Message], expected: int
    ) -> list[StoredMessage]:
        if isinstance(expected, bool) or not isinstance(expected, int):
            raise ConfigurationError(f"expected_version is an integer, got {expected!r}")
        if not batch:
            actual = await self.find_version(conversation_id)
            if actual != expected:
                raise VersionConflictError(conversation_id, expected, actual)
            return []
        params = {**self._append_params(conversation_id, batch), "expected": expected}
        if expected == 0:
            # Version 0 may mean no conversation yet: this statement creates it.
            row = await self._runner.write_merging(
                "append", self._statements.append_first_checked, params
            )
        else:
            rows = await self._runner.write("append", self._statements.append_checked, params)
            # No row: no conversation node (none yet, or a deletion finished), version 0.
            row = rows[0] if rows else [None, False, 0]
        stored, retired, actual = row
        if stored is None:
            raise VersionConflictError(conversation_id, expected, int(actual))
        if retired:
            await self._sweep(conversation_id)
        return _stored_of(batch, stored)

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first."""
        validate_conversation_id(conversation_id)
        check_limit(limit)
        bound = NO_POSITION if before is None else check_position(before)
        if limit == 0:
            return []
        return await self._window(conversation_id, limit, system=False, before=bound)

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version: 0 if it holds nothing (or expired).

        The version is the last position the conversation handed out.
        """
        validate_conversation_id(conversation_id)
        rows = await self._runner.read(
            "version read", self._statements.version, {"cid": conversation_id}
        )
        return int(rows[0][0]) if rows else 0

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest system message, or ``None``."""
        validate_conversation_id(conversation_id)
        found = await self._window(conversation_id, 1, system=True)
        return found[0] if found else None

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the current system message and the newest ``limit`` chat messages.

        One round trip: what a chat memory reads per turn.
        """
        validate_conversation_id(conversation_id)
        check_limit(limit)
        params = {"cid": conversation_id, "before": NO_POSITION, "limit": limit}
        records = await self._runner.read(
            "window read", self._statements.window_with_system, params
        )
        rows = records[0][0] if records else []
        system = stored_messages(conversation_id, [r[:2] for r in rows if r[2]])
        recent = stored_messages(conversation_id, [r[:2] for r in rows if not r[2]], reverse=True)
        return (system[0] if system else None), recent

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None``."""
        validate_conversation_id(conversation_id)
        kind = MessageType(message_type).value
        params = {"cid": conversation_id, "type": kind}
        rows = await self._runner.read("latest read", self._statements.latest_of_type, params)
        found = stored_messages(conversation_id, rows)
        return found[0] if found else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of live conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        if limit == 0:
            return ConversationPage([], None)
        params = {"owner": owner, "cursor": cursor or "", "limit": limit + 1}
        query = self._statements.list_all if owner is None else self._statements.list_owner
        rows = await self._runner.read("listing", query, params)
        return conversation_page([row[0] for row in rows], limit)

    def _history_params(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int,
    ) -> dict[str, Any]:
        return {
            "cid": conversation_id,
            "after": FIRST_POSITION if after is None else check_position(after),
            "since": None if since is None else epoch_micros(since),
            "until": None if until is None else epoch_micros(until),
            "types": None if types is None else [MessageType(t).value for t in types],
            "needle": None if text is None else text.casefold(),
            "limit": limit,
        }

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
        params = self._history_params(
            conversation_id,
            since=since,
            until=until,
            types=types,
            text=text,
            after=after,
            limit=limit,
        )
        if limit == 0:
            return []
        rows = await self._runner.read("history read", self._statements.history, params)
        return stored_messages(conversation_id, rows)

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages positioned before ``position``."""
        validate_conversation_id(conversation_id)
        params = {"cid": conversation_id, "position": check_position(position)}
        rows = await self._runner.write("delete_before", self._statements.delete_before, params)
        return int(rows[0][0]) if rows else 0

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete user, assistant and tool messages positioned in ``(after, through]``.

        System messages and events are kept; the version does not change.
        """
        validate_conversation_id(conversation_id)
        params = {
            "cid": conversation_id,
            "after": FIRST_POSITION if after is None else check_position(after),
            "through": check_position(through),
        }
        rows = await self._runner.write("delete_between", self._statements.delete_between, params)
        return int(rows[0][0]) if rows else 0

    async def purge_expired(self) -> int:
        """Delete expired conversations with their messages, in batches; return how many.

        Also finishes deletions that were interrupted (conversations left as tombstones).
        """
        purged = 0
        params = {"batch": _PURGE_BATCH}
        while rows := await self._runner.write("purge", self._statements.expire, params):
            purged += len(rows)
            for (conversation_id,) in rows:
                await self._sweep(conversation_id)
        seen: set[str] = set()
        while rows := await self._runner.read("purge", self._statements.tombstones, params):
            fresh = [cid for (cid,) in rows if cid not in seen]
            if not fresh:
                break
            for conversation_id in fresh:
                seen.add(conversation_id)
                await self._sweep(conversation_id)
        return purged

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the live conversation's summary, or ``None``.

        Read under the conversation's write lock, so the text, position and version are
        those of one write (see ``_cypher``).
        """
        validate_conversation_id(conversation_id)
        rows = await self._runner.write(
            "summary read", self._statements.find_summary, {"cid": conversation_id}
        )
        if not rows:
            return None
        text, covers, version = rows[0]
        return ConversationSummary(text, covers, version)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version``.

        One statement: it takes the conversation's write lock, then compares the version.
        """
        validate_conversation_id(conversation_id)
        if not isinstance(text, str):
            raise ConfigurationError(f"a summary is text, got {type(text).__name__}")
        if isinstance(expected_version, bool) or not isinstance(expected_version, int):
            raise ConfigurationError(f"expected_version is an integer, got {expected_version!r}")
        params = {
            "cid": conversation_id,
            "text": text,
            "covers": check_position(covers),
            "expected": expected_version,
        }
        rows = await self._runner.write("summary write", self._statements.save_summary, params)
        return bool(rows)

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``Neo4j Kernel 5.26.0``."""
        query: LiteralString = (
            "CALL dbms.components() YIELD name, versions, edition "
            "RETURN name + ' ' + versions[0] + ' ' + edition"
        )
        # Straight to the server: asking the version must not create the schema.
        try:
            async with self._driver.session(**self._runner.session_config(False)) as session:
                record = await (await session.run(query)).single()
        except DRIVER_ERRORS as exc:
            raise map_driver_error(exc, "server version") from exc
        return str(record[0]) if record else "Neo4j (unknown version)"

    async def aclose(self) -> None:
        """Close the driver if this repository created it."""
        if self._owns_driver:
            try:
                await self._driver.close()
            except DRIVER_ERRORS as exc:
                raise map_driver_error(exc, "close") from exc

    async def __aenter__(self) -> AsyncNeo4jChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
