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
    "VERSION_READ",
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
VERSION_READ = "find_version"
"""The action that reads a conversation's version, before a version-checked append."""
_SHOWN_IDS = 12


class Outcome(StrEnum):
    """How an operation ended, as far as the client can tell."""

    OK = "ok"
    """It returned: it took effect."""
    FAILED = "failed"
    """It raised an error that guarantees nothing was applied (such as a configuration error)."""
    UNKNOWN = "unknown"
    """It raised an error after which it may or may not have been applied (a timeout)."""
    CONFLICT = "conflict"
    """A version-checked append raised ``VersionConflictError``: the conversation was not at
    the expected version, and nothing was applied."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One call a client made, with its interval, outcome and what it wrote or read.

    Example:
        ```python
        append = Operation(0, "w0", "append", "c1", 0.0, 0.1, Outcome.OK,
                           batch=("u1", "a1"), stored=("u1", "a1"))
        read = Operation(1, "w1", "find_by_conversation_id", "c1", 0.2, 0.3, Outcome.OK,
                         messages=("u1", "a1"))
        version = Operation(2, "w2", "find_version", "c1", 0.4, 0.5, Outcome.OK, version=1)
        checked = Operation(3, "w2", "append", "c1", 0.6, 0.7, Outcome.CONFLICT,
                            batch=("u2",), expected_version=1, version_read=2)
        ```
    """

    index: int
    """Position in the history; unique."""
    process: str
    """Who made the call, such as ``"w2"`` (a worker) or ``"purger0"``."""
    action: str
    """The method called: a name in :data:`WRITE_ACTIONS`, :data:`DESTRUCTIVE_ACTIONS`,
    :data:`READ_ACTIONS`, :data:`VERSION_READ`, or ``"purge_expired"``."""
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
    version: int | None = None
    """The version a ``find_version`` returned."""
    expected_version: int | None = None
    """The ``expected_version`` of a version-checked append; ``None`` for any other call."""
    version_read: int | None = None
    """Index of the ``find_version`` whose answer a version-checked append expects."""
    positions: tuple[int | str, ...] | None = None
    """Positions a successful ``append`` returned, one per id in ``stored``."""
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
    def may_apply(self) -> bool:
        """Whether the call may have taken effect: not failed, and not refused on its version."""
        return self.outcome not in (Outcome.FAILED, Outcome.CONFLICT)

    @property
    def version_checked(self) -> bool:
        """Whether this is an append with ``expected_version``."""
        return self.expected_version is not None

    @property
    def refreshes(self) -> bool:
        """Whether this call certainly wrote, which restarts its conversation's time to live."""
        return self.outcome is Outcome.OK and bool(self.stored)

    def storing(self) -> frozenset[str]:
        """Ids this call may have stored: what it reported, or its whole batch if unknown."""
        if self.action not in WRITE_ACTIONS or not self.may_apply:
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
        if operation.expected_version is not None:
            source = operation.version_read
            read = f" (read by #{source})" if source is not None else ""
            parts.append(f"expected_version={operation.expected_version}{read}")
        parts.append(operation.outcome.value)
        if operation.stored is not None and operation.outcome is Outcome.OK:
            parts.append("stored " + self.labels_of(operation.stored))
            if operation.positions is not None and operation.version_checked:
                parts.append("at " + _positions(operation.positions))
        if operation.version is not None:
            parts.append(f"-> version {operation.version}")
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

    @property
    def version_checked(self) -> dict[Outcome, int]:
        """How many version-checked appends ended each way (``conflict``: refused)."""
        counts = dict.fromkeys(Outcome, 0)
        for operation in self.history.operations:
            if operation.version_checked:
                counts[operation.outcome] += 1
        return counts

    def summary(self) -> str:
        """Return one line: seed, operations, revives, version-checked appends and wall time."""
        outcomes = dict.fromkeys(Outcome, 0)
        for operation in self.history.operations:
            outcomes[operation.outcome] += 1
        checked = self.version_checked
        return (
            f"seed {self.history.seed}: {self.operations} operations ({_counts(outcomes)}), "
            f"{self.revives} revives, {sum(checked.values())} version-checked appends "
            f"({_counts(checked)}), {self.seconds:.1f} s"
        )


def _counts(counts: dict[Outcome, int]) -> str:
    shown = [f"{n} {outcome.value}" for outcome, n in sorted(counts.items()) if n]
    return ", ".join(shown) or "none"


def _positions(positions: Sequence[int | str]) -> str:
    shown = [str(p) for p in positions]
    if len(shown) > 4:  # a long batch: its first two and its last
        shown = [shown[0], shown[1], "…", shown[-1]]
    return "positions [" + " ".join(shown) + "]"
