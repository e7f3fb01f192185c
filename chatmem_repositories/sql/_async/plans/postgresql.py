"""PostgreSQL's plan: the usual append is one statement in autocommit, one round trip."""

from __future__ import annotations

import json
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
    cast,
    column,
    exists,
    func,
    literal_column,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql

from chatmem.backend import StoredMessage
from chatmem.conversation_ids import owner_of
from chatmem.messages import encode_message
from chatmem_repositories.sql._async.plans.returning import AsyncReturningPlan
from chatmem_repositories.sql._async.runner import AsyncTransaction
from chatmem_repositories.sql._codec import (
    FIRST_POSITION,
    Batch,
    is_out_of_windows,
    search_text,
    stored_in,
)
from chatmem_repositories.sql._types import NUL_STAND_IN

__all__ = ["ONE_STATEMENT_MAX", "AsyncPostgresqlPlan"]

ONE_STATEMENT_MAX = 5000
"""The most messages one statement appends (they travel as one JSON parameter): a bulk
import's pages fit, and the conversation's row lock is held for one statement only."""

# The columns of the rows the one-statement append reads from its JSON parameter, with the
# SQL types json_to_recordset() gives them.
_ROW_COLUMNS: dict[str, Any] = {
    "offset": Integer(),
    "message_id": String(),
    "type": String(),
    "is_system": Boolean(),
    "created_at": postgresql.TIMESTAMP(),
    "search_text": Text(),
    "body": Text(),
}


