"""The concurrent history checker: a seeded workload against a repository, recorded and judged.

Workers run a seeded mix of appends, version-checked appends (``find_version``, then ``append``
with ``expected_version``), retries, system messages, deletes, clears and reads over a few
conversations while purgers call ``purge_expired``; every call is recorded with its
interval and outcome, and :func:`chatmem.testing.check_history` judges the history. With a time
to live, the workers pause between cycles until every conversation has expired, so each cycle
starts by reviving them while the purgers run: the race between a revive and a purge is
exercised on every conversation, every cycle. Given a clock that the repository reads, the
pause advances the clock instead of sleeping.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from chatmem._async.memory import AsyncMessageWindowChatMemory
from chatmem._async.repository import AsyncChatMemoryLog, AsyncSessionLog, AsyncWindowReader
from chatmem._records import StoredMessage
from chatmem._twins import async_run_all, async_sleep
from chatmem.exceptions import (
    ChatMemError,
    ConfigurationError,
    RepositoryConnectionError,
    RepositoryOutcomeUnknownError,
    RepositoryTimeoutError,
    VersionConflictError,
)
from chatmem.messages import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    TokenUsage,
    UserMessage,
)
from chatmem.testing._clock import ManualClock
from chatmem.testing._history import VERSION_READ, History, HistoryReport, Operation, Outcome
from chatmem.testing._report import check_history
from chatmem.testing._schedule import CheckerSettings, Step, plan, plan_revives, resolve_seed

__all__ = ["AsyncHistoryChecker"]

T = TypeVar("T")
Factory = Callable[..., Awaitable[AsyncChatMemoryLog]]
_PURGE_INTERVAL = 0.005
_QUIET_PURGE_INTERVAL = 0.05
_MAX_SPREAD = 0.5


@dataclass
class _Worker:
    number: int
    name: str
    batches: list[tuple[int, list[Message]]] = field(default_factory=list)
    """(conversation, messages) of every batch written, for retries."""
    pending: list[tuple[int, list[Message]]] = field(default_factory=list)
    """Batches whose write had an unknown outcome: retried first."""
    sequence: int = 0


@dataclass
class _CycleState:
    spread: float
    """Seconds over which the appends that start the cycle are spread."""
    purging: bool = False
    """Set when the first purge of the cycle starts: the appends to every conversation wait."""
    done: bool = False
    """Set when the workers are done: the purgers stop."""
    expired: bool = False
    """Whether every conversation has expired when the cycle starts."""
    reviving: bool = True
    """Whether the appends that start the cycle are still running."""


class AsyncHistoryChecker:
    """Runs concurrent seeded operations against a repository, then checks the history.

    Replaying: the seed is in every failure message; pass it as ``seed`` or set
    ``CHATMEM_CHECKER_SEED`` to run the same schedule again.

    Example:
        ```python
        async def factory(**options):
            return AsyncMyRepository(url, **options)

        report = await AsyncHistoryChecker(factory, ttl=1.0).run()
        print(report.summary())
        ```

    Args:
        repository_factory: Returns a new repository; called with ``ttl=timedelta(...)`` when
            ``ttl`` is set.
        seed: Seed of the schedule; default ``CHATMEM_CHECKER_SEED`` or a random one.
        ttl: Time to live in seconds the repository is created with; ``None`` for a store
            without expiry.
        expiry_pause: Idle seconds between cycles, long enough for the store to expire every
            conversation; default ``1.1 * ttl + 0.1``.
        expiry_slack: How much earlier than ``ttl`` the store may expire a conversation.
        settings: Size of the run.
        clock: A clock to create the repository with (``clock=``, for a repository that
            reads the time from it for every expiry decision). The pauses between cycles
            then advance it instead of sleeping; the recorded times advance with it.
        versioned_appends: Whether the version-checked append steps check the version: the
            repository must then be an :class:`~chatmem.repository.AsyncSessionLog`. With
            ``False`` (a store without versions) they are plain appends.
    """

    def __init__(
        self,
        repository_factory: Factory,
        *,
        seed: int | None = None,
        ttl: float | None = 1.0,
        expiry_pause: float | None = None,
        expiry_slack: float = 0.05,
        settings: CheckerSettings | None = None,
        clock: ManualClock | None = None,
        versioned_appends: bool = True,
    ) -> None:
        self.seed = resolve_seed(seed)
        """The seed of this run's schedule."""
        self.ttl = ttl
        self.expiry_pause = expiry_pause if expiry_pause is not None else 1.1 * (ttl or 0) + 0.1
        self.expiry_slack = expiry_slack
        self.settings = settings or CheckerSettings()
        self._factory = repository_factory
        self._clock = clock
        self._versioned = versioned_appends
        # Seconds the clock was advanced: added to every recorded time, so the history shows
        # the pauses the store saw and the checker allows the expiry they caused.
        self._advanced = 0.0
        self._tag = uuid.uuid4().hex[:8]
        self._conversations = [
            f"history-{self._tag}-c{i}" for i in range(self.settings.conversations)
        ]
        self._labels = {c: f"c{i}" for i, c in enumerate(self._conversations)}
        self._operations: list[Operation] = []
        self._counter = itertools.count()
        self._unexpected: list[str] = []
        self._revived: list[int] = []
        self._spread = self.settings.revive_spread
        self._written: set[int] = set()
        """Conversations written to since the last final reads."""
        # One writer per conversation for the appends that start each cycle.
        self._revivers = [_Worker(i, f"r{i}") for i in range(self.settings.conversations)]

    async def run(self) -> HistoryReport:
        """Run the workload and check its history.

        Raises:
            HistoryCheckError: The history violates the repository contract.
            AssertionError: A call raised an exception that is not a ``ChatMemError``, or a
                ``VersionConflictError`` without ``expected_version``.
            ConfigurationError: ``versioned_appends`` is set and the repository is not a
                session log.
        """
        report = await self.record()
        if self._unexpected:
            raise AssertionError(
                f"seed {self.seed}: calls raised errors the contract rules out: "
                + "; ".join(self._unexpected[:5])
            )
        check_history(report.history)
        return report

    async def record(self) -> HistoryReport:
        """Run the workload and return its history, unchecked.

        Raises:
            ConfigurationError: ``versioned_appends`` is set and the repository is not a
                session log.
        """
        options: dict[str, Any] = {}
        if self.ttl is not None:
            options["ttl"] = timedelta(seconds=self.ttl)
        if self._clock is not None:
            options["clock"] = self._clock
        repository = await self._factory(**options)
        if self._versioned and not isinstance(repository, AsyncSessionLog):
            await repository.aclose()
            raise ConfigurationError(
                f"{type(repository).__name__} is not a session log (find_version, "
                "append(expected_version=)): pass versioned_appends=False to check it "
                "without version-checked appends"
            )
        started = time.monotonic()
        try:
            workers = [_Worker(n, f"w{n}") for n in range(self.settings.workers)]
            for cycle in range(self.settings.cycles):
                if cycle:
                    await self._pause()
                await self._cycle(repository, workers, cycle)
            seconds = time.monotonic() - started
        finally:
            try:
                for conversation in self._conversations:
                    await repository.delete_by_conversation_id(conversation)
            finally:
                await repository.aclose()
        history = History(
            sorted(self._operations, key=lambda o: o.index),
            ttl=self.ttl,
            expiry_slack=self.expiry_slack,
            seed=self.seed,
            labels=self._labels,
            started=started,
        )
        return HistoryReport(history, seconds, len(self._revived))

    async def _pause(self) -> None:
        # Nothing is in flight between cycles, so no recorded interval straddles the jump.
        if self._clock is None:
            await async_sleep(self.expiry_pause)
        else:
            self._clock.advance(self.expiry_pause)
            self._advanced += self.expiry_pause

    def _now(self) -> float:
        return time.monotonic() + self._advanced

    # -- one cycle --------------------------------------------------------------------------------

    async def _cycle(
        self, repository: AsyncChatMemoryLog, workers: list[_Worker], cycle: int
    ) -> None:
        memory = AsyncMessageWindowChatMemory(repository, max_messages=self.settings.max_messages)
        state = _CycleState(
            self._spread,
            purging=self.settings.purgers == 0,
            expired=cycle > 0 and self.ttl is not None,
        )
        revives = plan_revives(self.seed, cycle, self.settings)
        plans = [(w, plan(self.seed, cycle, w.number, self.settings)) for w in workers]

        async def drive() -> None:
            try:
                await async_run_all(
                    [partial(self._revive, repository, memory, state, step) for step in revives]
                )
                state.reviving = False
                # Read each conversation back at once: a revive a purge removed shows up here
                # even when a slow machine lets the rest of the cycle outlast the ttl.
                await async_run_all(
                    [
                        partial(self._read_all, repository, f"r{i}", conversation)
                        for i, conversation in enumerate(self._conversations)
                    ]
                )
                self._written.clear()  # read back already
                await async_run_all(
                    [partial(self._work, repository, memory, w, steps) for w, steps in plans]
                )
            finally:
                state.done = True

        calls: list[Callable[[], Awaitable[None]]] = [drive]
        calls += [partial(self._purge, repository, state, n) for n in range(self.settings.purgers)]
        await async_run_all(calls)
        # After the purgers stopped and before anything can expire, read what the workers
        # wrote to: shows every acknowledged write kept.
        touched = sorted(self._written)
        await async_run_all(
            [
                partial(self._final_reads, repository, w, touched[w.number :: len(workers)])
                for w in workers
            ]
        )

    async def _revive(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        state: _CycleState,
        step: Step,
    ) -> None:
        while not state.purging:
            await async_sleep(0.001)
        await async_sleep(step.delay * state.spread)
        reviver = self._revivers[step.conversation]
        await self._step(repository, memory, reviver, step)
        if reviver.pending:  # an unknown outcome: retry at once, as a client would
            await self._retry(repository, memory, reviver, step)

    async def _work(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        worker: _Worker,
        steps: list[Step],
    ) -> None:
        for step in steps:
            await self._step(repository, memory, worker, step)
            await async_sleep(0)  # let the others in between any two calls

    async def _purge(self, repository: AsyncChatMemoryLog, state: _CycleState, number: int) -> None:
        first = True
        while True:
            state.purging = True
            operation = await self._call(
                f"purger{number}", "purge_expired", None, repository.purge_expired
            )
            if first and state.expired:
                # This purge had every conversation to remove: the next cycle spreads its
                # revives over as long as it took.
                took = operation.completed - operation.invoked
                self._spread = min(max(self._spread, took), _MAX_SPREAD)
            first = False
            if state.done:
                return
            # Purge back to back while the revives race it, then only now and then.
            await async_sleep(_PURGE_INTERVAL if state.reviving else _QUIET_PURGE_INTERVAL)

    async def _final_reads(
        self, repository: AsyncChatMemoryLog, worker: _Worker, indexes: list[int]
    ) -> None:
        for index in indexes:
            await self._read_all(repository, worker.name, self._conversations[index])

    # -- steps -----------------------------------------------------------------------------------

    async def _step(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        worker: _Worker,
        step: Step,
    ) -> None:
        process = worker.name
        conversation = self._conversations[step.conversation]
        action = step.action
        if action in ("append", "memory.add", "system"):
            messages = self._new_batch(worker, step)
            worker.batches.append((step.conversation, messages))
            via = "memory.add" if action == "memory.add" else "append"
            write = await self._write(repository, memory, worker, step.conversation, messages, via)
            if write.outcome is Outcome.OK and step.revive:
                self._revived.append(step.conversation)
        elif action == "versioned_append":
            await self._versioned_append(repository, memory, worker, step)
        elif action == "retry":
            await self._retry(repository, memory, worker, step)
        elif action == "delete_by_conversation_id":
            await self._call(
                process,
                action,
                conversation,
                lambda: repository.delete_by_conversation_id(conversation),
            )
        elif action == "memory.clear":
            await self._call(process, action, conversation, lambda: memory.clear(conversation))
        elif action == "find_by_conversation_id":
            await self._read_all(repository, process, conversation)
        else:
            await self._read(repository, memory, process, conversation, step)

    def _new_batch(self, worker: _Worker, step: Step) -> list[Message]:
        kinds = "u" + "a" * step.replies
        if step.action == "system":
            kinds = "s" if step.system_alone else "s" + kinds[:-1]
        return [self._message(worker, kind) for kind in kinds]

    def _message(self, worker: _Worker, kind: str) -> Message:
        worker.sequence += 1
        label = f"{worker.name}.{worker.sequence}{kind}"
        metadata: dict[str, Any] = {"writer": worker.name, "sequence": worker.sequence}
        text = f"{label} of run {self._tag}"
        message: Message
        if kind == "s":
            message = SystemMessage(text, metadata=metadata)
        elif kind == "u":
            message = UserMessage(text, metadata=metadata)
        elif worker.sequence % 2:
            message = AssistantMessage(text, metadata=metadata)
        else:
            # Half the answers come from a reasoning model: the store carries those fields too.
            message = AssistantMessage(
                text,
                metadata=metadata,
                reasoning=[ReasoningPart(text=f"thinking of {label}", signature=label)],
                usage=TokenUsage(input_tokens=worker.sequence, output_tokens=1),
            )
        self._labels[message.id] = label
        return message

    async def _retry(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        worker: _Worker,
        step: Step,
    ) -> None:
        if worker.pending:
            index, messages = worker.pending.pop(0)
        elif worker.batches:
            index, messages = worker.batches[int(step.pick * len(worker.batches))]
        else:
            index, messages = step.conversation, self._new_batch(worker, step)
            worker.batches.append((index, messages))
        await self._write(repository, memory, worker, index, messages, "append")

    async def _versioned_append(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        worker: _Worker,
        step: Step,
    ) -> None:
        messages = self._new_batch(worker, step)
        if not (self._versioned and isinstance(repository, AsyncSessionLog)):
            await self._write(repository, memory, worker, step.conversation, messages, "append")
            return
        log = repository
        conversation = self._conversations[step.conversation]
        read = await self._call(
            worker.name,
            VERSION_READ,
            conversation,
            lambda: log.find_version(conversation),
            capture=lambda version: {"version": version},
        )
        if read.outcome is not Outcome.OK:
            return
        # A client decides what to write between reading the version and appending (it asks
        # a model): let the other workers in there.
        await async_sleep(0)
        # Not kept for the retry steps: a refused batch then stays out of every write that may
        # apply, so a read showing it proves the refusal stored it; and which batch a retry
        # repeats stays a matter of the seed, not of which appends were refused.
        await self._write(
            repository, memory, worker, step.conversation, messages, "append", log=log, version=read
        )

    async def _write(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        worker: _Worker,
        index: int,
        messages: list[Message],
        action: str,
        *,
        log: AsyncSessionLog | None = None,
        version: Operation | None = None,
    ) -> Operation:
        """Write a batch and record it.

        With ``log`` and ``version`` (a ``find_version`` on ``log``), the write is an append to
        ``log`` that expects the version read.
        """
        conversation = self._conversations[index]
        batch = tuple(m.id for m in messages)
        self._written.add(index)
        fields: dict[str, Any] = {}

        async def add() -> list[StoredMessage] | None:
            await memory.add(conversation, messages)
            return None

        async def append() -> list[StoredMessage] | None:
            return await repository.append(conversation, messages)

        async def append_checked() -> list[StoredMessage] | None:
            assert log is not None
            assert version is not None
            return await log.append(conversation, messages, expected_version=version.version)

        def stored(result: list[StoredMessage] | None) -> dict[str, Any]:
            if result is None:  # memory.add of fresh ids and a new system text stores them all
                return {"stored": batch}
            return {
                "stored": tuple(s.message.id for s in result),
                "positions": tuple(s.position for s in result),
            }

        call = add if action == "memory.add" else append
        if log is not None and version is not None:
            call = append_checked
            fields = {"expected_version": version.version, "version_read": version.index}
        operation = await self._call(
            worker.name,
            action,
            conversation,
            call,
            capture=stored,
            batch=batch,
            system_ids=frozenset(m.id for m in messages if isinstance(m, SystemMessage)),
            **fields,
        )
        if operation.outcome is Outcome.UNKNOWN:
            worker.pending.append((index, messages))
        return operation

    async def _read(
        self,
        repository: AsyncChatMemoryLog,
        memory: AsyncMessageWindowChatMemory,
        process: str,
        conversation: str,
        step: Step,
    ) -> None:
        action, limit = step.action, step.limit
        if action == "find_window" and isinstance(repository, AsyncWindowReader):
            reader = repository
            await self._call(
                process,
                action,
                conversation,
                lambda: reader.find_window(conversation, limit),
                capture=lambda window: {
                    "messages": tuple(s.message.id for s in window[1]),
                    "system": window[0].message.id if window[0] else None,
                },
                limit=limit,
            )
        elif action in ("find_recent", "find_window"):
            await self._call(
                process,
                "find_recent",
                conversation,
                lambda: repository.find_recent(conversation, limit),
                capture=lambda recent: {"messages": tuple(s.message.id for s in recent)},
                limit=limit,
            )
        elif action == "find_system_message":
            await self._call(
                process,
                action,
                conversation,
                lambda: repository.find_system_message(conversation),
                capture=lambda found: {"system": found.message.id if found else None},
            )
        else:
            await self._call(
                process, "memory.get", conversation, lambda: memory.get(conversation), capture=_view
            )

    async def _read_all(
        self, repository: AsyncChatMemoryLog, process: str, conversation: str
    ) -> None:
        await self._call(
            process,
            "find_by_conversation_id",
            conversation,
            lambda: repository.find_by_conversation_id(conversation),
            capture=lambda history: {"messages": tuple(m.id for m in history)},
        )

    # -- recording -------------------------------------------------------------------------------

    async def _call(
        self,
        process: str,
        action: str,
        conversation: str | None,
        call: Callable[[], Awaitable[T]],
        *,
        capture: Callable[[T], dict[str, Any]] | None = None,
        **fields: Any,
    ) -> Operation:
        """Make one call and record it: interval, outcome, and what ``capture`` keeps of it."""
        index = next(self._counter)
        error = ""
        invoked = self._now()
        try:
            result = await call()
        except RepositoryOutcomeUnknownError as exc:  # the answer was lost: maybe applied
            outcome, error = Outcome.UNKNOWN, repr(exc)
        except VersionConflictError as exc:
            outcome, error = Outcome.CONFLICT, repr(exc)
            if fields.get("expected_version") is None:  # only a checked append may raise it
                outcome = Outcome.UNKNOWN
                self._unexpected.append(f"#{index} {action}: {error}")
        except (ConfigurationError, RepositoryConnectionError, RepositoryTimeoutError) as exc:
            # Rejected before any I/O, never sent, or rolled back: nothing applied.
            outcome, error = Outcome.FAILED, repr(exc)
        except ChatMemError as exc:
            outcome, error = Outcome.UNKNOWN, repr(exc)
        except Exception as exc:  # breaks the contract; recorded, and reported after the run
            outcome, error = Outcome.UNKNOWN, repr(exc)
            self._unexpected.append(f"#{index} {action}: {error}")
        else:
            outcome = Outcome.OK
            if capture is not None:
                fields.update(capture(result))
        completed = self._now()
        operation = Operation(
            index, process, action, conversation, invoked, completed, outcome, error=error, **fields
        )
        self._operations.append(operation)
        return operation


def _view(view: list[Message]) -> dict[str, Any]:
    """What ``memory.get`` showed: its system message and the window after it."""
    system = view[0].id if view and isinstance(view[0], SystemMessage) else None
    window = view[1:] if system is not None else view
    return {"messages": tuple(m.id for m in window), "system": system}
