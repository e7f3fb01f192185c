"""The SQL statements of the repository, as SQLAlchemy Core constructs (no I/O).

Every value is a bound parameter; table names come only from the validated prefix.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import (
    Boolean,
    ColumnElement,
    CompoundSelect,
    Delete,
    Insert,
    Integer,
    Select,
    String,
    Text,
    Update,
    and_,
    bindparam,
    case,
    column,
    delete,
    exists,
    false,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY

from chatmem._records import Position, StoredMessage
from chatmem._repository_support import escape_like
from chatmem.conversation_ids import owner_of
from chatmem.exceptions import ConfigurationError
from chatmem.messages import (
    Message,
    MessageType,
    SystemMessage,
    decode_message,
    encode_message,
    searchable_text,
)
from chatmem_repositories.sql._schema import MAX_MESSAGE_ID_LENGTH, Tables
from chatmem_repositories.sql._types import SearchText

__all__ = ["Batch", "Statements", "as_position", "to_stored"]

_LIKE_ESCAPE = "/"
# Rows per INSERT: well under every dialect's bound-parameter limit (SQLite: 32766).
INSERT_CHUNK = 500
FIRST_POSITION = 1
"""Position of a new conversation's first message: a reservation starting here created the
conversation row, so it has no messages yet."""

ReservationMode = Literal["returning", "mysql", "generic"]


def as_position(value: Position) -> int:
    """Return a position this backend handed out as an int, or raise ConfigurationError."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise ConfigurationError(f"not a position of the SQL repository: {value!r}")


def to_stored(row: Sequence[Any], conversation_id: str) -> StoredMessage:
    """Decode a ``(position, body)`` row; a corrupt body raises MessageDecodeError."""
    return StoredMessage(int(row[0]), decode_message(row[1], conversation_id=conversation_id))


class Batch:
    """Messages to store in one transaction: de-duplicated by id, first occurrence wins."""

    def __init__(self, messages: Sequence[Message]) -> None:
        seen: set[str] = set()
        self.messages: list[Message] = []
        for message in messages:
            if len(message.id) > MAX_MESSAGE_ID_LENGTH:
                raise ConfigurationError(
                    f"message id is {len(message.id)} characters long; "
                    f"the SQL repository stores at most {MAX_MESSAGE_ID_LENGTH}"
                )
            if message.id not in seen:
                seen.add(message.id)
                self.messages.append(message)
        last_system = None
        for index, message in enumerate(self.messages):
            if isinstance(message, SystemMessage):
                last_system = index
        self.system_offset: int | None = last_system
        """Index of the last system message, whose position becomes the current one."""

    def rows(self, conversation_id: str, start: int) -> list[dict[str, Any]]:
        """Return one insert row per message, positions ``start``, ``start + 1``, ..."""
        return [
            {
                "conversation_id": conversation_id,
                "position": start + i,
                "message_id": message.id,
                "type": str(message.type),
                "is_system": isinstance(message, SystemMessage),
                "created_at": message.created_at,
                "search_text": searchable_text(message).casefold(),
                "body": encode_message(message),
            }
            for i, message in enumerate(self.messages)
        ]


# Element types of the per-column arrays the one-statement PostgreSQL append unnests.
_ARRAY_COLUMNS: dict[str, Any] = {
    "message_id": String(),
    "type": String(),
    "is_system": Boolean(),
    "created_at": postgresql.TIMESTAMP(),
    # The column's own type, so the array's items get its NUL substitution.
    "search_text": SearchText(),
    "body": Text(),
}


