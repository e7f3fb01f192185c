"""The write statements every dialect shares, as SQLAlchemy Core constructs (no I/O).

The dialect-specific ones (upserts, ``RETURNING``, PostgreSQL's one-statement append) are
built by the plans in :mod:`chatmem_repositories.sql._async.plans`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Delete,
    Insert,
    Integer,
    Select,
    Update,
    bindparam,
    case,
    delete,
    false,
    func,
    insert,
    null,
    select,
    update,
)

from chatmem.conversation_ids import owner_of
from chatmem.messages import MessageType
from chatmem_repositories.sql._codec import FIRST_POSITION, Batch
from chatmem_repositories.sql._schema import Tables
from chatmem_repositories.sql._statements.reads import expired

__all__ = ["Writes"]


class Writes:
    """Builds the portable write statements for one set of tables."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.conversations = tables.conversations
        self.messages = tables.messages
        self._unreserve: Update | None = None

    # -- reserving positions ---------------------------------------------------------------

    def new_row(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> dict[str, Any]:
        """The conversation row of a first append, with the batch's positions reserved."""
        offset = batch.system_offset
        return {
            "conversation_id": conversation_id,
            "owner": owner_of(conversation_id),
            "next_position": FIRST_POSITION + len(batch),
            "first_position": 0,
            "system_position": None if offset is None else FIRST_POSITION + offset,
            "created_at": now,
            "updated_at": now,
            "expires_at": expires_at,
        }

    def bump_values(
        self, batch: Batch, now: datetime, expires_at: datetime | None, *, replace: bool
    ) -> list[tuple[Any, Any]]:
        """Assignments that reserve ``len(batch)`` positions in an existing row, in order.

        Ordered: MySQL evaluates ``ON DUPLICATE KEY UPDATE`` assignments left to right with
        the new values, so everything that reads next_position/expires_at comes first. An
        expired row starts a new life: ``first_position`` moves to the reserved block.
        """
        c = self.conversations.c
        is_expired = expired(self.tables, now)
        offset = batch.system_offset
        system: Any
        if offset is not None:
            system = c.next_position + offset
        elif replace:
            system = null()
        else:
            system = case((is_expired, null()), else_=c.system_position)
        return [
            (c.first_position, case((is_expired, c.next_position), else_=c.first_position)),
            (c.system_position, system),
            (c.next_position, c.next_position + len(batch)),
            (c.updated_at, now),
            (c.expires_at, expires_at),
        ]

    def bump(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool,
    ) -> Update:
        """Reserve positions in an existing row; locks the row."""
        c = self.conversations.c
        values = {
            col.name: v for col, v in self.bump_values(batch, now, expires_at, replace=replace)
        }
        return update(self.conversations).where(c.conversation_id == conversation_id).values(values)

    def create(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Insert:
        """Insert a new conversation row with the batch's positions reserved."""
        row = self.new_row(conversation_id, batch, now, expires_at)
        return insert(self.conversations).values(row)

    def counter(self, conversation_id: str) -> Select[Any]:
        """Read ``(next_position, first_position)`` of a row, locking it."""
        c = self.conversations.c
        return (
            select(c.next_position, c.first_position)
            .where(c.conversation_id == conversation_id)
            .with_for_update()
        )

    def unreserve(self) -> Update:
        """Give back the positions of an append that stored nothing (its ids were all stored).

        Built once, with the parameters ``cid``, ``n`` (the positions reserved) and ``end``
        (the counter the reservation left). Only while no other append has reserved since:
        the counter is the conversation's version, which then stays as it was.
        """
        if self._unreserve is None:
            c = self.conversations.c
            n = bindparam("n", type_=Integer())
            self._unreserve = (
                update(self.conversations)
                .where(
                    c.conversation_id == bindparam("cid", type_=c.conversation_id.type),
                    c.next_position == bindparam("end", type_=c.next_position.type),
                )
                .values(next_position=c.next_position - n)
            )
        return self._unreserve

    # -- messages --------------------------------------------------------------------------

    def existing_ids(self, conversation_id: str, ids: Collection[str]) -> Select[Any]:
        """Message ids of the batch that the conversation already holds."""
        m = self.messages.c
        return select(m.message_id).where(
            m.conversation_id == conversation_id, m.message_id.in_(list(ids))
        )

    def insert_messages(self, rows: list[dict[str, Any]]) -> Insert:
        """Insert message rows (their ids are known not to be stored yet)."""
        return insert(self.messages).values(rows)

    def fix_system(self, conversation_id: str) -> Update:
        """Point the conversation at its newest stored system message (rare repair path)."""
        c, m = self.conversations.c, self.messages.c
        newest = (
            select(func.max(m.position))
            .where(m.conversation_id == conversation_id, m.type == str(MessageType.SYSTEM))
            .scalar_subquery()
        )
        return (
            update(self.conversations)
            .where(c.conversation_id == conversation_id)
            .values(system_position=newest)
        )

    def delete_messages(self, conversation_id: str) -> Delete:
        """Delete all of a conversation's messages.

        An equality on the key prefix only: InnoDB then locks the conversation's rows and
        just the gap after them, never the next conversation's first row (a range such as
        ``position < n`` would take a next-key lock on it).
        """
        m = self.messages.c
        return delete(self.messages).where(m.conversation_id == conversation_id)

    # -- retention and deletion ------------------------------------------------------------

    def lock(self, conversation_id: str) -> Select[Any]:
        """Lock a conversation row and read its expiry."""
        c = self.conversations.c
        return select(c.expires_at).where(c.conversation_id == conversation_id).with_for_update()

    def delete_chat_before(self, conversation_id: str, position: int, *, scan: bool) -> Delete:
        """Delete user, assistant and tool messages before ``position`` (events are kept).

        Args:
            conversation_id: The conversation.
            position: Messages positioned before this go.
            scan: Compare ``position + 0``, which keeps the position out of the index range,
                so the statement scans by the conversation id alone (for InnoDB's locks).
        """
        m = self.messages.c
        before = (m.position + 0 if scan else m.position) < position
        return delete(self.messages).where(
            m.conversation_id == conversation_id, m.is_system == false(), before
        )

    def delete_chat_between(
        self, conversation_id: str, after: int | None, through: int, *, scan: bool
    ) -> Delete:
        """Delete user, assistant and tool messages positioned in ``(after, through]``.

        System messages and events (``is_system`` true) are kept.

        Args:
            conversation_id: The conversation.
            after: Messages after this position go; ``None``: from the first.
            through: Messages up to and including this position go.
            scan: As for :meth:`delete_chat_before`.
        """
        m = self.messages.c
        position = m.position + 0 if scan else m.position
        statement = delete(self.messages).where(
            m.conversation_id == conversation_id, m.is_system == false(), position <= through
        )
        return statement if after is None else statement.where(position > after)

    def delete_conversation(self, conversation_id: str) -> Delete:
        """Delete a conversation row (first, so its lock orders us after any appender)."""
        c = self.conversations.c
        return delete(self.conversations).where(c.conversation_id == conversation_id)

    def expired_ids(self, now: datetime, limit: int, *, lock: bool) -> Select[Any]:
        """A batch of expired conversation ids, soonest expired first, locked if ``lock``.

        In expiry order, so that any plan reads the expiry index and stops at ``limit``: in
        id order, a plan made without the values (PostgreSQL's generic plan) walked every
        conversation's row to find the few expired ones.
        """
        c = self.conversations.c
        statement = (
            select(c.conversation_id)
            .where(expired(self.tables, now))
            .order_by(c.expires_at)
            .limit(limit)
        )
        return statement.with_for_update() if lock else statement

    def purge_one(self, conversation_id: str, now: datetime) -> Delete:
        """Delete one conversation row if it is still expired (found by its primary key)."""
        c = self.conversations.c
        return delete(self.conversations).where(
            c.conversation_id == conversation_id, expired(self.tables, now)
        )

    def purge_messages(self, ids: Sequence[str], now: datetime) -> Delete:
        """Delete the messages of those of ``ids`` that are still expired."""
        c, m = self.conversations.c, self.messages.c
        still = select(c.conversation_id).where(
            c.conversation_id.in_(list(ids)), expired(self.tables, now)
        )
        return delete(self.messages).where(m.conversation_id.in_(still))

    def purge_conversations(self, ids: Sequence[str], now: datetime) -> Delete:
        """Delete those of ``ids`` that are still expired."""
        c = self.conversations.c
        return delete(self.conversations).where(
            c.conversation_id.in_(list(ids)), expired(self.tables, now)
        )
