"""PostgreSQL's plan: the usual append is one statement in autocommit, one round trip."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Integer,
    Select,
    String,
    Table,
    Text,
    bindparam,
    column,
    func,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY

from chatmem.backend import StoredMessage
from chatmem.conversation_ids import owner_of
from chatmem_repositories.sql._codec import FIRST_POSITION, INSERT_CHUNK, Batch, stored_in
from chatmem_repositories.sql._plans.returning import ReturningPlan
from chatmem_repositories.sql._plans.steps import Program, Query, Send
from chatmem_repositories.sql._types import SearchText

__all__ = ["PostgresqlPlan"]

# Element types of the per-column arrays the one-statement append unnests.
_ARRAY_COLUMNS: dict[str, Any] = {
    "message_id": String(),
    "type": String(),
    "is_system": Boolean(),
    "created_at": postgresql.TIMESTAMP(),
    # The column's own type, so the array's items get its NUL substitution.
    "search_text": SearchText(),
    "body": Text(),
}


class PostgresqlPlan(ReturningPlan):
    """Every operation on PostgreSQL.

    A batch without a system message (the usual turn) is appended by one statement in
    autocommit: ``WITH reserved AS (upsert ... RETURNING next_position), inserted AS
    (INSERT ... SELECT FROM reserved, unnest(arrays) ... ON CONFLICT DO NOTHING RETURNING
    position) SELECT reserved.next_position, inserted.position FROM reserved LEFT JOIN
    inserted``. The row lock is held for that statement only. The upsert does nothing to an
    expired conversation, so no row comes back and the transaction of the other dialects
    runs instead, as it does for a batch with a system message.
    """

    _append_in_one: Select[Any] | None = None

    @property
    def db_system(self) -> str:
        """``"postgresql"``."""
        return "postgresql"

    def server_version(self) -> Program[str]:
        """``PostgreSQL 15.x (build)``, from ``version()`` without the platform."""
        rows = yield Query(text("SELECT version()"))
        return str(rows[0][0]).split(" on ", 1)[0]

    def dialect_insert(self, table: Table) -> Any:
        """PostgreSQL's ``INSERT`` with ``ON CONFLICT``."""
        return postgresql.insert(table)

    def append(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Program[list[StoredMessage]]:
        """Store the batch's messages not stored yet: one statement when it can."""
        if batch.system_offset is None and len(batch) <= INSERT_CHUNK:
            rows = batch.rows(conversation_id, 0)
            answer = yield Send(
                self._append_statement(), _params(conversation_id, rows, now, expires_at)
            )
            if answer:
                start = int(answer[0][0]) - len(batch)
                positions = {int(row[1]) for row in answer if row[1] is not None}
                return stored_in(batch, start, positions)
            # No row: the conversation had expired; the transaction starts it anew.
        stored: list[StoredMessage] = yield from super().append(
            conversation_id, batch, now, expires_at
        )
        return stored

    def _append_statement(self) -> Select[Any]:
        # Built once per plan: constructing this statement costs more than running it.
        # unnest() of one array per column, not VALUES: the text is the same for every batch
        # size, so it is also compiled once.
        if self._append_in_one is not None:
            return self._append_in_one
        conversations, messages = self.tables.conversations, self.tables.messages
        c, m = conversations.c, messages.c
        n = bindparam("n", type_=Integer())
        now = bindparam("now", type_=c.updated_at.type)
        expires_at = bindparam("expires_at", type_=c.expires_at.type)
        new_row = {
            "conversation_id": bindparam("cid", type_=c.conversation_id.type),
            "owner": bindparam("owner", type_=c.owner.type),
            "next_position": n + FIRST_POSITION,
            "first_position": 0,
            "system_position": None,
            "created_at": now,
            "updated_at": now,
            "expires_at": expires_at,
        }
        reserve = (
            postgresql.insert(conversations)
            .values(new_row)
            .on_conflict_do_update(
                index_elements=[c.conversation_id],
                set_={
                    "next_position": c.next_position + n,
                    "updated_at": now,
                    "expires_at": expires_at,
                },
                where=or_(c.expires_at.is_(None), c.expires_at > now),
            )
            .returning(c.next_position)
            .cte("reserved")
        )
        arrays = [bindparam("offsets", type_=ARRAY(Integer()))]
        arrays += [
            bindparam(f"{name}s", type_=ARRAY(_ARRAY_COLUMNS[name])) for name in _ARRAY_COLUMNS
        ]
        incoming = (
            func.unnest(*arrays)
            .table_valued(
                column("offset", Integer()),
                *(column(name, kind) for name, kind in _ARRAY_COLUMNS.items()),
            )
            .render_derived(name="incoming", with_types=False)
        )
        source = select(
            bindparam("cid", type_=m.conversation_id.type),
            reserve.c.next_position - n + incoming.c.offset,
            *(incoming.c[name] for name in _ARRAY_COLUMNS),
        ).select_from(reserve.join(incoming, true()))
        inserted = (
            postgresql.insert(messages)
            .from_select(["conversation_id", "position", *_ARRAY_COLUMNS], source)
            .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
            .returning(m.position)
            .cte("inserted")
        )
        statement: Select[Any] = select(reserve.c.next_position, inserted.c.position)
        self._append_in_one = statement.select_from(reserve.outerjoin(inserted, true()))
        return self._append_in_one


def _params(
    conversation_id: str, rows: list[dict[str, Any]], now: datetime, expires_at: datetime | None
) -> dict[str, Any]:
    """The one-statement append's parameters: one array per column, positions from 0."""
    params: dict[str, Any] = {
        "cid": conversation_id,
        "owner": owner_of(conversation_id),
        "n": len(rows),
        "now": now,
        "expires_at": expires_at,
        "offsets": [row["position"] for row in rows],
    }
    for name in _ARRAY_COLUMNS:
        data = [row[name] for row in rows]
        if name == "created_at":  # arrays skip the column type's UTC conversion
            data = [value.astimezone(UTC).replace(tzinfo=None) for value in data]
        params[f"{name}s"] = data
    return params