class AsyncPostgresqlPlan(AsyncReturningPlan):
    """Every operation on PostgreSQL.

    An append to a live conversation without a system message (the usual turn), or to a
    new conversation, is one statement in autocommit: ``WITH bumped AS (UPDATE
    conversations SET next_position = next_position + n ... WHERE <live> AND <no system
    message> RETURNING next_position), created AS (INSERT INTO conversations SELECT
    ... WHERE NOT EXISTS (SELECT FROM bumped) ON CONFLICT DO NOTHING RETURNING
    next_position), reserved AS (bumped UNION ALL created), inserted AS (INSERT INTO
    messages SELECT ... FROM reserved, json_to_recordset(:rows) ... ON CONFLICT DO NOTHING
    RETURNING position) SELECT reserved.next_position, inserted.position FROM reserved LEFT
    JOIN inserted``. The row lock is held for that statement only. A new conversation's row
    takes the batch's system message as its reference (nothing is stored yet, so it is
    stored where reserved). An expired conversation, a new one another writer creates at
    the same moment, or a live one given a system message (whose id may be stored already,
    so the reference needs the checks of the transaction) gets no reservation: no row comes
    back and the transaction of the other dialects runs instead.
    """

    _append_in_one: dict[bool, Select[Any]] | None = None
    _insert_json: Any = None

    @property
    def db_system(self) -> str:
        """``"postgresql"``."""
        return "postgresql"

    async def server_version(self) -> str:
        """``PostgreSQL 15.x (build)``, from ``version()`` without the platform."""
        rows = await self.runner.query(text("SELECT version()"))
        return str(rows[0][0]).split(" on ", 1)[0]

    def dialect_insert(self, table: Table) -> Any:
        """PostgreSQL's ``INSERT`` with ``ON CONFLICT``."""
        return postgresql.insert(table)

    async def append(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Store the batch's messages not stored yet: one statement when it can.

        With ``expected_version`` the statement is the guarded one (see
        :meth:`_append_statement`); when it reserves nothing, the transaction decides.
        """
        if len(batch) <= ONE_STATEMENT_MAX:
            params = _params(conversation_id, batch, now, expires_at)
            guarded = expected_version is not None
            if guarded:
                params["v"] = expected_version
            answer = await self.runner.send(self._append_statement(guarded=guarded), params)
            if answer:
                n = len(batch)
                start = int(answer[0][0]) - n
                positions = {int(row[1]) for row in answer if row[1] is not None}
                if not positions:
                    # Every id was stored already (a retry): the version stays as it was,
                    # unless another append has reserved since.
                    unreserve = self.writes.unreserve()
                    back = {"cid": conversation_id, "n": n, "end": start + n}
                    await self.runner.transaction(lambda tx: tx.execute(unreserve, back))
                offset = batch.system_offset
                if offset is not None and start + offset not in positions:
                    # Not expected (a new conversation holds no message yet), but a stored
                    # id would leave the reference on an empty position: repair it.
                    fix = self.writes.fix_system(conversation_id)
                    await self.runner.transaction(lambda tx: tx.execute(fix))
                return stored_in(batch, start, positions)
            # No row: the conversation had expired, or it exists and the batch holds a
            # system message (whose id may be stored already), or (guarded) it is not at
            # the expected version; the transaction does it, or refuses it.
        return await super().append(conversation_id, batch, now, expires_at, expected_version)

    def _append_statement(self, *, guarded: bool = False) -> Select[Any]:
        # Built once per plan: constructing this statement costs more than running it. The
        # rows travel as one JSON text read by json_to_recordset(), not one array per
        # column: the text is the same for every batch size (compiled once), and the driver
        # sends one string instead of adapting every element of seven arrays, which was
        # most of a large append's client time. The guarded statement (an append with an
        # expected version, parameter ``v``) reserves only in a live row whose counter is
        # v + 1, or in a new row if v is 0: a check on the row it locks, so of two writers
        # at one version the second, waiting for the lock, sees the first's counter.
        if self._append_in_one is None:
            self._append_in_one = {}
        cached = self._append_in_one.get(guarded)
        if cached is not None:
            return cached
        conversations = self.tables.conversations
        c = conversations.c
        cid = bindparam("cid", type_=c.conversation_id.type)
        n = bindparam("n", type_=Integer())
        now = bindparam("now", type_=c.updated_at.type)
        expires_at = bindparam("expires_at", type_=c.expires_at.type)
        # A parameter named after a column of the conversations table joins the UPDATE's
        # SET clause (SQLAlchemy's rule): only expires_at is, and it is set to itself.
        # An existing live conversation: a plain UPDATE reserves the positions (no
        # speculative insert into the primary key, as an upsert's ON CONFLICT tries first).
        system = bindparam("sys", type_=Integer())
        version = bindparam("v", type_=Integer())
        at_version = (c.next_position == version + 1,) if guarded else ()
        bumped = (
            update(conversations)
            .where(
                c.conversation_id == cid,
                or_(c.expires_at.is_(None), c.expires_at > now),
                system.is_(None),
                *at_version,
            )
            .values(next_position=c.next_position + n, updated_at=now, expires_at=expires_at)
            .returning(c.next_position)
            .cte("bumped")
        )
        # None: a new conversation's row, unless another writer creates it meanwhile (then
        # nothing comes back and the transaction path runs). An expired row conflicts too.
        new_row = select(
            cid,
            bindparam("owned_by", type_=c.owner.type),
            n + literal_column(str(FIRST_POSITION), Integer()),
            literal_column("0", Integer()),
            now,
            now,
            expires_at,
            # The batch's last system message, if any: new, so stored at its position.
            system + literal_column(str(FIRST_POSITION), Integer()),
        ).where(~exists(select(bumped.c.next_position)), *((version == 0,) if guarded else ()))
        created = (
            postgresql.insert(conversations)
            .from_select(
                [
                    "conversation_id",
                    "owner",
                    "next_position",
                    "first_position",
                    "created_at",
                    "updated_at",
                    "expires_at",
                    "system_position",
                ],
                new_row,
            )
            .on_conflict_do_nothing(index_elements=[c.conversation_id])
            .returning(c.next_position)
            .cte("created")
        )
        reserve = union_all(select(bumped.c.next_position), select(created.c.next_position)).cte(
            "reserved"
        )
        incoming = _incoming()
        source = select(
            cid,
            reserve.c.next_position - n + incoming.c.offset,
            *(incoming.c[name] for name in _ROW_COLUMNS if name != "offset"),
        ).select_from(reserve.join(incoming, true()))
        inserted = self._insert_from(source).cte("inserted")
        statement: Select[Any] = select(reserve.c.next_position, inserted.c.position)
        statement = statement.select_from(reserve.outerjoin(inserted, true()))
        self._append_in_one[guarded] = statement
        return statement

    def _insert_from(self, source: Select[Any]) -> Any:
        """``INSERT INTO messages SELECT ... ON CONFLICT DO NOTHING RETURNING position``."""
        m = self.tables.messages.c
        columns = [name for name in _ROW_COLUMNS if name != "offset"]
        return (
            postgresql.insert(self.tables.messages)
            .from_select(["conversation_id", "position", *columns], source)
            .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
            .returning(m.position)
        )

    async def _store(
        self, tx: AsyncTransaction, conversation_id: str, batch: Batch, start: int
    ) -> set[int]:
        """The transaction's insert, with the rows as one JSON text.

        As the one-statement append sends them: one statement text for every batch size,
        where a multi-row ``VALUES`` differs per size and psycopg parses each anew (most of
        a bulk append's client time when every conversation starts with a system message).
        """
        if self._insert_json is None:
            m = self.tables.messages.c
            incoming = _incoming()
            source = select(
                bindparam("cid", type_=m.conversation_id.type),
                bindparam("start", type_=m.position.type) + incoming.c.offset,
                *(incoming.c[name] for name in _ROW_COLUMNS if name != "offset"),
            ).select_from(incoming)
            self._insert_json = self._insert_from(source)
        params = {"cid": conversation_id, "start": start, "rows": _rows_json(batch)}
        reply = await tx.execute(self._insert_json, params)
        return {int(row[0]) for row in reply.rows}


def _incoming() -> Any:
    """The rows of the ``rows`` parameter (a JSON text) as a table, ``json_to_recordset``."""
    return (
        func.json_to_recordset(cast(bindparam("rows", type_=Text()), postgresql.JSON()))
        .table_valued(*(column(name, kind) for name, kind in _ROW_COLUMNS.items()))
        .render_derived(name="incoming", with_types=True)
    )


def _rows_json(batch: Batch) -> str:
    """The batch's rows as one JSON text, offsets from 0.

    Built straight from the messages (no intermediate insert rows): in a bulk append this
    is most of the client's work per message after encoding it.
    """
    records = [
        {
            "offset": offset,
            "message_id": message.id,
            "type": str(message.type),
            "is_system": is_out_of_windows(message),
            # Naive UTC, as the column stores it (JSON skips the column type's conversion).
            "created_at": message.created_at.astimezone(UTC).replace(tzinfo=None).isoformat(),
            # The search column's NUL substitution (PostgreSQL text cannot hold NUL).
            "search_text": search_text(message).replace("\x00", NUL_STAND_IN),
            "body": encode_message(message),
        }
        for offset, message in enumerate(batch.messages)
    ]
    return json.dumps(records, ensure_ascii=False)


def _params(
    conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
) -> dict[str, Any]:
    """The one-statement append's parameters."""
    return {
        "cid": conversation_id,
        "owned_by": owner_of(conversation_id),
        "n": len(batch),
        "sys": batch.system_offset,
        "now": now,
        "expires_at": expires_at,
        "rows": _rows_json(batch),
    }
