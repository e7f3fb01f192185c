"""The conditional batches every Cassandra write is: ordered by Paxos, not by clocks.

An append claims its message ids and advances the conversation's position counter in one
conditional batch (a version-checked append requires a counter instead of guessing it);
``save_all`` and the deletes are conditional batches too, so Paxos orders every write to a
conversation's partition (see ``_schema`` and ``docs/backends/cassandra.md``).
This module sends them, re-sends them when another writer won the round, and keeps the
process-local state that saves round trips: the last known counter of each conversation and
a lock per conversation for this process's own appends.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from chatmem.backend import AsyncLock, StoredMessage, async_sleep
from chatmem.conversation_ids import owner_of
from chatmem.exceptions import (
    RepositoryError,
    RepositoryTimeoutError,
    RepositoryWriteTimeoutError,
    VersionConflictError,
)
from chatmem.messages import Message
from chatmem_repositories.cassandra._codec import (
    FIRST_POSITION,
    NextPositions,
    listing_bucket,
    message_rows,
)
from chatmem_repositories.cassandra._drivers import AsyncSessionAdapter, Row
from chatmem_repositories.cassandra._errors import is_paxos_contention
from chatmem_repositories.cassandra._options import BACKEND
from chatmem_repositories.cassandra._schema import TRACKED

__all__ = ["AsyncConditionalWrites", "ConversationLocks", "listing_scope"]


def listing_scope(owner: str | None) -> str:
    """Return the listing scope of all conversations (``None``) or of one owner."""
    return "*" if owner is None else "@" + owner


def _static(rows: Sequence[Row], column: str) -> Any:
    """Return a static column from rows that each carry it (``None`` if no row does)."""
    return next((row[column] for row in rows if row.get(column) is not None), None)


def _claims(rows: Sequence[Row]) -> dict[str, int | None]:
    """Return the ids a rejected batch found claimed, with the positions they hold."""
    return {row["message_id"]: row.get("claimed") for row in rows if row.get("message_id")}


def _own_attempt(
    rows: Sequence[Row], token: str, pending: Sequence[Message]
) -> list[StoredMessage] | None:
    """Return what an earlier attempt of this call stored, if a rejection shows it applied.

    A batch applies whole, so its claims all carry the call's token, at the positions the
    attempt gave the messages; ``None`` when no claim carries it.
    """
    mine: dict[str, int] = {
        row["message_id"]: row["claimed"]
        for row in rows
        if row.get("data") == token and row.get("claimed") is not None
    }
    if not mine:
        return None
    return [StoredMessage(mine[m.id], m) for m in pending if m.id in mine]


class ConversationLocks:
    """One lock per conversation, held by this process's appends to it.

    Appends from one process then never race each other for the counter (a lost race costs
    a Paxos round); other processes are still serialised by Paxos alone.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()  # threads share it in the sync repository
        self._locks: dict[str, tuple[AsyncLock, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        """Hold the conversation's lock; it is dropped when nobody holds or awaits it."""
        with self._guard:
            entry = self._locks.get(conversation_id)
            if entry is None:
                entry = self._locks[conversation_id] = (AsyncLock(), [0])
            lock, users = entry
            users[0] += 1
        try:
            async with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if not users[0]:
                    del self._locks[conversation_id]


class AsyncConditionalWrites:
    """Sends a repository's conditional batches and keeps what saves it round trips.

    Args:
        ttl: The conversation TTL in whole seconds; 0 for none.
        buckets: Partitions the conversation listing is spread over.
        patience: How long, in seconds, a write keeps re-sending while other writers win.
    """

    def __init__(self, ttl: int, buckets: int, patience: float) -> None:
        self.ttl = ttl
        """The TTL in whole seconds (0: none)."""
        # Cassandra counts a TTL from the start of the current second, so a cell written
        # with TTL n lives between n - 1 and n seconds: one second more makes it at least n.
        self.cell_ttl = ttl + 1 if ttl else 0
        """The TTL written on cells."""
        self.buckets = buckets
        self.patience = patience
        self.next = NextPositions()
        """This process's last known counter of each recent conversation."""
        self.locks = ConversationLocks()
        """One lock per conversation for this process's appends."""

    async def append(
        self, db: AsyncSessionAdapter, conversation_id: str, pending: list[Message]
    ) -> list[StoredMessage]:
        """Append messages not yet stored, re-sending while other writers win the counter.

        The caller holds the conversation's lock (:attr:`locks`). See the repository's
        ``append`` for the batch and its conditions.

        Raises:
            RepositoryWriteTimeoutError: If the Paxos rounds kept timing out for ``patience``
                seconds (contention, or replicas down): the last one may have applied.
            RepositoryError: If other writers kept taking the next position for
                ``patience`` seconds.
        """
        mode = "live" if self.ttl else None
        expected = self.next.get(conversation_id)
        # The attempt of this call that applied may be sent again and rejected: after a
        # timed-out round, or by the driver after the coordinator's connection broke. Its
        # claims then carry this token, so the call reports them as its own.
        token = uuid.uuid4().hex
        races = 0
        timed_out = False
        deadline = time.monotonic() + self.patience
        for attempt in itertools.count():
            if attempt and time.monotonic() > deadline:
                raise self._gave_up(attempt, timed_out=timed_out)
            first = FIRST_POSITION if expected is None else expected
            result = await self._send_append(
                db, conversation_id, pending, first, expected, mode, attempt, token
            )
            timed_out = result is None
            if result is None:
                continue
            if result and result[0].get("[applied]"):
                self.next.set(conversation_id, first + len(pending))
                return [StoredMessage(first + i, m) for i, m in enumerate(pending)]
            current = _static(result, "next_position")
            self.next.set(conversation_id, current)
            own = _own_attempt(result, token, pending)
            if own is not None:
                return own
            moved, expected = current != expected, current
            switched = False
            if mode is not None:
                alive = any(row.get("alive") for row in result)
                if mode == "live" and not alive:
                    # New, or expired: remove what the expired life left, then start anew.
                    if any(row.get("touched") for row in result):
                        await self.drop_expired(db, conversation_id)
                        expected = None  # the expired life's counter went with its data
                    mode = "revive"
                    continue
                if mode == "revive" and alive:
                    mode, switched = "live", True  # another writer started it first
            taken = {row.get("message_id") for row in result if row.get("message_id")}
            pending = [m for m in pending if m.id not in taken]
            if not pending:
                return []
            if not (taken or switched or moved):
                raise RepositoryError(
                    "Cassandra rejected the append without naming a stored message id",
                    backend=BACKEND,
                )
            races += moved
            await self.back_off(races)
        raise AssertionError("unreachable")  # pragma: no cover

    async def append_checked(
        self, db: AsyncSessionAdapter, conversation_id: str, pending: list[Message], version: int
    ) -> list[StoredMessage]:
        """Append messages not yet stored, only while the conversation is at ``version``.

        The batch is the one :meth:`append` sends, with the counter it requires (``version +
        1``, or unset for version 0) as its condition instead of the last one seen, so the
        version check costs no round trip of its own: the batch applies whole, or stores
        nothing and answers with the current counter. With a TTL, version 0 also holds for
        an expired conversation, whose data is deleted before it starts anew.

        The caller holds the conversation's lock (:attr:`locks`).

        Raises:
            VersionConflictError: The conversation is not at ``version``; nothing was stored.
            RepositoryError: If the partition stayed contended for ``patience`` seconds.
        """
        required = None if version == 0 else version + 1
        first = FIRST_POSITION if required is None else required
        mode = None
        if self.ttl:
            mode = "revive" if required is None else "live"
        token = uuid.uuid4().hex  # as in append: names this call's claims
        deadline = time.monotonic() + self.patience
        for attempt in itertools.count():
            self._keep_trying(attempt, deadline)
            stored = [StoredMessage(first + i, m) for i, m in enumerate(pending)]
            result = await self._send_append(
                db, conversation_id, pending, first, required, mode, attempt, token
            )
            if result is None:
                continue
            if result and result[0].get("[applied]"):
                self.next.set(conversation_id, first + len(pending))
                return stored
            current = _static(result, "next_position")
            self.next.set(conversation_id, current)
            own = _own_attempt(result, token, pending)
            if own is not None:
                return own  # an earlier attempt applied (timed out, or re-sent by the driver)
            claims = _claims(result)
            alive = mode is None or any(row.get("alive") for row in result)
            actual = 0 if current is None or not alive else current - 1
            if actual != version:
                raise VersionConflictError(conversation_id, version, actual)
            if not alive:
                # Version 0 and not alive: an expired life is in the way; start anew.
                if any(row.get("touched") for row in result):
                    await self.drop_expired(db, conversation_id)
                continue
            if mode == "revive":
                mode = "live"  # another writer started it and stored nothing yet
                continue
            pending = [m for m in pending if m.id not in claims]
            if not pending:
                return []
            if not claims:
                raise RepositoryError(
                    "Cassandra rejected the append without naming a stored message id",
                    backend=BACKEND,
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def _gave_up(self, attempt: int, *, timed_out: bool) -> RepositoryError:
        """The error of an append that kept being re-sent for ``patience`` seconds."""
        if timed_out:
            # The last round's outcome is unknown: a caller must know to send the same
            # append again (it is idempotent), not that it surely failed.
            return RepositoryWriteTimeoutError(
                f"Cassandra's Paxos rounds for the append kept timing out for"
                f" {self.patience:g} s ({attempt} attempts: contention, or too few replicas"
                " answering); the write may have been applied",
                backend=BACKEND,
            )
        return RepositoryError(
            f"Cassandra did not apply the append within {self.patience:g} s"
            f" ({attempt} attempts): other writers kept taking the next position",
            backend=BACKEND,
        )

    def _keep_trying(self, attempt: int, deadline: float) -> None:
        """Raise once a version-checked append has re-sent for ``patience`` seconds."""
        if attempt and time.monotonic() > deadline:
            raise RepositoryError(
                f"Cassandra did not apply the append within {self.patience:g} s"
                f" ({attempt} attempts): the partition stayed contended",
                backend=BACKEND,
            )

    async def _send_append(
        self,
        db: AsyncSessionAdapter,
        conversation_id: str,
        pending: list[Message],
        first: int,
        expected: int | None,
        mode: str | None,
        attempt: int,
        token: str,
    ) -> list[Row] | None:
        """Send one attempt of an append (see :meth:`send_conditional`).

        The batch stores ``pending`` from ``first`` on if the counter is ``expected``, with
        the liveness cell's statement ``mode`` when there is a TTL.
        """
        owner = owner_of(conversation_id)
        items = message_rows(conversation_id, owner, pending, first, expected, token=token)
        if mode is not None:
            items.append((mode, (self.cell_ttl, conversation_id)))
        # The listing rows are written by the append that starts a conversation (whose
        # counter it expects unset) and, with a TTL, by every append, which keeps them
        # alive with it. An append that expects a counter saw the conversation exist,
        # and the append that started it listed it: re-listing it is work for nothing.
        listed = not self.ttl and expected is not None
        alongside = [] if listed else [self.listing(db, conversation_id)]
        return await self.send_conditional(db, items, alongside, attempt)

    async def replace(
        self, db: AsyncSessionAdapter, conversation_id: str, messages: list[Message]
    ) -> None:
        """Replace a conversation's messages, at positions after every position it had.

        One conditional batch clears the partition and writes the messages from the counter
        on, ``IF next_position = <the value this process last saw>``, so the version keeps
        growing; a stale guess costs one more round, with the counter the batch answered.
        The caller holds the conversation's lock (:attr:`locks`).

        Raises:
            RepositoryError: If other writers kept taking the next position for
                ``patience`` seconds.
            RepositoryTimeoutError: The last attempt's, when the partition stayed contended
                for ``patience`` seconds (whether that attempt applied is unknown).
        """
        owner = owner_of(conversation_id)
        expected = self.next.get(conversation_id)
        self.next.set(conversation_id, None)  # unknown until the batch is acknowledged
        races = 0
        deadline = time.monotonic() + self.patience
        for attempt in itertools.count():
            last = time.monotonic() > deadline
            first = FIRST_POSITION if expected is None else expected
            # Cassandra gives the partition deletion the ballot's timestamp minus one and
            # the new rows the ballot's own, so the new rows survive it.
            items: list[tuple[str, Sequence[Any]]] = [("clear", (conversation_id,))]
            items += message_rows(conversation_id, owner, messages, first, expected, replace=True)
            if self.ttl:
                items.append(("live_plain", (self.cell_ttl, conversation_id)))
            listing = self.listing(db, conversation_id)
            result = await self.send_conditional(db, items, [listing], attempt, last=last)
            if result is None:
                continue
            if result and result[0].get("[applied]"):
                self.next.set(conversation_id, first + len(messages))
                return
            if last:
                raise RepositoryError(
                    f"Cassandra did not apply the replacement within {self.patience:g} s"
                    f" ({attempt + 1} attempts): other writers kept taking the next position",
                    backend=BACKEND,
                )
            expected = _static(result, "next_position")
            races += 1
            await self.back_off(races)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    async def back_off(races: int) -> None:
        """Wait before re-sending after losing the counter to other processes.

        Losing once is normal (another process appended since this one last saw the
        conversation) and is retried at once; repeated losses mean several processes append
        to it together, and random waits spread them out.
        """
        if races > 1:
            await async_sleep(random.uniform(0, 0.0005 * 2 ** min(races, 7)))

    @staticmethod
    async def send_conditional(
        db: AsyncSessionAdapter,
        items: Any,
        alongside: Sequence[Any],
        attempt: int,
        *,
        last: bool = False,
    ) -> list[Row] | None:
        """Send a conditional batch and, at once, statements for other partitions.

        Returns the batch's rows, or ``None`` if its Paxos round timed out because other
        writers contended for the partition: whether it applied is then unknown, and the
        caller sends it again (an append's id claims and the deletes' nature make that safe).
        On the ``last`` attempt that timeout is raised instead.
        """
        try:
            if alongside:
                result, *_ = await db.execute_all([db.batch(items), *alongside], write=True)
            else:
                result = await db.execute(db.batch(items), write=True)
        except RepositoryTimeoutError as exc:
            if last or not is_paxos_contention(exc):
                raise
            await async_sleep(0.01 * min(1 + attempt, 10))
            return None
        return list(result)

    async def in_order(self, db: AsyncSessionAdapter, items: Any, *alongside: Any) -> list[Row]:
        """Send a delete or a replacement as a conditional batch, so Paxos orders it.

        Its writes take the Paxos ballot's timestamp, later than every write of the
        conditional batches acknowledged before it, never the client's clock. Sending it
        again after a contended round is safe: deleting or replacing twice leaves the same
        state as once, and the call had not returned.

        Raises:
            RepositoryTimeoutError: The last attempt's, when the partition stayed contended
                for ``read_timeout`` (whether that attempt applied is unknown).
        """
        deadline = time.monotonic() + self.patience
        for attempt in itertools.count():
            last = time.monotonic() > deadline
            result = await self.send_conditional(db, items, alongside, attempt, last=last)
            if result is not None:
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def listing(self, db: AsyncSessionAdapter, conversation_id: str) -> Any:
        """Return the batch that lists a conversation (sent alongside each write)."""
        bucket = listing_bucket(conversation_id, self.buckets)
        scopes = {listing_scope(None), listing_scope(owner_of(conversation_id))}
        items = [("list_row", (scope, bucket, conversation_id, self.cell_ttl)) for scope in scopes]
        if self.ttl:
            # Kept without a TTL, so purge_expired can find the conversation after expiry.
            items.append(("list_row", (TRACKED, bucket, conversation_id, 0)))
        return db.batch(items, logged=False)

    async def drop_expired(self, db: AsyncSessionAdapter, conversation_id: str) -> None:
        """Delete an expired conversation's data, and nothing written after it expired.

        The partition delete carries the timestamp of the expired life's last write
        (``WRITETIME(touched)``); every later write is a Paxos round with a higher ballot
        timestamp, so a writer that already started the conversation anew loses nothing.
        """
        rows = await db.execute(db.bind("touched_at", (conversation_id,)))
        if rows and rows[0]["alive"] is None and rows[0]["touched_at"] is not None:
            await db.execute(db.bind("drop", (rows[0]["touched_at"], conversation_id)), write=True)
            self.next.set(conversation_id, None)
