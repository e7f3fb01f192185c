"""What PostgreSQL and SQLite share: ``ON CONFLICT`` upserts and inserts with ``RETURNING``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table

from chatmem_repositories.sql._codec import Batch, chunks
from chatmem_repositories.sql._plans.base import Plan
from chatmem_repositories.sql._plans.steps import Body, Execute

__all__ = ["ReturningPlan"]


class ReturningPlan(Plan):
    """A plan for dialects with ``INSERT ... ON CONFLICT`` and ``RETURNING``.

    The reservation is one statement, ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING
    next_position, first_position``, and the messages go in with ``ON CONFLICT DO NOTHING
    RETURNING position``, which skips ids already stored and says which were stored.
    """

    def dialect_insert(self, table: Table) -> Any:
        """Return the dialect's ``insert(table)`` (the one with ``on_conflict_do_*``)."""
        raise NotImplementedError

    def _lock_and_count(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> Body[tuple[Any, set[str] | None]]:
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
        counter = (yield Execute(upsert)).one()
        return counter, None

    def _insert_new(
        self, conversation_id: str, rows: list[dict[str, Any]], existing: set[str] | None
    ) -> Body[set[int]]:
        if existing is not None:
            stored: set[int] = yield from super()._insert_new(conversation_id, rows, existing)
            return stored
        m = self.tables.messages.c
        stored = set()
        for chunk in chunks(rows):
            insert = (
                self.dialect_insert(self.tables.messages)
                .values(chunk)
                .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
                .returning(m.position)
            )
            reply = yield Execute(insert)
            stored.update(int(row[0]) for row in reply.rows)
        return stored
