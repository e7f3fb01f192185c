"""MySQL's and MariaDB's plan: ``ON DUPLICATE KEY UPDATE`` and InnoDB-safe locking.

InnoDB locks every index record a locking statement scans and the gap before it, and a
secondary index entry before its row. So every locking statement here reaches its rows
through an equality on the conversation id, and every write locks the conversation row
first, then its messages (see the MySQL/MariaDB section of docs/backends/sql.md).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import (
    CompoundSelect,
    Delete,
    Executable,
    Insert,
    Integer,
    bindparam,
    case,
    delete,
    func,
    literal,
    literal_column,
    null,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.sql.elements import ColumnClause

from chatmem.backend import StoredMessage
from chatmem.messages import MessageType
from chatmem_repositories.sql._async.plans.base import PURGE_BATCH, AsyncPlan
from chatmem_repositories.sql._async.runner import AsyncTransaction
from chatmem_repositories.sql._codec import (
    FIRST_POSITION,
    INSERT_CHUNK,
    Batch,
    check_version,
    id_text,
    stored_in,
)
from chatmem_repositories.sql._statements.reservation import (
    reservation_params,
    reservation_parts,
)

__all__ = ["SCRIPT_LIMIT", "AsyncMysqlPlan"]

SCRIPT_LIMIT = 16
"""Batches up to this size append by one statement list (see ``AsyncMysqlPlan._script``)."""

# Session variables the append's statement list passes its reservation on in.
_START: ColumnClause[Any] = literal_column("@chatmem_start")
_REVIVED: ColumnClause[Any] = literal_column("@chatmem_revived")
_SYSTEM_TYPE = f"'{MessageType.SYSTEM}'"


class AsyncMysqlPlan(AsyncPlan):
    """Every operation on MySQL and MariaDB (InnoDB).

    An append of up to :data:`SCRIPT_LIMIT` messages is one statement list, its COMMIT
    included (see :meth:`_append_by_script`). Up to :data:`INSERT_CHUNK` messages, it is one
    transaction of two statements and the commit: ``INSERT ... ON DUPLICATE KEY UPDATE``
    locks the row and reserves the positions, and hands the new counter back through
    ``LAST_INSERT_ID(expr)`` (the driver reads it from the statement's OK packet, so no
    ``SELECT`` follows); then ``INSERT IGNORE`` stores the messages whose id is not stored
    yet. Only when it stored fewer rows than it was given does one more ``SELECT`` read which
    positions it filled. The statements are built once per plan, with bound parameters. A
    bigger batch reserves, then reads the counter and the stored ids, then inserts the others.
    """

    _reserve_statements: dict[bool, Insert] | None = None
    _window: CompoundSelect[Any, Any, Any] | None = None
    _inserts: dict[bool, Insert] | None = None
    _scripts: dict[tuple[int, bool], tuple[Executable, ...]] | None = None
    _checked_scripts: dict[tuple[int, bool], tuple[Executable, ...]] | None = None
    _scan_deletes = True

    @property
    def db_system(self) -> str:
        """``"mariadb"`` or ``"mysql"`` (told apart once connected, whatever the URL said)."""
        is_mariadb = getattr(self.dialect, "is_mariadb", False)
        return "mariadb" if is_mariadb or self.dialect.name == "mariadb" else "mysql"

    async def server_version(self) -> str:
        """``MariaDB 10.11.x`` or ``MySQL 8.x``."""
        rows = await self.runner.query(text("SELECT VERSION()"))
        version = str(rows[0][0])
        if "mariadb" in version.lower():
            return f"MariaDB {version.split('-MariaDB')[0]}"
        return f"MySQL {version}"

    def window_statement(self) -> CompoundSelect[Any, Any, Any]:
        """The window and the system message as a ``UNION ALL`` of two parenthesized SELECTs.

        Not of two derived tables, as on the other dialects: MariaDB materializes a derived
        table, and one holding a LONGTEXT body goes to an on-disk temporary table, which
        made the read several times slower than the window's SELECT alone.
        """
        if self._window is None:
            reads, tables = self.reads, self.tables
            cid = bindparam("cid", type_=tables.messages.c.conversation_id.type)
            at = bindparam("now", type_=tables.conversations.c.expires_at.type)
            limit = bindparam("limit", type_=Integer())
            window = reads.window(cid, limit, None, at)  # type: ignore[arg-type]
            system = reads.system(cid, at)  # type: ignore[arg-type]
            self._window = union_all(
                window.with_only_columns(literal(0, Integer), *window.selected_columns),
                system.with_only_columns(literal(1, Integer), *system.selected_columns),
            )
        return self._window

    async def append(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Store the batch's messages not stored yet (see the class), checked if asked.

        A statement list that stored nothing has committed its reservation: the positions
        are given back after it (see :meth:`_give_back`).
        """
        given_back: list[int] = []
        body = partial(
            self._append,
            conversation_id,
            batch,
            now,
            expires_at,
            expected_version,
            given_back=given_back,
        )
        stored = await self.runner.transaction(body, direct=self._direct_append(batch))
        for start in given_back:
            unreserve = partial(
                self._unreserve, conversation_id=conversation_id, batch=batch, start=start
            )
            await self.runner.transaction(unreserve, direct=True)
        return stored

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
        given_back: list[int] | None = None,
    ) -> list[StoredMessage]:
        n = len(batch)
        if n <= SCRIPT_LIMIT and expected_version is None:
            return await self._append_by_script(
                tx, conversation_id, batch, now, expires_at, given_back
            )
        if n > INSERT_CHUNK:
            return await super()._append(
                conversation_id, batch, now, expires_at, expected_version, tx
            )
        offset = batch.system_offset
        params = reservation_params(conversation_id, batch, now, expires_at)
        reserve = self._reserve_statement(offset is not None)
        reply = await tx.execute(reserve, params, lastrowid=True)
        # LAST_INSERT_ID(2 * next_position + revived) when the row existed; 0 when the
        # statement inserted it (no auto-increment column, nothing set).
        encoded = int(reply.lastrowid or 0)
        start = encoded // 2 - n if encoded else FIRST_POSITION
        check_version(conversation_id, expected_version, start, revived=encoded % 2 == 1)
        if n <= SCRIPT_LIMIT:
            return await self._store_by_script(
                tx, conversation_id, batch, start, encoded % 2, given_back
            )
        rows = batch.rows(conversation_id, start)
        positions = {row["position"] for row in rows}
        m = self.tables.messages.c
        if encoded % 2:
            # This write revived an expired conversation: its old messages go (all of them).
            await tx.execute(self.writes.delete_messages(conversation_id))
        if not encoded or encoded % 2:
            # A new life or a new conversation holds none of these ids: a plain INSERT.
            await tx.execute(self._insert_statement(ignore=False), rows)
        else:
            # IGNORE skips the ids already stored (the unique key on the conversation and
            # message id); the positions are ours, reserved under the row lock.
            if (await tx.execute(self._insert_statement(ignore=True), rows)).rowcount != n:
                filled = select(m.position).where(
                    m.conversation_id == conversation_id,
                    m.position >= start,
                    m.position < start + n,
                )
                positions = {int(row[0]) for row in (await tx.execute(filled)).rows}
                if not positions:
                    await self._unreserve(tx, conversation_id, batch, start)
        if offset is not None and start + offset not in positions:
            # The reserved system position went to a duplicate: point at the real one.
            await tx.execute(self.writes.fix_system(conversation_id))
        return stored_in(batch, start, positions)

    async def _append_by_script(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        given_back: list[int] | None,
    ) -> list[StoredMessage]:
        """Append a small batch by one statement list, its COMMIT included (one round trip).

        The same work as the statement-by-statement path, decided on the server: the
        reservation upsert; ``SET`` keeps where the batch starts and whether it revived an
        expired conversation (``ROW_COUNT()`` is 1 when the upsert inserted the row); the
        revival's delete (an impossible ``WHERE`` otherwise, which reads nothing); ``INSERT
        IGNORE`` at the reserved positions; with a system message, ``system_position``
        pointed at the newest stored one; then the positions filled, read back.
        """
        n = len(batch)
        offset = batch.system_offset
        params: dict[str, Any] = reservation_params(conversation_id, batch, now, expires_at)
        for i, row in enumerate(batch.rows(conversation_id, FIRST_POSITION)):
            for column, value in row.items():
                params[f"{column}_{i}"] = value
        replies = await tx.script(self._script(n, offset is not None), params)
        # The upsert's LAST_INSERT_ID: 2 * next_position + revived, 0 if it inserted the row.
        encoded = int(replies[0].lastrowid or 0)
        start = encoded // 2 - n if encoded else FIRST_POSITION
        positions = {int(row[0]) for row in replies[-1].rows}
        if not positions:
            await self._give_back(tx, conversation_id, batch, start, given_back)
        return stored_in(batch, start, positions)

    async def _store_by_script(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        batch: Batch,
        start: int,
        revived: int,
        given_back: list[int] | None,
    ) -> list[StoredMessage]:
        """Store a small batch after a checked reservation: one statement list with COMMIT.

        The list of :meth:`_append_by_script` without its reservation: ``SET`` gives the
        reserved start and the revival from here, and the rest runs as there.
        """
        n = len(batch)
        offset = batch.system_offset
        params: dict[str, Any] = {"cid": conversation_id, "n": n, "start": start}
        params["revived"] = revived
        for i, row in enumerate(batch.rows(conversation_id, FIRST_POSITION)):
            for column, value in row.items():
                params[f"{column}_{i}"] = value
        replies = await tx.script(self._checked_script(n, offset is not None), params)
        positions = {int(row[0]) for row in replies[-1].rows}
        if not positions:
            await self._give_back(tx, conversation_id, batch, start, given_back)
        return stored_in(batch, start, positions)

    async def _give_back(
        self,
        tx: AsyncTransaction,
        conversation_id: str,
        batch: Batch,
        start: int,
        given_back: list[int] | None,
    ) -> None:
        """Give back the positions of a statement list that stored nothing (a retry).

        In the transaction if it is still open; if the list committed it, :meth:`append`
        gives them back after it, in a transaction of its own (``given_back`` holds the
        start), unless another append has reserved since (the version then grew anyway).
        """
        if not getattr(tx, "committed", False):
            await self._unreserve(tx, conversation_id, batch, start)
        elif given_back is not None:
            given_back.append(start)

    def _checked_script(self, n: int, with_system: bool) -> tuple[Executable, ...]:
        """The statements of :meth:`_store_by_script`, built once per kind of batch.

        Those of :meth:`_script` after its reservation and its ``SET``, behind a ``SET`` of
        the same session variables from the parameters ``start`` and ``revived``.
        """
        if self._checked_scripts is None:
            self._checked_scripts = {}
        script = self._checked_scripts.get((n, with_system))
        if script is None:
            given = text("SET @chatmem_start := :start, @chatmem_revived := :revived")
            given = given.bindparams(
                bindparam("start", type_=Integer()), bindparam("revived", type_=Integer())
            )
            script = (given, *self._script(n, with_system)[2:])
            self._checked_scripts[(n, with_system)] = script
        return script

    def _script(self, n: int, with_system: bool) -> tuple[Executable, ...]:
        """The statements of :meth:`_append_by_script` for ``n`` messages, built once."""
        if self._scripts is None:
            self._scripts = {}
        script = self._scripts.get((n, with_system))
        if script is not None:
            return script
        c, m = self.tables.conversations.c, self.tables.messages.c
        cid = bindparam("cid", type_=m.conversation_id.type)
        count = bindparam("n", type_=Integer())
        keep = text(
            "SET @chatmem_start := IF(ROW_COUNT() = 1, :first, LAST_INSERT_ID() DIV 2 - :n), "
            "@chatmem_revived := IF(ROW_COUNT() = 1, 0, LAST_INSERT_ID() MOD 2)"
        ).bindparams(bindparam("first", FIRST_POSITION, type_=Integer()), count)
        revival = delete(self.tables.messages).where(m.conversation_id == cid, _REVIVED == 1)
        rows = [
            {
                column.name: (
                    _START + i
                    if column.name == "position"
                    else bindparam(f"{column.name}_{i}", type_=column.type)
                )
                for column in self.tables.messages.columns
            }
            for i in range(n)
        ]
        insert = mysql.insert(self.tables.messages).prefix_with("IGNORE").values(rows)
        filled = select(m.position).where(
            m.conversation_id == cid, m.position >= _START, m.position < _START + count
        )
        statements: list[Executable] = [self._reserve_statement(with_system), keep, revival]
        statements.append(insert)
        if with_system:
            newest = (
                select(func.max(m.position))
                # The type as a literal: an anonymous parameter would be named like the
                # rows' own (type_0, type_1...), whose values the list binds by name.
                .where(m.conversation_id == cid, m.type == literal_column(_SYSTEM_TYPE))
                .scalar_subquery()
            )
            statements.append(
                update(self.tables.conversations)
                .where(c.conversation_id == cid)
                .values(system_position=newest)
            )
        statements.append(filled)
        script = tuple(statements)
        self._scripts[(n, with_system)] = script
        return script

    def _insert_statement(self, *, ignore: bool) -> Insert:
        """``INSERT [IGNORE]`` of message rows, built once and run as an executemany.

        The drivers send an executemany of an ``INSERT ... VALUES`` as one multi-row
        statement (one round trip) and report the rows it stored.
        """
        if self._inserts is None:
            self._inserts = {}
        statement = self._inserts.get(ignore)
        if statement is None:
            statement = mysql.insert(self.tables.messages)
            if ignore:
                statement = statement.prefix_with("IGNORE")
            self._inserts[ignore] = statement
        return statement

    def _reserve_statement(self, with_system: bool) -> Insert:
        """The reservation upsert, built once per plan for each kind of batch."""
        if self._reserve_statements is None:
            self._reserve_statements = {}
        statement = self._reserve_statements.get(with_system)
        if statement is not None:
            return statement
        c = self.tables.conversations.c
        parts = reservation_parts(self.tables.conversations, with_system)
        n, now, expires_at, is_expired = parts.n, parts.now, parts.expires_at, parts.is_expired
        system, row = parts.system, parts.row
        # Left to right, each assignment seeing the ones before it (MySQL's rule). The last
        # one also sets LAST_INSERT_ID to 2 * next_position + (1 if this revived an expired
        # conversation, whose first_position then equals the old next_position).
        revived = func.if_(c.first_position == c.next_position - n, 1, 0)
        counter = func.last_insert_id(c.next_position * 2 + revived)
        statement = (
            mysql.insert(self.tables.conversations)
            .values(row)
            .on_duplicate_key_update(
                [
                    ("first_position", case((is_expired, c.next_position), else_=c.first_position)),
                    ("system_position", system),
                    ("next_position", c.next_position + n),
                    ("updated_at", now),
                    ("expires_at", func.if_(counter == 0, expires_at, expires_at)),
                ]
            )
        )
        self._reserve_statements[with_system] = statement
        return statement

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
        writes = self.writes
        row = writes.new_row(conversation_id, batch, now, expires_at)
        bump = writes.bump_values(batch, now, expires_at, replace=replace)
        upsert = (
            mysql.insert(self.tables.conversations)
            .values(row)
            .on_duplicate_key_update([(col.name, value) for col, value in bump])
        )
        await tx.execute(upsert)
        ids = [message.id for message in batch.messages[:INSERT_CHUNK]]
        rows = (await tx.execute(self._counter_and_ids(conversation_id, ids))).rows
        counter = next(r for r in rows if r[0] is not None)
        existing = {id_text(r[2]) for r in rows if r[0] is None}
        # A big batch: the ids past the first chunk are looked up chunk by chunk.
        return counter, existing if len(batch) <= INSERT_CHUNK else None

    def _counter_and_ids(
        self, conversation_id: str, ids: Collection[str]
    ) -> CompoundSelect[Any, Any, Any]:
        """``(next_position, first_position, NULL)`` then ``(NULL, NULL, id)`` per stored id.

        After the upsert: one round trip instead of two. No ``FOR UPDATE`` is needed: the
        upsert holds the row lock, and this first plain read of the transaction sees every
        commit made before it, plus our own update.
        """
        c, m = self.tables.conversations.c, self.tables.messages.c
        counter = select(c.next_position, c.first_position, null().label("message_id")).where(
            c.conversation_id == conversation_id
        )
        existing = select(null(), null(), m.message_id).where(
            m.conversation_id == conversation_id, m.message_id.in_(list(ids))
        )
        return union_all(counter, existing)

    def _delete_chat_before(self, conversation_id: str, end: int) -> Delete:
        # `position + 0` keeps the position out of the index range: the scan is then an
        # equality on the conversation, which locks only its rows and the gap after them. A
        # range ending past the conversation's last row would take a next-key lock on the
        # next conversation's first row, which that conversation's writers wait for.
        return self.writes.delete_chat_before(conversation_id, end, scan=True)

    async def purge(self, now: datetime) -> int:
        """Delete expired conversations one per transaction, in every write's lock order.

        A purge that locked a batch of rows through the expiry index, or deleted by a list
        of ids (which MariaDB may run as a table scan), locked rows of live conversations
        and index entries before their rows, and deadlocked with appends and deletes. So the
        expired ids are read without locks, and each conversation is then deleted like
        :meth:`delete`: its row by primary key (if still expired), then its messages, and
        committed before the next one, so the purge never holds one conversation while
        waiting for another.
        """
        total = 0
        while True:
            rows = await self.runner.query(self.writes.expired_ids(now, PURGE_BATCH, lock=False))
            for (conversation_id,) in rows:
                total += await self.runner.transaction(
                    partial(self._purge_one, conversation_id, now)
                )
            if len(rows) < PURGE_BATCH:
                return total

    async def _purge_one(self, conversation_id: str, now: datetime, tx: AsyncTransaction) -> int:
        if not (await tx.execute(self.writes.purge_one(conversation_id, now))).rowcount:
            return 0  # revived meanwhile, or purged by another caller
        await tx.execute(self.writes.delete_messages(conversation_id))
        return 1
