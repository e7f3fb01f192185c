"""The portable plan: every operation as a program of steps, for any SQL dialect.

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
from chatmem_repositories.sql._codec import FIRST_POSITION, Batch, chunks, stored_in, to_stored
from chatmem_repositories.sql._plans.steps import (
    Body,
    Execute,
    InsertOrConflict,
    Program,
    Query,
    Transaction,
)
from chatmem_repositories.sql._schema import Tables
from chatmem_repositories.sql._statements.reads import NO_POSITION_BOUND, Reads
from chatmem_repositories.sql._statements.writes import Writes

__all__ = ["Plan"]

PURGE_BATCH = 500
"""Expired conversations deleted per round of :meth:`Plan.purge`."""

# OpenTelemetry's db.system.name for the dialects without a plan of their own.
_DB_SYSTEMS = {"mssql": "microsoft.sql_server", "oracle": "oracle.db"}


class Plan:
    """Every operation of the SQL repository on one dialect, as programs (no I/O).

    Built once per repository. See :mod:`~chatmem_repositories.sql._plans.steps` for how
    the repository runs a program.

    Args:
        tables: The repository's tables.
        dialect: The engine's dialect (read for the server's name once connected).
    """

    def __init__(self, tables: Tables, dialect: Dialect) -> None:
        self.tables = tables
        self.dialect = dialect
        self.reads = Reads(tables)
        self.writes = Writes(tables)

    @property
    def db_system(self) -> str:
        """OpenTelemetry's ``db.system.name`` of the database."""
        return _DB_SYSTEMS.get(self.dialect.name, self.dialect.name)

    def server_version(self) -> Program[str]:
        """The server's product and version, as SQLAlchemy learnt it on connecting."""
        yield Query(select(literal(1)))
        info = self.dialect.server_version_info or ()
        return f"{self.dialect.name} {'.'.join(str(part) for part in info)}".strip()

    # -- the memory read ---------------------------------------------------------------------

    def window(
        self, conversation_id: str, limit: int, now: datetime
    ) -> Program[tuple[StoredMessage | None, list[StoredMessage]]]:
        """The current system message and the newest ``limit`` others, in one statement."""
        params = {"cid": conversation_id, "limit": limit, "now": now}
        rows = yield Query(self.window_statement(), params)
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

    def everything(self, conversation_id: str, now: datetime) -> Program[list[Message]]:
        """Every message of the live conversation, in order."""
        rows = yield Query(self.reads.everything(), {"cid": conversation_id, "now": now})
        return decode_messages((body for _, body in rows), conversation_id=conversation_id)

    def recent(
        self, conversation_id: str, limit: int, before: int | None, now: datetime
    ) -> Program[list[StoredMessage]]:
        """The newest ``limit`` non-system messages before ``before``, oldest first."""
        bound = NO_POSITION_BOUND if before is None else before
        params = {"cid": conversation_id, "limit": limit, "before": bound, "now": now}
        rows = yield Query(self.reads.recent(), params)
        return [to_stored(row, conversation_id) for row in reversed(rows)]

    def count(self, conversation_id: str, now: datetime) -> Program[int]:
        """How many messages the live conversation holds."""
        rows = yield Query(self.reads.count(), {"cid": conversation_id, "now": now})
        return int(rows[0][0])

    def page(
        self, conversation_id: str, after: int, limit: int, now: datetime
    ) -> Program[list[StoredMessage]]:
        """Up to ``limit`` messages positioned after ``after``, oldest first."""
        params = {"cid": conversation_id, "after": after, "limit": limit, "now": now}
        rows = yield Query(self.reads.plain_page(), params)
        return [to_stored(row, conversation_id) for row in rows]

    # -- appends -----------------------------------------------------------------------------

    def append(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Program[list[StoredMessage]]:
        """Store the batch's messages not stored yet, in one transaction."""
        body = partial(self._append, conversation_id, batch, now, expires_at)
        stored: list[StoredMessage] = yield Transaction(body, direct=self._direct_append(batch))
        return stored

    def _direct_append(self, batch: Batch) -> bool:
        """Whether :meth:`_append` of this batch is a direct transaction (see ``Transaction``)."""
        return False

    def _append(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Body[list[StoredMessage]]:
        start, existing = yield from self._reserve(
            conversation_id, batch, now, expires_at, replace=False
        )
        rows = batch.rows(conversation_id, start)
        stored = yield from self._insert_new(conversation_id, rows, existing)
        offset = batch.system_offset
        if offset is not None and start + offset not in stored:
            # The reserved system position went to a duplicate: point at the real one.
            yield Execute(self.writes.fix_system(conversation_id))
        return stored_in(batch, start, stored)

    def _reserve(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> Body[tuple[int, set[str] | None]]:
        """Lock (or create) the conversation row and reserve ``len(batch)`` positions.

        Returns (from the body):
            The first reserved position, and the batch's ids already stored where the plan
            read them along the way (else ``None``).
        """
        counter, existing = yield from self._lock_and_count(
            conversation_id, batch, now, expires_at, replace=replace
        )
        start = int(counter[0]) - len(batch)
        if int(counter[1]) == start:
            # This write revived an expired conversation: its old messages go. They are all
            # of its messages: every one is below the old next position, `start`.
            yield Execute(self.writes.delete_messages(conversation_id))
            existing = set()
        return start, existing

    def _lock_and_count(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> Body[tuple[Any, set[str] | None]]:
        """Reserve positions; return ``(next_position, first_position)`` after it, and ids.

        Portable: ``UPDATE``, else ``INSERT`` in a savepoint (another writer may create the
        row first: then ``UPDATE`` again), then a locking ``SELECT`` of the counter.
        """
        writes = self.writes
        bump = writes.bump(conversation_id, batch, now, expires_at, replace=replace)
        if not (yield Execute(bump)).rowcount:
            created = yield InsertOrConflict(writes.create(conversation_id, batch, now, expires_at))
            if not created:
                yield Execute(bump)  # another writer created it first
        counter = (yield Execute(writes.counter(conversation_id))).one()
        return counter, None

    def _insert_new(
        self, conversation_id: str, rows: list[dict[str, Any]], existing: set[str] | None
    ) -> Body[set[int]]:
        """Insert rows whose message id is not stored yet; return the positions stored."""
        # The conversation's row lock is held, so no other writer can add these ids meanwhile.
        if existing is None:
            existing = set()
            for chunk in chunks(rows):
                ids = [row["message_id"] for row in chunk]
                reply = yield Execute(self.writes.existing_ids(conversation_id, ids))
                existing.update(row[0] for row in reply.rows)
        fresh = [row for row in rows if row["message_id"] not in existing]
        for chunk in chunks(fresh):
            yield Execute(self.writes.insert_messages(chunk))
        return {row["position"] for row in fresh}

    def save_all(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Program[None]:
        """Replace the conversation's messages by the batch, in one transaction."""
        if not len(batch):
            yield from self.delete(conversation_id)
            return
        yield Transaction(partial(self._save_all, conversation_id, batch, now, expires_at))

    def _save_all(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Body[None]:
        start, _ = yield from self._reserve(conversation_id, batch, now, expires_at, replace=True)
        if start != FIRST_POSITION:
            # A conversation this reservation created has no messages. Skipping the delete
            # matters on InnoDB: deleting nothing still locks the gap before the next
            # conversation's first message, and a neighbour that deleted its own messages
            # and inserts into that same gap would deadlock with our insert.
            yield Execute(self.writes.delete_messages(conversation_id))
        for chunk in chunks(batch.rows(conversation_id, start)):
            yield Execute(self.writes.insert_messages(chunk))

    # -- deletion and retention --------------------------------------------------------------

    def delete(self, conversation_id: str) -> Program[None]:
        """Delete a conversation and its messages."""
        yield Transaction(partial(self._delete, conversation_id))

    def _delete(self, conversation_id: str) -> Body[None]:
        # The conversation row first: the same lock order as appends, so no deadlock.
        yield Execute(self.writes.delete_conversation(conversation_id))
        yield Execute(self.writes.delete_messages(conversation_id))

    def delete_before(self, conversation_id: str, end: int, now: datetime) -> Program[int]:
        """Delete the live conversation's non-system messages before ``end``; count them."""
        deleted: int = yield Transaction(partial(self._delete_before, conversation_id, end, now))
        return deleted

    def _delete_before(self, conversation_id: str, end: int, now: datetime) -> Body[int]:
        row = (yield Execute(self.writes.lock(conversation_id))).first()
        if row is None or (row[0] is not None and row[0] <= now):
            return 0
        reply = yield Execute(self._delete_chat_before(conversation_id, end))
        return int(reply.rowcount)

    def _delete_chat_before(self, conversation_id: str, end: int) -> Delete:
        return self.writes.delete_chat_before(conversation_id, end, scan=False)

    def purge(self, now: datetime) -> Program[int]:
        """Delete expired conversations; return how many.

        One transaction per :data:`PURGE_BATCH` conversations: their rows locked in expiry
        order (the same for every purger: expiry only moves a row out of the expired ones),
        then their messages and rows deleted (each only if still expired).
        """
        total = 0
        while True:
            counts: tuple[int, int] = yield Transaction(partial(self._purge_batch, now))
            seen, deleted = counts
            total += deleted
            if seen < PURGE_BATCH:
                return total

    def _purge_batch(self, now: datetime) -> Body[tuple[int, int]]:
        reply = yield Execute(self.writes.expired_ids(now, PURGE_BATCH, lock=True))
        ids = [row[0] for row in reply.rows]
        if not ids:
            return 0, 0
        yield Execute(self.writes.purge_messages(ids, now))
        reply = yield Execute(self.writes.purge_conversations(ids, now))
        return len(ids), int(reply.rowcount)
