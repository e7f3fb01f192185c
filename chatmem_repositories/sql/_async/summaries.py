"""The SQL repository's summaries: reads, the version-checked write, and their deletion.

Each operation is a program of steps (see :mod:`~chatmem_repositories.sql._plans.steps`),
run by the repository's runner like every other operation, so it gets the same
transactions, retries and error mapping. The statements and the reasoning behind them are
in :mod:`chatmem_repositories.sql._statements.summaries`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.repository import ConversationSummary
from chatmem_repositories.sql._async.runner import AsyncRunner
from chatmem_repositories.sql._plans.steps import (
    Body,
    Execute,
    InsertOrConflict,
    Program,
    Query,
    Transaction,
)
from chatmem_repositories.sql._schema import Tables
from chatmem_repositories.sql._statements.summaries import (
    SummaryStatements,
    decode_summary_text,
    encode_summary_text,
)

__all__ = ["AsyncSummaries"]

T = TypeVar("T")

STALE_BATCH = 500
"""Summaries of ended lives read per round of :meth:`AsyncSummaries.delete_stale`."""


def _then(body: Callable[[], Body[T]], statement: Any) -> Body[T]:
    result = yield from body()
    yield Execute(statement)
    return result


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
        won: bool = await self._runner.perform(
            self._save(conversation_id, stored, covers, expected_version, now)
        )
        return won

    def _save(
        self, conversation_id: str, stored: str, covers: int, expected_version: int, now: datetime
    ) -> Program[bool]:
        body = partial(self._save_body, conversation_id, stored, covers, expected_version, now)
        won: bool = yield Transaction(body)
        return won

    def _save_body(
        self, conversation_id: str, stored: str, covers: int, expected_version: int, now: datetime
    ) -> Body[bool]:
        statements = self._statements
        if self._sqlite:
            yield Execute(statements.touch(conversation_id))
        lock = statements.lock_life(conversation_id, for_update=not self._sqlite)
        row = (yield Execute(lock)).first()
        if row is None or (row[2] is not None and row[2] <= now):
            return False  # no live conversation: its summary would outlive it
        life = (row[0], row[1])
        if expected_version == 0:
            insert = statements.insert_first(conversation_id, stored, covers, life, now)
            if (yield InsertOrConflict(insert)):
                return True
            # A row exists: it counts as version 0 only if it is an earlier life's.
            stale = statements.replace_stale(conversation_id, stored, covers, life, now)
            return bool((yield Execute(stale)).rowcount == 1)
        advance = statements.advance(conversation_id, stored, covers, expected_version, life, now)
        return bool((yield Execute(advance)).rowcount == 1)

    def deleting(self, program: Program[T], conversation_id: str) -> Program[T]:
        """Return ``program`` (a plan's deletion of the conversation) deleting the summary too.

        The summary goes in the program's first transaction, after everything the plan does
        there (so the conversation row is locked first, as by every write); a program with
        no transaction is followed by a transaction of its own.
        """
        statement = self._statements.delete(conversation_id)
        joined = False
        answer: Any = None
        while True:
            try:
                step = program.send(answer)
            except StopIteration as done:
                result: T = done.value
                break
            if isinstance(step, Transaction) and not joined:
                step = Transaction(partial(_then, step.body, statement))
                joined = True
            answer = yield step
        if not joined:
            yield Transaction(partial(self._delete_body, statement))
        return result

    @staticmethod
    def _delete_body(statement: Any) -> Body[None]:
        yield Execute(statement)

    async def delete_stale(self) -> int:
        """Delete the summaries of lives that ended (purged or deleted conversations).

        One summary per transaction, each only if it still has the life it was found with,
        so a summary written meanwhile for a new life is never touched.

        Returns:
            How many were deleted.
        """
        deleted: int = await self._runner.perform(self._delete_stale())
        return deleted

    def _delete_stale(self) -> Program[int]:
        total = 0
        while True:
            rows = yield Query(self._statements.stale(STALE_BATCH))
            round_total = 0
            for conversation_id, created_at, first_position in rows:
                statement = self._statements.delete_stale(
                    conversation_id, created_at, first_position
                )
                count: int = yield Transaction(partial(self._count_body, statement))
                round_total += count
            total += round_total
            if len(rows) < STALE_BATCH or not round_total:
                return total

    @staticmethod
    def _count_body(statement: Any) -> Body[int]:
        return int((yield Execute(statement)).rowcount)
