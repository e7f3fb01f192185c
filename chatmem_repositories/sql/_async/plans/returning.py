"""What PostgreSQL and SQLite share: ``ON CONFLICT`` upserts and inserts with ``RETURNING``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Insert, Table, case

from chatmem.backend import StoredMessage
from chatmem_repositories.sql._async.plans.base import AsyncPlan
from chatmem_repositories.sql._async.runner import AsyncTransaction
from chatmem_repositories.sql._codec import (
    INSERT_CHUNK,
    Batch,
    check_version,
    chunks,
    stored_in,
)
from chatmem_repositories.sql._statements.reservation import (
    reservation_params,
    reservation_parts,
)

__all__ = ["AsyncReturningPlan"]


class AsyncReturningPlan(AsyncPlan):
    """A plan for dialects with ``INSERT ... ON CONFLICT`` and ``RETURNING``.

    The reservation is one statement, ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING
    next_position, first_position``, and the messages go in with ``ON CONFLICT DO NOTHING
    RETURNING position``, which skips ids already stored and says which were stored. For a
    batch of up to :data:`INSERT_CHUNK` messages both statements are built once per plan
    with bound parameters (the messages as an executemany, which SQLAlchemy sends as one
    multi-row ``INSERT``), so an append compiles nothing.
    """

    _reserve_statements: dict[bool, Insert] | None = None
    _insert_statement: Insert | None = None

    def dialect_insert(self, table: Table) -> Any:
        """Return the dialect's ``insert(table)`` (the one with ``on_conflict_do_*``)."""
        raise NotImplementedError

    def _direct_append(self, batch: Batch) -> bool:
        # Up to INSERT_CHUNK messages, every statement is one built once with bound
        # parameters or a rare repair, and the body reads only positions back.
        return len(batch) <= INSERT_CHUNK

    async def _append(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        expected_version: int | None,
        tx: AsyncTransaction,
    ) -> list[StoredMessage]:
        n = len(batch)
        if n > INSERT_CHUNK:
            return await super()._append(
                conversation_id, batch, now, expires_at, expected_version, tx
            )
        offset = batch.system_offset
        params = reservation_params(conversation_id, batch, now, expires_at)
        counter = (await tx.execute(self._reserve_statement(offset is not None), params)).one()
        start = int(counter[0]) - n
        revived = int(counter[1]) == start
        check_version(conversation_id, expected_version, start, revived=revived)
        if revived:
            # This write revived an expired conversation: its old messages go (all of them).
            await tx.execute(self.writes.delete_messages(conversation_id))
        positions = await self._store(tx, conversation_id, batch, start)
        if not positions:
            await self._unreserve(tx, conversation_id, batch, start)
        if offset is not None and start + offset not in positions:
            # The reserved system position went to a duplicate: point at the real one.
            await tx.execute(self.writes.fix_system(conversation_id))
        return stored_in(batch, start, positions)

    def _reserve_statement(self, with_system: bool) -> Insert:
        """The reservation upsert of :meth:`_append`, built once per kind of batch."""
        if self._reserve_statements is None:
            self._reserve_statements = {}
        cached = self._reserve_statements.get(with_system)
        if cached is not None:
            return cached
        c = self.tables.conversations.c
        parts = reservation_parts(self.tables.conversations, with_system)
        n, now, expires_at, is_expired = parts.n, parts.now, parts.expires_at, parts.is_expired
        # The SET clause reads the row as it was (SQL's rule, unlike MySQL's).
        system, row = parts.system, parts.row
        statement: Insert = (
            self.dialect_insert(self.tables.conversations)
            .values(row)
            .on_conflict_do_update(
                index_elements=[c.conversation_id],
                set_={
                    "first_position": case((is_expired, c.next_position), else_=c.first_position),
                    "system_position": system,
                    "next_position": c.next_position + n,
                    "updated_at": now,
                    "expires_at": expires_at,
                },
            )
            .returning(c.next_position, c.first_position)
        )
        self._reserve_statements[with_system] = statement
        return statement

    async def _store(
        self, tx: AsyncTransaction, conversation_id: str, batch: Batch, start: int
    ) -> set[int]:
        """Insert the batch at positions from ``start``; return the positions stored.

        Ids already stored are skipped.
        """
        reply = await tx.execute(self._insert_rows(), batch.rows(conversation_id, start))
        return {int(row[0]) for row in reply.rows}

    def _insert_rows(self) -> Insert:
        """``INSERT ... ON CONFLICT DO NOTHING RETURNING position``, run as an executemany."""
        if self._insert_statement is None:
            m = self.tables.messages.c
            self._insert_statement = (
                self.dialect_insert(self.tables.messages)
                .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
                .returning(m.position)
            )
        return self._insert_statement

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
        writes, c = self.writes, self.tables.conversations.c
        row = writes.new_row(conversation_id, batch, now, expires_at)
        bump = writes.bump_values(batch, now, expires_at, replace=replace)
        upsert = (
            self.dialect_insert(self.tables.conversations)
            .values(row)
            .on_conflict_do_update(
                index_elements=[c.conversation_id], set_={col.name: v for col, v in bump}
            )
            .returning(c.next_position, c.first_position)
        )
        counter = (await tx.execute(upsert)).one()
        return counter, None

    async def _insert_new(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        rows: list[dict[str, Any]],
        existing: set[str] | None,
    ) -> set[int]:
        if existing is not None:
            return await super()._insert_new(tx, conversation_id, rows, existing)
        m = self.tables.messages.c
        stored: set[int] = set()
        for chunk in chunks(rows):
            insert = (
                self.dialect_insert(self.tables.messages)
                .values(chunk)
                .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
                .returning(m.position)
            )
            reply = await tx.execute(insert)
            stored.update(int(row[0]) for row in reply.rows)
        return stored
