"""SQLite's plan: the upsert-and-``RETURNING`` append in a transaction (SQLite 3.35+)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Insert, Table, select, text
from sqlalchemy.dialects import sqlite

from chatmem_repositories.sql._async.plans.returning import AsyncReturningPlan
from chatmem_repositories.sql._async.runner import AsyncTransaction
from chatmem_repositories.sql._codec import Batch

__all__ = ["AsyncSqlitePlan"]


class AsyncSqlitePlan(AsyncReturningPlan):
    """Every operation on SQLite.

    An append is one transaction of two statements (upsert, insert) plus its commit. Every
    write transaction starts with a write, so it never has to upgrade a read lock. The
    insert is one statement text run as an executemany (the driver's loop, in C), skipping
    stored ids with ``ON CONFLICT DO NOTHING``; only when it stored fewer rows than it was
    given does a ``SELECT`` read which reserved positions it filled.
    """

    _insert_ignoring: Insert | None = None

    @property
    def db_system(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    async def server_version(self) -> str:
        """``SQLite 3.x.y``, the library the driver runs."""
        rows = await self.runner.query(text("SELECT sqlite_version()"))
        return f"SQLite {rows[0][0]}"

    def dialect_insert(self, table: Table) -> Any:
        """SQLite's ``INSERT`` with ``ON CONFLICT``."""
        return sqlite.insert(table)

    async def _store(
        self, tx: AsyncTransaction, conversation_id: str, batch: Batch, start: int
    ) -> set[int]:
        rows = batch.rows(conversation_id, start)
        reply = await tx.execute(self._insert_skipping_stored(), rows)
        if reply.rowcount == len(rows):
            return {row["position"] for row in rows}
        m = self.tables.messages.c
        filled = select(m.position).where(
            m.conversation_id == conversation_id,
            m.position >= start,
            m.position < start + len(rows),
        )
        return {int(row[0]) for row in (await tx.execute(filled)).rows}

    def _insert_skipping_stored(self) -> Insert:
        """``INSERT ... ON CONFLICT DO NOTHING`` of message rows, built once."""
        if self._insert_ignoring is None:
            m = self.tables.messages.c
            self._insert_ignoring = sqlite.insert(self.tables.messages).on_conflict_do_nothing(
                index_elements=[m.conversation_id, m.message_id]
            )
        return self._insert_ignoring
