"""The summary statements and the summary text's encoding (no I/O, the same on every dialect).

A conversation has at most one summary row, keyed by the conversation id. The row records
the *life* of the conversation it was written in: the conversation row's ``created_at`` and
``first_position`` at that time. An append that restarts an expired conversation moves
``first_position``; a conversation deleted or purged and then started again has a later
``created_at``. So a summary is read only while its life is the conversation's current,
live one, and a new life starts without a summary, at version 0.

Every write first locks the conversation row (every other write of a conversation takes
that lock first too, so the lock order never changes), then is a compare-and-set on its
own: the first version is an ``INSERT`` that the primary key lets only one writer make, and
each later one an ``UPDATE ... WHERE version = expected``; the affected-row count says
who won.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from sqlalchemy import Delete, Insert, Select, Update, and_, delete, insert, not_, select, update

from chatmem.exceptions import ConfigurationError
from chatmem_repositories.sql._schema import Tables

__all__ = ["SummaryStatements", "decode_summary_text", "encode_summary_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_summary_text(text: str) -> str:
    r"""Return ``text`` as a JSON string literal, lossless on every database.

    NUL (which PostgreSQL's text rejects) becomes ``\u0000`` and a lone surrogate (which
    UTF-8 cannot hold) its escape; every other character is stored as itself.

    Raises:
        ConfigurationError: If ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"a summary's text must be a string, got {type(text).__name__}")
    encoded = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)


def decode_summary_text(stored: str) -> str:
    """Return the text :func:`encode_summary_text` encoded."""
    text = json.loads(stored)
    if not isinstance(text, str):
        raise ValueError("a stored summary is not a JSON string")
    return text


class SummaryStatements:
    """Builds the summary statements for one set of tables.

    The writes take the text as :func:`encode_summary_text` returned it (``stored``).
    """

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.conversations = tables.conversations
        self.summaries = tables.summaries

    def _same_life(self, created_at: Any, first_position: Any) -> Any:
        s = self.summaries.c
        return and_(s.life_created_at == created_at, s.life_first_position == first_position)

    # -- reads -------------------------------------------------------------------------------

    def find(self, conversation_id: str, now: datetime) -> Select[Any]:
        """``(text, covers, version)`` of the live conversation's summary of its current life."""
        c, s = self.conversations.c, self.summaries.c
        return (
            select(s.text, s.covers, s.version)
            .select_from(
                self.summaries.join(
                    self.conversations,
                    and_(
                        c.conversation_id == s.conversation_id,
                        self._same_life(c.created_at, c.first_position),
                    ),
                )
            )
            .where(
                s.conversation_id == conversation_id,
                (c.expires_at.is_(None)) | (c.expires_at > now),
            )
        )

    def stale(self, limit: int) -> Select[Any]:
        """Summaries whose life is not their conversation's current one (or that lost it)."""
        c, s = self.conversations.c, self.summaries.c
        return (
            select(s.conversation_id, s.life_created_at, s.life_first_position)
            .select_from(
                self.summaries.outerjoin(
                    self.conversations,
                    and_(
                        c.conversation_id == s.conversation_id,
                        self._same_life(c.created_at, c.first_position),
                    ),
                )
            )
            .where(c.conversation_id.is_(None))
            .order_by(s.conversation_id)
            .limit(limit)
        )

    # -- the version-checked write -------------------------------------------------------------

    def touch(self, conversation_id: str) -> Update:
        """Write the conversation row unchanged: SQLite's way to take the write lock first.

        A SQLite transaction that reads before it writes may have to upgrade its read lock
        and fail; one that starts with a write waits its turn instead.
        """
        c = self.conversations.c
        return (
            update(self.conversations)
            .where(c.conversation_id == conversation_id)
            .values(next_position=c.next_position)
        )

    def lock_life(self, conversation_id: str, *, for_update: bool) -> Select[Any]:
        """``(created_at, first_position, expires_at)`` of the conversation row, locked."""
        c = self.conversations.c
        statement = select(c.created_at, c.first_position, c.expires_at).where(
            c.conversation_id == conversation_id
        )
        return statement.with_for_update() if for_update else statement

    def _values(
        self, stored: str, covers: int, version: int, life: tuple[Any, Any], now: datetime
    ) -> dict[str, Any]:
        return {
            "life_created_at": life[0],
            "life_first_position": life[1],
            "version": version,
            "covers": covers,
            "text": stored,
            "updated_at": now,
        }

    def insert_first(
        self,
        conversation_id: str,
        stored: str,
        covers: int,
        life: tuple[Any, Any],
        now: datetime,
    ) -> Insert:
        """Insert version 1; the primary key refuses it if the conversation has a row."""
        return insert(self.summaries).values(
            conversation_id=conversation_id, **self._values(stored, covers, 1, life, now)
        )

    def replace_stale(
        self,
        conversation_id: str,
        stored: str,
        covers: int,
        life: tuple[Any, Any],
        now: datetime,
    ) -> Update:
        """Write version 1 over a summary of an earlier life (affects no row otherwise)."""
        s = self.summaries.c
        return (
            update(self.summaries)
            .where(s.conversation_id == conversation_id, not_(self._same_life(*life)))
            .values(self._values(stored, covers, 1, life, now))
        )

    def advance(
        self,
        conversation_id: str,
        stored: str,
        covers: int,
        expected_version: int,
        life: tuple[Any, Any],
        now: datetime,
    ) -> Update:
        """Write the next version if this life's stored one is ``expected_version``."""
        s = self.summaries.c
        return (
            update(self.summaries)
            .where(
                s.conversation_id == conversation_id,
                s.version == expected_version,
                self._same_life(*life),
            )
            .values(self._values(stored, covers, expected_version + 1, life, now))
        )

    # -- deletion -------------------------------------------------------------------------------

    def delete(self, conversation_id: str) -> Delete:
        """Delete the conversation's summary."""
        s = self.summaries.c
        return delete(self.summaries).where(s.conversation_id == conversation_id)

    def delete_stale(self, conversation_id: str, created_at: Any, first_position: Any) -> Delete:
        """Delete one summary found by :meth:`stale`, if its row still has that life."""
        s = self.summaries.c
        return delete(self.summaries).where(
            s.conversation_id == conversation_id, self._same_life(created_at, first_position)
        )
