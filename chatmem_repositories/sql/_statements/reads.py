"""The read statements, as SQLAlchemy Core constructs (no I/O, the same on every dialect).

Every value is a bound parameter; table names come only from the validated prefix.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Integer,
    Select,
    and_,
    bindparam,
    exists,
    false,
    func,
    literal,
    or_,
    select,
    union_all,
)

from chatmem.backend import escape_like
from chatmem.messages import MessageType
from chatmem_repositories.sql._schema import Tables

__all__ = ["NO_POSITION_BOUND", "Reads", "expired", "live"]

NO_POSITION_BOUND = 2**63 - 1
"""``before`` of :meth:`Reads.recent` when there is none: above every position (BIGINT)."""

_LIKE_ESCAPE = "/"


def live(tables: Tables, now: datetime) -> ColumnElement[bool]:
    """The conversation row has not expired at ``now``."""
    c = tables.conversations.c
    return or_(c.expires_at.is_(None), c.expires_at > now)


def expired(tables: Tables, now: datetime) -> ColumnElement[bool]:
    """The conversation row has expired at ``now``."""
    c = tables.conversations.c
    return and_(c.expires_at.is_not(None), c.expires_at <= now)


class Reads:
    """Builds the read statements for one set of tables."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.conversations = tables.conversations
        self.messages = tables.messages
        self._window_and_system: CompoundSelect[Any, Any, Any] | None = None
        self._count: Select[Any] | None = None
        self._recent: Select[Any] | None = None
        self._everything: Select[Any] | None = None
        self._plain_page: Select[Any] | None = None
        self._version: Select[Any] | None = None

    def _rows(self, conversation_id: str, now: datetime) -> Select[Any]:
        # Liveness as an uncorrelated EXISTS, not a join: the database checks it once and
        # then walks the messages index, whatever its statistics say about the join.
        c, m = self.conversations.c, self.messages.c
        alive = exists().where(c.conversation_id == conversation_id, live(self.tables, now))
        return select(m.position, m.body).where(m.conversation_id == conversation_id, alive)

    def version(self) -> Select[Any]:
        """The live conversation's counter, ``next_position`` (its version plus one).

        Built once with the bind parameters ``cid`` and ``now``; no row for a conversation
        that is unknown or expired (version 0).
        """
        if self._version is None:
            c = self.conversations.c
            cid = bindparam("cid", type_=c.conversation_id.type)
            at = bindparam("now", type_=c.expires_at.type)
            self._version = select(c.next_position).where(
                c.conversation_id == cid,
                live(self.tables, at),  # type: ignore[arg-type]
            )
        return self._version

    def window(
        self, conversation_id: str, limit: int, before: int | None, now: datetime
    ) -> Select[Any]:
        """Newest ``limit`` chat messages, newest first (index ``messages_window``).

        System messages and events are stored with ``is_system`` true, so both are left out.
        """
        m = self.messages.c
        statement = self._rows(conversation_id, now).where(m.is_system == false())
        if before is not None:
            statement = statement.where(m.position < before)
        return statement.order_by(m.position.desc()).limit(limit)

    def recent(self) -> Select[Any]:
        """:meth:`window` built once, for the runner to compile once.

        Its bind parameters are ``cid``, ``limit``, ``before`` and ``now``; ``before`` is
        :data:`NO_POSITION_BOUND` for the newest messages.
        """
        if self._recent is None:
            m = self.messages.c
            self._recent = self.window(
                bindparam("cid", type_=m.conversation_id.type),  # type: ignore[arg-type]
                bindparam("limit", type_=Integer()),  # type: ignore[arg-type]
                bindparam("before", type_=m.position.type),  # type: ignore[arg-type]
                bindparam("now", type_=self.conversations.c.expires_at.type),  # type: ignore[arg-type]
            )
        return self._recent

    def window_and_system(self) -> CompoundSelect[Any, Any, Any]:
        """The window and the system message in one statement: ``(is_system, position, body)``.

        Each part stays a subquery on its own index; UNION ALL only concatenates them. The
        statement is built once with the bind parameters ``cid``, ``limit`` and ``now``
        (this is the read of every turn).
        """
        if self._window_and_system is None:
            cid = bindparam("cid", type_=self.messages.c.conversation_id.type)
            at = bindparam("now", type_=self.conversations.c.expires_at.type)
            window = self.window(cid, bindparam("limit", type_=Integer()), None, at).subquery()  # type: ignore[arg-type]
            system = self.system(cid, at).subquery()  # type: ignore[arg-type]
            self._window_and_system = union_all(
                select(literal(0, Integer), window.c.position, window.c.body),
                select(literal(1, Integer), system.c.position, system.c.body),
            )
        return self._window_and_system

    def system(self, conversation_id: str, now: datetime) -> Select[Any]:
        """The current system message through the conversation's reference (two key lookups).

        The position comes from a scalar subquery, so the message is found by its full
        primary key even when the planner's statistics are stale (a join let PostgreSQL
        scan the whole conversation).
        """
        c, m = self.conversations.c, self.messages.c
        current = (
            select(c.system_position)
            .where(c.conversation_id == conversation_id, live(self.tables, now))
            .scalar_subquery()
        )
        return select(m.position, m.body).where(
            m.conversation_id == conversation_id, m.position == current
        )

    def latest(self, conversation_id: str, message_type: MessageType, now: datetime) -> Select[Any]:
        """The newest message of one type (index ``messages_type``)."""
        m = self.messages.c
        return (
            self._rows(conversation_id, now)
            .where(m.type == str(message_type))
            .order_by(m.position.desc())
            .limit(1)
        )

    def everything(self) -> Select[Any]:
        """The whole history in order (primary key).

        Built once with the bind parameters ``cid`` and ``now``, for the runner to compile
        once: it is the read of every turn of a history that returns all its messages
        (LangChain's contract).
        """
        if self._everything is None:
            cid = bindparam("cid", type_=self.messages.c.conversation_id.type)
            at = bindparam("now", type_=self.conversations.c.expires_at.type)
            rows = self._rows(cid, at)  # type: ignore[arg-type]
            self._everything = rows.order_by(self.messages.c.position)
        return self._everything

    def count(self) -> Select[Any]:
        """How many messages a live conversation holds (primary key).

        Built once with the bind parameters ``cid`` and ``now``, so the runner compiles it
        once (``chatmem migrate`` counts every conversation it copies).
        """
        if self._count is None:
            cid = bindparam("cid", type_=self.messages.c.conversation_id.type)
            at = bindparam("now", type_=self.conversations.c.expires_at.type)
            self._count = select(func.count()).select_from(self._rows(cid, at).subquery())  # type: ignore[arg-type]
        return self._count

    def plain_page(self) -> Select[Any]:
        """A page of the whole history after a position, oldest first (primary key).

        :meth:`history` without filters, built once with the bind parameters ``cid``,
        ``now``, ``after`` and ``limit`` (what copies and exports read, page after page).
        """
        if self._plain_page is None:
            m = self.messages.c
            cid = bindparam("cid", type_=m.conversation_id.type)
            at = bindparam("now", type_=self.conversations.c.expires_at.type)
            self._plain_page = (
                self._rows(cid, at)  # type: ignore[arg-type]
                .where(m.position > bindparam("after", type_=m.position.type))
                .order_by(m.position)
                .limit(bindparam("limit", type_=Integer()))
            )
        return self._plain_page

    def history(
        self,
        conversation_id: str,
        now: datetime,
        *,
        since: datetime | None,
        until: datetime | None,
        types: Collection[MessageType] | None,
        text: str | None,
        after: int | None,
        limit: int,
    ) -> Select[Any]:
        """A page of history matching every filter, oldest first."""
        m = self.messages.c
        statement = self._rows(conversation_id, now)
        if since is not None:
            statement = statement.where(m.created_at >= since)
        if until is not None:
            statement = statement.where(m.created_at < until)
        if types is not None:
            statement = statement.where(m.type.in_([str(t) for t in types]))
        if text is not None:
            # Both sides casefolded, wildcards escaped: a literal, case-insensitive substring
            # match on every dialect, whatever its LIKE does with case. The pattern is bound
            # as the column's SearchText, so NUL is replaced in it as in the stored text.
            pattern = f"%{escape_like(text.casefold(), _LIKE_ESCAPE)}%"
            statement = statement.where(m.search_text.like(pattern, escape=_LIKE_ESCAPE))
        if after is not None:
            statement = statement.where(m.position > after)
        return statement.order_by(m.position).limit(limit)

    def conversation_ids(self, now: datetime) -> Select[Any]:
        """Ids of all live conversations."""
        return select(self.conversations.c.conversation_id).where(live(self.tables, now))

    def page(
        self, now: datetime, *, owner: str | None, cursor: str | None, limit: int
    ) -> Select[Any]:
        """One page of live conversation ids in id order, plus one row to detect more."""
        c = self.conversations.c
        statement = select(c.conversation_id).where(live(self.tables, now))
        if owner is not None:
            statement = statement.where(c.owner == owner)
        if cursor is not None:
            statement = statement.where(c.conversation_id > cursor)
        return statement.order_by(c.conversation_id).limit(limit + 1)