class Statements:
    """Builds every statement for one set of tables and one dialect."""

    def __init__(self, tables: Tables, dialect_name: str) -> None:
        self.conversations = tables.conversations
        self.messages = tables.messages
        self.dialect_name = dialect_name
        self._append_one: Select[Any] | None = None
        self._window_and_system: CompoundSelect[Any, Any, Any] | None = None
        self.reservation: ReservationMode = (
            "returning"
            if dialect_name in ("postgresql", "sqlite")
            else "mysql"
            if dialect_name in ("mysql", "mariadb")
            else "generic"
        )
        self.one_statement_append = dialect_name == "postgresql"
        """Whether :meth:`append_in_one_statement` is available."""
        self.skip_conflicts = dialect_name in ("postgresql", "sqlite")
        """Whether one INSERT can skip ids already stored and return what it stored."""
        self.innodb = dialect_name in ("mysql", "mariadb")
        """Whether locking statements take InnoDB's next-key (row and gap) locks: they must
        then scan only the conversation they change (see :meth:`purge_one`)."""

    # -- conditions --------------------------------------------------------------------------

    def live(self, now: datetime) -> ColumnElement[bool]:
        """The conversation row has not expired."""
        c = self.conversations.c
        return or_(c.expires_at.is_(None), c.expires_at > now)

    def _expired(self, now: datetime) -> ColumnElement[bool]:
        c = self.conversations.c
        return and_(c.expires_at.is_not(None), c.expires_at <= now)

    # -- appends -------------------------------------------------------------------------------

    def _new_row(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> dict[str, Any]:
        n, offset = len(batch.messages), batch.system_offset
        return {
            "conversation_id": conversation_id,
            "owner": owner_of(conversation_id),
            "next_position": FIRST_POSITION + n,
            "first_position": 0,
            "system_position": None if offset is None else FIRST_POSITION + offset,
            "created_at": now,
            "updated_at": now,
            "expires_at": expires_at,
        }

    def _bump(
        self, batch: Batch, now: datetime, expires_at: datetime | None, *, replace: bool
    ) -> list[tuple[Any, Any]]:
        # Ordered: MySQL evaluates ON DUPLICATE KEY UPDATE assignments left to right with the
        # new values, so everything that reads next_position/expires_at comes first.
        c = self.conversations.c
        expired = self._expired(now)
        offset = batch.system_offset
        system: Any
        if offset is not None:
            system = c.next_position + offset
        elif replace:
            system = null()
        else:
            system = case((expired, null()), else_=c.system_position)
        return [
            (c.first_position, case((expired, c.next_position), else_=c.first_position)),
            (c.system_position, system),
            (c.next_position, c.next_position + len(batch.messages)),
            (c.updated_at, now),
            (c.expires_at, expires_at),
        ]

    def reserve(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool = False,
    ) -> Insert:
        """Create or lock the conversation row and reserve ``len(batch)`` positions.

        PostgreSQL and SQLite return ``(next_position, first_position)`` after the update;
        MySQL/MariaDB need :meth:`counter` afterwards.
        """
        row = self._new_row(conversation_id, batch, now, expires_at)
        bump = self._bump(batch, now, expires_at, replace=replace)
        c = self.conversations.c
        if self.dialect_name == "postgresql":
            pg = postgresql.insert(self.conversations).values(row)
            return pg.on_conflict_do_update(
                index_elements=[c.conversation_id], set_={col.name: v for col, v in bump}
            ).returning(c.next_position, c.first_position)
        if self.dialect_name == "sqlite":
            lite = sqlite.insert(self.conversations).values(row)
            return lite.on_conflict_do_update(
                index_elements=[c.conversation_id], set_={col.name: v for col, v in bump}
            ).returning(c.next_position, c.first_position)
        my = mysql.insert(self.conversations).values(row)
        return my.on_duplicate_key_update([(col.name, value) for col, value in bump])

    def bump(
        self,
        conversation_id: str,
        batch: Batch,
        now: datetime,
        expires_at: datetime | None,
        *,
        replace: bool = False,
    ) -> Update:
        """Reserve positions in an existing row (generic dialects); locks the row."""
        c = self.conversations.c
        values = {col.name: v for col, v in self._bump(batch, now, expires_at, replace=replace)}
        return update(self.conversations).where(c.conversation_id == conversation_id).values(values)

    def create(
        self, conversation_id: str, batch: Batch, now: datetime, expires_at: datetime | None
    ) -> Insert:
        """Insert a new conversation row with the batch's positions reserved."""
        row = self._new_row(conversation_id, batch, now, expires_at)
        return insert(self.conversations).values(row)

    def counter(self, conversation_id: str) -> Select[Any]:
        """Read ``(next_position, first_position)`` of a row this transaction has locked."""
        c = self.conversations.c
        return (
            select(c.next_position, c.first_position)
            .where(c.conversation_id == conversation_id)
            .with_for_update()
        )

    def append_in_one_statement(
        self,
        conversation_id: str,
        rows: list[dict[str, Any]],
        now: datetime,
        expires_at: datetime | None,
    ) -> tuple[Select[Any], dict[str, Any]]:
        """PostgreSQL: reserve positions and insert new messages in one statement.

        ``WITH r AS (upsert ... RETURNING next_position), ins AS (INSERT ... SELECT FROM r,
        unnest(arrays) ... ON CONFLICT DO NOTHING RETURNING position) SELECT r.next_position,
        ins.position FROM r LEFT JOIN ins``. Run in autocommit, it is the whole append in
        one round trip, and the row lock is held for that statement only. It covers the
        common case, batches without a system message: the upsert does nothing to an
        expired conversation, so no row comes back and the caller takes the full path.

        Returns:
            The statement (built once, with bind parameters only) and its parameters.
        """
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
        if self._append_one is None:
            self._append_one = self._build_append_one()
        return self._append_one, params

    def _build_append_one(self) -> Select[Any]:
        # Built once per repository: constructing this statement costs more than running it.
        # unnest() of one array per column, not VALUES: the text is the same for every batch
        # size, so it is also compiled once.
        c, m = self.conversations.c, self.messages.c
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
            postgresql.insert(self.conversations)
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
            postgresql.insert(self.messages)
            .from_select(["conversation_id", "position", *_ARRAY_COLUMNS], source)
            .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
            .returning(m.position)
            .cte("inserted")
        )
        return select(reserve.c.next_position, inserted.c.position).select_from(
            reserve.outerjoin(inserted, true())
        )

    def counter_and_ids(
        self, conversation_id: str, ids: Collection[str]
    ) -> CompoundSelect[Any, Any, Any]:
        """``(next_position, first_position, NULL)`` then ``(NULL, NULL, id)`` per stored id.

        For MySQL/MariaDB after the upsert: one round trip instead of two. No FOR UPDATE is
        needed: the upsert holds the row lock, and this first plain read of the transaction
        sees every commit made before it, plus our own update.
        """
        c, m = self.conversations.c, self.messages.c
        counter = select(c.next_position, c.first_position, null().label("message_id")).where(
            c.conversation_id == conversation_id
        )
        existing = select(null(), null(), m.message_id).where(
            m.conversation_id == conversation_id, m.message_id.in_(list(ids))
        )
        return union_all(counter, existing)

    def existing_ids(self, conversation_id: str, ids: Collection[str]) -> Select[Any]:
        """Message ids of the batch that the conversation already holds."""
        m = self.messages.c
        return select(m.message_id).where(
            m.conversation_id == conversation_id, m.message_id.in_(list(ids))
        )

    def insert_messages(self, rows: list[dict[str, Any]], *, skip_conflicts: bool) -> Insert:
        """Insert rows; with ``skip_conflicts``, skip stored ids and return stored positions."""
        if not skip_conflicts:
            return insert(self.messages).values(rows)
        m = self.messages.c
        dialect_insert = postgresql.insert if self.dialect_name == "postgresql" else sqlite.insert
        return (
            dialect_insert(self.messages)
            .values(rows)
            .on_conflict_do_nothing(index_elements=[m.conversation_id, m.message_id])
            .returning(m.position)
        )

    def fix_system(self, conversation_id: str) -> Update:
        """Point the conversation at its newest stored system message (rare repair path)."""
        c, m = self.conversations.c, self.messages.c
        newest = (
            select(func.max(m.position))
            .where(m.conversation_id == conversation_id, m.is_system.is_(True))
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

    # -- reads ---------------------------------------------------------------------------------

    def _rows(self, conversation_id: str, now: datetime) -> Select[Any]:
        # Liveness as an uncorrelated EXISTS, not a join: the database checks it once and
        # then walks the messages index, whatever its statistics say about the join.
        c, m = self.conversations.c, self.messages.c
        alive = exists().where(c.conversation_id == conversation_id, self.live(now))
        return select(m.position, m.body).where(m.conversation_id == conversation_id, alive)

    def window(
        self, conversation_id: str, limit: int, before: int | None, now: datetime
    ) -> Select[Any]:
        """Newest ``limit`` non-system messages, newest first (index ``messages_window``)."""
        m = self.messages.c
        statement = self._rows(conversation_id, now).where(m.is_system == false())
        if before is not None:
            statement = statement.where(m.position < before)
        return statement.order_by(m.position.desc()).limit(limit)

    def window_and_system(
        self, conversation_id: str, limit: int, now: datetime
    ) -> tuple[CompoundSelect[Any, Any, Any], dict[str, Any]]:
        """The window and the system message in one statement: ``(is_system, position, body)``.

        Each part stays a subquery on its own index; UNION ALL only concatenates them. The
        statement is built once with bind parameters (this is the read of every turn).

        Returns:
            The statement and its parameters.
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
        return self._window_and_system, {"cid": conversation_id, "limit": limit, "now": now}

    def system(self, conversation_id: str, now: datetime) -> Select[Any]:
        """The current system message through the conversation's reference (two key lookups).

        The position comes from a scalar subquery, so the message is found by its full
        primary key even when the planner's statistics are stale (a join let PostgreSQL
        scan the whole conversation).
        """
        c, m = self.conversations.c, self.messages.c
        current = (
            select(c.system_position)
            .where(c.conversation_id == conversation_id, self.live(now))
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

    def everything(self, conversation_id: str, now: datetime) -> Select[Any]:
        """The whole history in order (primary key)."""
        return self._rows(conversation_id, now).order_by(self.messages.c.position)

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
        return select(self.conversations.c.conversation_id).where(self.live(now))

    def page(
        self, now: datetime, *, owner: str | None, cursor: str | None, limit: int
    ) -> Select[Any]:
        """One page of live conversation ids in id order, plus one row to detect more."""
        c = self.conversations.c
        statement = select(c.conversation_id).where(self.live(now))
        if owner is not None:
            statement = statement.where(c.owner == owner)
        if cursor is not None:
            statement = statement.where(c.conversation_id > cursor)
        return statement.order_by(c.conversation_id).limit(limit + 1)

    # -- retention and deletion ------------------------------------------------------------

    def lock(self, conversation_id: str) -> Select[Any]:
        """Lock a conversation row and read its expiry."""
        c = self.conversations.c
        return select(c.expires_at).where(c.conversation_id == conversation_id).with_for_update()

    def delete_chat_before(self, conversation_id: str, position: int) -> Delete:
        """Delete non-system messages before ``position``."""
        m = self.messages.c
        # On InnoDB, `position + 0` keeps the position out of the index range: the scan is
        # then an equality on the conversation, which locks only its rows and the gap after
        # them. A range ending past the conversation's last row would take a next-key lock
        # on the next conversation's first row, which that conversation's writers wait for.
        before = (m.position + 0 if self.innodb else m.position) < position
        return delete(self.messages).where(
            m.conversation_id == conversation_id, m.is_system == false(), before
        )

    def delete_conversation(self, conversation_id: str) -> Delete:
        """Delete a conversation row (first, so its lock orders us after any appender)."""
        c = self.conversations.c
        return delete(self.conversations).where(c.conversation_id == conversation_id)

    def expired(self, now: datetime, limit: int, *, lock: bool) -> Select[Any]:
        """A batch of expired conversation ids in id order, locked if ``lock``."""
        c = self.conversations.c
        statement = (
            select(c.conversation_id)
            .where(self._expired(now))
            .order_by(c.conversation_id)
            .limit(limit)
        )
        return statement.with_for_update() if lock else statement

    def purge_one(self, conversation_id: str, now: datetime) -> Delete:
        """Delete one conversation row if it is still expired (InnoDB's purge).

        Found by its primary key, so InnoDB locks that row only, before its index entries:
        the order of an append. A locking scan of the expiry index locks the entries first,
        and next-key locks the entry of the first live conversation after them; with
        appends locking row then entry, the two deadlock.
        """
        c = self.conversations.c
        return delete(self.conversations).where(
            c.conversation_id == conversation_id, self._expired(now)
        )

    def purge_messages(self, ids: Sequence[str], now: datetime) -> Delete:
        """Delete the messages of those of ``ids`` that are still expired."""
        c, m = self.conversations.c, self.messages.c
        still = select(c.conversation_id).where(
            c.conversation_id.in_(list(ids)), self._expired(now)
        )
        return delete(self.messages).where(m.conversation_id.in_(still))

    def purge_conversations(self, ids: Sequence[str], now: datetime) -> Delete:
        """Delete those of ``ids`` that are still expired."""
        c = self.conversations.c
        return delete(self.conversations).where(
            c.conversation_id.in_(list(ids)), self._expired(now)
        )
