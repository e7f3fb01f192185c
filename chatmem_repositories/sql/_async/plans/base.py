"""The portable plan: every operation of the SQL repository, for any SQL dialect.

SQL Server, Oracle and any other dialect run this plan as it is; PostgreSQL, SQLite and
MySQL/MariaDB run subclasses that replace the steps where their SQL does better (an upsert
with ``RETURNING``, ``ON CONFLICT DO NOTHING``, one statement for a whole append).

An append, in every plan: lock (or create) the conversation row and reserve ``n``
positions; if that started a new life of an expired conversation, delete its old messages;
insert the messages whose id is not stored yet; point ``system_position`` at the newest
system message if the reserved one went to a duplicate.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Delete, Executable, literal, select
from sqlalchemy.engine import Dialect

from chatmem.backend import StoredMessage
from chatmem.messages import Message, decode_messages
from chatmem_repositories.sql._async.runner import AsyncRunner, AsyncTransaction
from chatmem_repositories.sql._codec import (
    FIRST_POSITION,
    Batch,
    check_version,
    chunks,
    stored_in,
    to_stored,
)
from chatmem_repositories.sql._schema import Tables
from chatmem_repositories.sql._statements.reads import NO_POSITION_BOUND, Reads
from chatmem_repositories.sql._statements.writes import Writes

__all__ = ["AsyncPlan"]

PURGE_BATCH = 500
"""Expired conversations deleted per round of :meth:`AsyncPlan.purge`."""

# OpenTelemetry's db.system.name for the dialects without a plan of their own.
_DB_SYSTEMS = {"mssql": "microsoft.sql_server", "oracle": "oracle.db"}


class AsyncPlan:
    """Every operation of the SQL repository on one dialect, run through the runner.

    Built once per repository. Every SQL decision is here; the runner does the I/O
    (connections, transactions, retries, error mapping). The repository runs each
    operation with :meth:`AsyncRunner.perform`.

    Args:
        tables: The repository's tables.
        dialect: The engine's dialect (read for the server's name once connected).
        runner: Runs the statements.
    """

    _scan_deletes = False
    """Range deletes compare ``position + 0`` (see ``Writes.delete_chat_before``)."""

    def __init__(self, tables: Tables, dialect: Dialect, runner: AsyncRunner) -> None:
        self.runner = runner
        self.tables = tables
        self.dialect = dialect
        self.reads = Reads(tables)
        self.writes = Writes(tables)

    @property
    def db_system(self) -> str:
        """OpenTelemetry's ``db.system.name`` of the database."""
        return _DB_SYSTEMS.get(self.dialect.name, self.dialect.name)

    async def server_version(self) -> str:
        """The server's product and version, as SQLAlchemy learnt it on connecting."""
        await self.runner.query(select(literal(1)))
        info = self.dialect.server_version_info or ()
        return f"{self.dialect.name} {'.'.join(str(part) for part in info)}".strip()

    # -- the memory read ---------------------------------------------------------------------

    async def window(
        self, conversation_id: str, limit: int, now: datetime
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """The current system message and the newest ``limit`` others, in one statement."""
        params = {"cid": conversation_id, "limit": limit, "now": now}
        rows = await self.runner.query(self.window_statement(), params)
        system: StoredMessage | None = None
        recent: list[StoredMessage] = []
        for kind, position, body in rows:
            stored = to_stored((position, body), conversation_id)
            if kind == 1:
                system = stored
            else:
                recent.append(stored)
        recent.sort(key=lambda item: int(item.position))
        return system, recent

    def window_statement(self) -> Executable:
        """The statement of :meth:`window`, built once: ``(is_system, position, body)`` rows."""
        return self.reads.window_and_system()

    async def everything(self, conversation_id: str, now: datetime) -> list[Message]:
        """Every message of the live conversation, in order."""
        rows = await self.runner.query(
            self.reads.everything(), {"cid": conversation_id, "now": now}
        )
        return decode_messages((body for _, body in rows), conversation_id=conversation_id)

    async def recent(
        self, conversation_id: str, limit: int, before: int | None, now: datetime
    ) -> list[StoredMessage]:
        """The newest ``limit`` non-system messages before ``before``, oldest first."""
        bound = NO_POSITION_BOUND if before is None else before
        params = {"cid": conversation_id, "limit": limit, "before": bound, "now": now}
        rows = await self.runner.query(self.reads.recent(), params)
        return [to_stored(row, conversation_id) for row in reversed(rows)]

    async def count(self, conversation_id: str, now: datetime) -> int:
        """How many messages the live conversation holds."""
        rows = await self.runner.query(self.reads.count(), {"cid": conversation_id, "now": now})
        return int(rows[0][0])

    async def version(self, conversation_id: str, now: datetime) -> int:
        """The live conversation's version: the last position reserved, 0 if none."""
        rows = await self.runner.query(self.reads.version(), {"cid": conversation_id, "now": now})
        return int(rows[0][0]) - 1 if rows else 0

    async def page(
        self, conversation_id: str, after: int, limit: int, now: datetime
    ) -> list[StoredMessage]:
        """Up to ``limit`` messages positioned after ``after``, oldest first."""
        params = {"cid": conversation_id, "after": after, "limit": limit, "now": now}
        rows = await self.runner.query(self.reads.plain_page(), params)
        return [to_stored(row, conversation_id) for row in rows]

    # -- appends -----------------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Store the batch's messages not stored yet, in one transaction.

        With ``expected_version``, the reservation's counter says the version before it; a
        mismatch raises :class:`~chatmem.exceptions.VersionConflictError` before anything
        else, and the transaction rolls back.
        """
        body = partial(self._append, conversation_id, batch, now, expires_at, expected_version)
        return await self.runner.transaction(body, direct=self._direct_append(batch))

    def _direct_append(self, batch: Batch) -> bool:
        """Whether :meth:`_append` of this batch is a direct transaction (see the runner's)."""
        return False

    async def _append(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        expected_version: int | None,
        tx: AsyncTransaction,
    ) -> list[StoredMessage]:
        start, existing = await self._reserve(
            tx, conversation_id, batch, now, expires_at, replace=False, expected=expected_version
        )
        rows = batch.rows(conversation_id, start)
        stored = await self._insert_new(tx, conversation_id, rows, existing)
        if not stored:
            await self._unreserve(tx, conversation_id, batch, start)
        offset = batch.system_offset
        if offset is not None and start + offset not in stored:
            # The reserved system position went to a duplicate: point at the real one.
            await tx.execute(self.writes.fix_system(conversation_id))
        return stored_in(batch, start, stored)

    async def _reserve(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
        expected: int | None = None,
    ) -> tuple[int, set[str] | None]:
        """Lock (or create) the conversation row and reserve ``len(batch)`` positions.

        Returns:
            The first reserved position, and the batch's ids already stored where the plan
            read them along the way (else ``None``).

        Raises:
            VersionConflictError: ``expected`` is given and was not the version.
        """
        counter, existing = await self._lock_and_count(
            tx, conversation_id, batch, now, expires_at, replace=replace
        )
        start = int(counter[0]) - len(batch)
        check_version(conversation_id, expected, start, revived=int(counter[1]) == start)
        if int(counter[1]) == start:
            # This write revived an expired conversation: its old messages go. They are all
            # of its messages: every one is below the old next position, `start`.
            await tx.execute(self.writes.delete_messages(conversation_id))
            existing = set()
        return start, existing

    async def _lock_and_count(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> tuple[Any, set[str] | None]:
        """Reserve positions; return ``(next_position, first_position)`` after it, and ids.

        Portable: ``UPDATE``, else ``INSERT`` in a savepoint (another writer may create the
        row first: then ``UPDATE`` again), then a locking ``SELECT`` of the counter.
        """
        writes = self.writes
        bump = writes.bump(conversation_id, batch, now, expires_at, replace=replace)
        if not (await tx.execute(bump)).rowcount:
            created = await tx.insert_or_conflict(
                writes.create(conversation_id, batch, now, expires_at)
            )
            if not created:
                await tx.execute(bump)  # another writer created it first
        counter = (await tx.execute(writes.counter(conversation_id))).one()
        return counter, None

    async def _unreserve(
        self, tx: AsyncTransaction, conversation_id: str, batch: Batch, start: int
    ) -> None:
        """Give the reserved positions back: every id was stored already (a retry).

        So an append that stores nothing leaves the version as it was. The row lock is
        held, so the counter is still where the reservation left it.
        """
        params = {"cid": conversation_id, "n": len(batch), "end": start + len(batch)}
        await tx.execute(self.writes.unreserve(), params)

    async def _insert_new(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        rows: list[dict[str, Any]],
        existing: set[str] | None,
    ) -> set[int]:
        """Insert rows whose message id is not stored yet; return the positions stored."""
        # The conversation's row lock is held, so no other writer can add these ids meanwhile.
        if existing is None:
            existing = set()
            for chunk in chunks(rows):
                ids = [row["message_id"] for row in chunk]
                reply = await tx.execute(self.writes.existing_ids(conversation_id, ids))
                existing.update(row[0] for row in reply.rows)
        fresh = [row for row in rows if row["message_id"] not in existing]
        for chunk in chunks(fresh):
            await tx.execute(self.writes.insert_messages(chunk))
        return {row["position"] for row in fresh}

    async def save_all(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> None:
        """Replace the conversation's messages by the (non-empty) batch, in one transaction."""

        async def body(tx: AsyncTransaction) -> None:
            reserved = await self._reserve(
                tx, conversation_id, batch, now, expires_at, replace=True
            )
            start = reserved[0]
            if start != FIRST_POSITION:
                # A conversation this reservation created has no messages. Skipping the
                # delete matters on InnoDB: deleting nothing still locks the gap before the
                # next conversation's first message, and a neighbour that deleted its own
                # messages and inserts into that same gap would deadlock with our insert.
                await tx.execute(self.writes.delete_messages(conversation_id))
            for chunk in chunks(batch.rows(conversation_id, start)):
                await tx.execute(self.writes.insert_messages(chunk))

        await self.runner.transaction(body)

    # -- deletion and retention --------------------------------------------------------------

    async def delete(self, conversation_id: str, *also: Executable) -> None:
        """Delete a conversation and its messages, then run ``also`` in the same transaction.

        Args:
            conversation_id: The conversation.
            *also: More statements for the transaction (the summary's deletion), after
                the conversation row is locked, as by every write.
        """

        async def body(tx: AsyncTransaction) -> None:
            # The conversation row first: the same lock order as appends, so no deadlock.
            await tx.execute(self.writes.delete_conversation(conversation_id))
            await tx.execute(self.writes.delete_messages(conversation_id))
            for statement in also:
                await tx.execute(statement)

        await self.runner.transaction(body)

    async def delete_before(self, conversation_id: str, end: int, now: datetime) -> int:
        """Delete the live conversation's chat messages before ``end``; count them."""

        async def body(tx: AsyncTransaction) -> int:
            row = (await tx.execute(self.writes.lock(conversation_id))).first()
            if row is None or (row[0] is not None and row[0] <= now):
                return 0
            reply = await tx.execute(self._delete_chat_before(conversation_id, end))
            return int(reply.rowcount)

        return await self.runner.transaction(body)

    def _delete_chat_before(self, conversation_id: str, end: int) -> Delete:
        return self.writes.delete_chat_before(conversation_id, end, scan=False)

    async def delete_between(
        self, conversation_id: str, after: int | None, through: int, now: datetime
    ) -> int:
        """Delete the live conversation's chat messages in ``(after, through]``; count them.

        Like :meth:`delete_before`: the conversation row locked first, then one ``DELETE``
        of the rows with ``is_system`` false (system messages and events stay).
        """

        async def body(tx: AsyncTransaction) -> int:
            row = (await tx.execute(self.writes.lock(conversation_id))).first()
            if row is None or (row[0] is not None and row[0] <= now):
                return 0
            delete = self.writes.delete_chat_between(
                conversation_id, after, through, scan=self._scan_deletes
            )
            return int((await tx.execute(delete)).rowcount)

        return await self.runner.transaction(body)

    async def purge(self, now: datetime) -> int:
        """Delete expired conversations; return how many.

        One transaction per :data:`PURGE_BATCH` conversations: their rows locked in expiry
        order (the same for every purger: expiry only moves a row out of the expired ones),
        then their messages and rows deleted (each only if still expired).
        """
        total = 0
        while True:
            seen, deleted = await self.runner.transaction(partial(self._purge_batch, now))
            total += deleted
            if seen < PURGE_BATCH:
                return total

    async def _purge_batch(self, now: datetime, tx: AsyncTransaction) -> tuple[int, int]:
        reply = await tx.execute(self.writes.expired_ids(now, PURGE_BATCH, lock=True))
        ids = [row[0] for row in reply.rows]
        if not ids:
            return 0, 0
        await tx.execute(self.writes.purge_messages(ids, now))
        reply = await tx.execute(self.writes.purge_conversations(ids, now))
        return len(ids), int(reply.rowcount)
