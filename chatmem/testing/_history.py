"""Records of a concurrent run: each operation with its real-time interval and outcome (no I/O).

A history is what the checker in :mod:`chatmem.testing._checker` judges. Times are
``time.monotonic()`` seconds taken by the client just before calling the repository
(``invoked``) and just after it returned or raised (``completed``); whatever the repository
did happened at some instant in between.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "DESTRUCTIVE_ACTIONS",
    "READ_ACTIONS",
    "WRITE_ACTIONS",
    "History",
    "HistoryReport",
    "Operation",
    "Outcome",
]

WRITE_ACTIONS = frozenset({"append", "memory.add"})
"""Actions that store a batch of messages."""
DESTRUCTIVE_ACTIONS = frozenset({"delete_by_conversation_id", "memory.clear"})
"""Actions that remove a whole conversation."""
READ_ACTIONS = frozenset(
    {"find_by_conversation_id", "find_recent", "find_window", "find_system_message", "memory.get"}
)
"""Actions that read a conversation."""
_SHOWN_IDS = 12


class Outcome(StrEnum):
    """How an operation ended, as far as the client can tell."""

    OK = "ok"
    """It returned: it took effect."""
    FAILED = "failed"
    """It raised an error that guarantees nothing was applied (such as a configuration error)."""
    UNKNOWN = "unknown"
    """It raised an error after which it may or may not have been applied (a timeout)."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One call a client made, with its interval, outcome and what it wrote or read.

    Example:
        ```python
        append = Operation(0, "w0", "append", "c1", 0.0, 0.1, Outcome.OK,
                           batch=("u1", "a1"), stored=("u1", "a1"))
        read = Operation(1, "w1", "find_by_conversation_id", "c1", 0.2, 0.3, Outcome.OK,
                         messages=("u1", "a1"))
        ```
    """

    index: int
    """Position in the history; unique."""
    process: str
    """Who made the call, such as ``"w2"`` (a worker) or ``"purger0"``."""
    action: str
    """The method called: a name in :data:`WRITE_ACTIONS`, :data:`DESTRUCTIVE_ACTIONS`,
    :data:`READ_ACTIONS`, or ``"purge_expired"``."""
    conversation: str | None
    """The conversation it touched; ``None`` for ``purge_expired``."""
    invoked: float
    """Monotonic time just before the call."""
    completed: float
    """Monotonic time just after it returned or raised."""
    outcome: Outcome
    """Whether it took effect."""
    batch: tuple[str, ...] = ()
    """Ids of the messages a write carried, in order (a retry carries its original's ids)."""
    system_ids: frozenset[str] = frozenset()
    """The ids in ``batch`` that are system messages."""
    stored: tuple[str, ...] | None = None
    """Ids a successful write stored anew (``append``'s return value); ``None``: not known."""
    messages: tuple[str, ...] | None = None
    """Ids a read returned, in order. Window reads list non-system messages only."""
    system: str | None = None
    """Id of the current system message a read returned, if it reads one."""
    limit: int | None = None
    """The ``limit`` of ``find_recent`` and ``find_window``."""
    error: str = ""
    """The exception an unsuccessful call raised."""

    @property
    def latest_effect(self) -> float:
        """The latest instant its effect can have happened.

        That is ``completed``, except for an unknown outcome: a request that timed out may
        still be applied later, so its effect is not bounded.
        """
        return math.inf if self.outcome is Outcome.UNKNOWN else self.completed

    @property
    def refreshes(self) -> bool:
        """Whether this call certainly wrote, which restarts its conversation's time to live."""
        return self.outcome is Outcome.OK and bool(self.stored)

    def storing(self) -> frozenset[str]:
        """Ids this call may have stored: what it reported, or its whole batch if unknown."""
        if self.action not in WRITE_ACTIONS or self.outcome is Outcome.FAILED:
            return frozenset()
        if self.outcome is Outcome.OK and self.stored is not None:
            return frozenset(self.stored)
        return frozenset(self.batch)


@dataclass
class History:
    """Operations of one run, plus what the checker needs to know about the repository.

    Example:
        ```python
        history = History(operations, ttl=1.0, seed=42)
        anomalies = find_anomalies(history)
        ```
    """

    operations: list[Operation]
    """Every operation, in any order; ``index`` identifies each."""
    ttl: float | None = None
    """The repository's time to live in seconds, or ``None`` if conversations never expire."""
    expiry_slack: float = 0.05
    """How much earlier than ``ttl`` the store may expire a conversation (clock granularity)."""
    seed: int | None = None
    """Seed of the schedule that produced the run, for replay."""
    labels: dict[str, str] = field(default_factory=dict)
    """Short readable names of message and conversation ids, used in reports."""
    started: float | None = None
    """Monotonic time the run started; reports show times relative to it."""

    def label(self, identifier: str | None) -> str:
        """Return the readable name of a message or conversation id."""
        if identifier is None:
            return "-"
        return self.labels.get(identifier, identifier)

    def labels_of(self, identifiers: Iterable[str], *, keep: frozenset[str] | None = None) -> str:
        """Return ids as readable names; with ``keep``, others are counted, not listed."""
        shown: list[str] = []
        hidden = 0
        for identifier in identifiers:
            if keep is not None and identifier not in keep:
                hidden += 1
            else:
                shown.append(self.label(identifier))
        if len(shown) > _SHOWN_IDS:
            hidden += len(shown) - _SHOWN_IDS
            shown = ["…", *shown[-_SHOWN_IDS:]]
        more = [f"+{hidden} others"] if hidden else []
        return "[" + " ".join(shown + more) + "]"

    def describe(self, operation: Operation, *, keep: frozenset[str] | None = None) -> str:
        """Return one line describing an operation, times relative to the run's start."""
        start = self.started
        if start is None:
            start = min((o.invoked for o in self.operations), default=0.0)
        parts = [
            f"#{operation.index:<5} {operation.process:<9} {operation.action}",
            self.label(operation.conversation),
        ]
        if operation.batch:
            parts.append(self.labels_of(operation.batch))
        if operation.limit is not None:
            parts.append(f"limit={operation.limit}")
        parts.append(operation.outcome.value)
        if operation.stored is not None and operation.outcome is Outcome.OK:
            parts.append("stored " + self.labels_of(operation.stored))
        if operation.messages is not None:
            parts.append("-> " + self.labels_of(operation.messages, keep=keep))
        if operation.action in ("find_window", "find_system_message", "memory.get"):
            parts.append(f"system={self.label(operation.system)}")
        if operation.error:
            parts.append(f"({operation.error})")
        parts.append(f"[{operation.invoked - start:.3f}s .. {operation.completed - start:.3f}s]")
        return " ".join(parts)

    def subset(self, operations: Sequence[Operation]) -> History:
        """Return a history of some of these operations, with the same settings."""
        return History(
            list(operations),
            ttl=self.ttl,
            expiry_slack=self.expiry_slack,
            seed=self.seed,
            labels=self.labels,
            started=self.started,
        )


@dataclass(frozen=True, slots=True)
class HistoryReport:
    """What a history checker run did; returned when the history is valid."""

    history: History
    """Every recorded operation."""
    seconds: float
    """Wall time of the run."""
    revives: int
    """Successful appends to conversations left idle for longer than their time to live."""

    @property
    def operations(self) -> int:
        """How many operations were recorded."""
        return len(self.history.operations)

    def summary(self) -> str:
        """Return one line: seed, operations, revives and wall time."""
        counts: dict[str, int] = {}
        for operation in self.history.operations:
            counts[operation.outcome.value] = counts.get(operation.outcome.value, 0) + 1
        outcomes = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
        return (
            f"seed {self.history.seed}: {self.operations} operations ({outcomes}), "
            f"{self.revives} revives, {self.seconds:.1f} s"
        )
