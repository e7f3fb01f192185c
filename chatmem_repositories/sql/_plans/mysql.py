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

from sqlalchemy import CompoundSelect, Delete, null, select, text, union_all
from sqlalchemy.dialects import mysql

from chatmem_repositories.sql._codec import INSERT_CHUNK, Batch, id_text
from chatmem_repositories.sql._plans.base import PURGE_BATCH, Plan
from chatmem_repositories.sql._plans.steps import Body, Execute, Program, Query, Transaction

__all__ = ["MysqlPlan"]


class MysqlPlan(Plan):
    """Every operation on MySQL and MariaDB (InnoDB).

    An append is one transaction: ``INSERT ... ON DUPLICATE KEY UPDATE`` (locks the row and
    reserves positions), one ``SELECT`` that reads the counter and which of the batch's ids
    are stored already, one ``INSERT`` of the others, and the commit.
    """

    @property
    def db_system(self) -> str:
        """``"mariadb"`` or ``"mysql"`` (told apart once connected, whatever the URL said)."""
        is_mariadb = getattr(self.dialect, "is_mariadb", False)
        return "mariadb" if is_mariadb or self.dialect.name == "mariadb" else "mysql"

    def server_version(self) -> Program[str]:
        """``MariaDB 10.11.x`` or ``MySQL 8.x``."""
        rows = yield Query(text("SELECT VERSION()"))
        version = str(rows[0][0])
        if "mariadb" in version.lower():
            return f"MariaDB {version.split('-MariaDB')[0]}"
        return f"MySQL {version}"

    def _lock_and_count(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> Body[tuple[Any, set[str] | None]]:
        writes = self.writes
        row = writes.new_row(conversation_id, batch, now, expires_at)
        bump = writes.bump_values(batch, now, expires_at, replace=replace)
        upsert = (
            mysql.insert(self.tables.conversations)
            .values(row)
            .on_duplicate_key_update([(col.name, value) for col, value in bump])
        )
        yield Execute(upsert)
        ids = [message.id for message in batch.messages[:INSERT_CHUNK]]
        rows = (yield Execute(self._counter_and_ids(conversation_id, ids))).rows
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

    def purge(self, now: datetime) -> Program[int]:
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
            rows = yield Query(self.writes.expired_ids(now, PURGE_BATCH, lock=False))
            for (conversation_id,) in rows:
                total += yield Transaction(partial(self._purge_one, conversation_id, now))
            if len(rows) < PURGE_BATCH:
                return total

    def _purge_one(self, conversation_id: str, now: datetime) -> Body[int]:
        if not (yield Execute(self.writes.purge_one(conversation_id, now))).rowcount:
            return 0  # revived meanwhile, or purged by another caller
        yield Execute(self.writes.delete_messages(conversation_id))
        return 1
