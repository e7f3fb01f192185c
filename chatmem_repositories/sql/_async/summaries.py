"""The SQL repository's summaries: reads, the version-checked write, and their deletion.

Each operation runs through the repository's runner like every other operation, so it gets
the same transactions, retries and error mapping. The statements and the reasoning behind them are
in :mod:`chatmem_repositories.sql._statements.summaries`.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from sqlalchemy import Executable

from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.repository import ConversationSummary
from chatmem_repositories.sql._async.runner import AsyncRunner, AsyncTransaction
from chatmem_repositories.sql._schema import Tables
from chatmem_repositories.sql._statements.summaries import (
    SummaryStatements,
    decode_summary_text,
    encode_summary_text,
)

__all__ = ["AsyncSummaries"]

STALE_BATCH = 500
"""Summaries of ended lives read per round of :meth:`AsyncSummaries.delete_stale`."""


class AsyncSummaries:
    """The summary store of one SQL repository.

    Args:
        runner: The repository's runner.
        tables: The repository's tables.
        dialect_name: The engine's dialect name (SQLite takes its write lock differently).
    """

    def __init__(self, runner: AsyncRunner, tables: Tables, dialect_name: str) -> None:
        self._runner = runner
        self._statements = SummaryStatements(tables)
        self._sqlite = dialect_name == "sqlite"

    async def find(self, conversation_id: str, now: datetime) -> ConversationSummary | None:
        """Return the live conversation's summary of its current life, or ``None``.

        Raises:
            MessageDecodeError: If the stored text is not what this backend writes.
        """
        rows = await self._runner.read(self._statements.find(conversation_id, now))
        if not rows:
            return None
        stored, covers, version = rows[0]
        try:
            text = decode_summary_text(stored)
        except ValueError as exc:
            raise MessageDecodeError(
                f"the stored summary of conversation {conversation_id!r} is corrupt: {exc}"
            ) from exc
        return ConversationSummary(text, int(covers), int(version))

    async def save(
        self,
        conversation_id: str,
        text: str,
        covers: int,
        expected_version: int,
        now: datetime,
    ) -> bool:
        """Write the summary if this life's stored version is ``expected_version``.

        Returns:
            True if the write won; False if another writer got there first, or the
            conversation is not live (a summary must not outlive it).

        Raises:
            ConfigurationError: If ``text`` is not a string or ``expected_version`` is not
                a whole number from 0.
        """
        if (
            not isinstance(expected_version, int)
            or isinstance(expected_version, bool)
            or expected_version < 0
        ):
            raise ConfigurationError(
                f"expected_version must be an int from 0, got {expected_version!r}"
            )
        stored = encode_summary_text(text)
        body = partial(self._save, conversation_id, stored, covers, expected_version, now)
        return await self._runner.perform(partial(self._runner.transaction, body))

    async def _save(
        self,
        conversation_id: str,
        stored: str,
        covers: int,
        expected_version: int,
        now: datetime,
        tx: AsyncTransaction,
    ) -> bool:
        statements = self._statements
        if self._sqlite:
            await tx.execute(statements.touch(conversation_id))
        lock = statements.lock_life(conversation_id, for_update=not self._sqlite)
        row = (await tx.execute(lock)).first()
        if row is None or (row[2] is not None and row[2] <= now):
            return False  # no live conversation: its summary would outlive it
        life = (row[0], row[1])
        if expected_version == 0:
            insert = statements.insert_first(conversation_id, stored, covers, life, now)
            if await tx.insert_or_conflict(insert):
                return True
            # A row exists: it counts as version 0 only if it is an earlier life's.
            stale = statements.replace_stale(conversation_id, stored, covers, life, now)
            return bool((await tx.execute(stale)).rowcount == 1)
        advance = statements.advance(conversation_id, stored, covers, expected_version, life, now)
        return bool((await tx.execute(advance)).rowcount == 1)

    def deletion(self, conversation_id: str) -> Executable:
        """The statement that deletes the conversation's summary.

        The plan runs it in its deletion of the conversation, after locking the
        conversation row (as every write does).
        """
        return self._statements.delete(conversation_id)

    async def delete_stale(self) -> int:
        """Delete the summaries of lives that ended (purged or deleted conversations).

        One summary per transaction, each only if it still has the life it was found with,
        so a summary written meanwhile for a new life is never touched.

        Returns:
            How many were deleted.
        """
        return await self._runner.perform(self._delete_stale)

    async def _delete_stale(self) -> int:
        total = 0
        while True:
            rows = await self._runner.query(self._statements.stale(STALE_BATCH))
            round_total = 0
            for conversation_id, created_at, first_position in rows:
                statement = self._statements.delete_stale(
                    conversation_id, created_at, first_position
                )
                round_total += await self._runner.transaction(partial(_count, statement))
            total += round_total
            if len(rows) < STALE_BATCH or not round_total:
                return total


async def _count(statement: Executable, tx: AsyncTransaction) -> int:
    return int((await tx.execute(statement)).rowcount)
