"""Shrinking a failing history to the few operations that prove an anomaly, and the report.

Shrinking is delta debugging over the operations of the anomaly's conversation: drop chunks of
operations, smaller and smaller, keeping each drop after which the checker still proves the
same anomaly (same kind, conversation and messages). What is left is a history in which every
operation matters: the write, the read, and the writes that rule out expiry in between.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from chatmem.testing._checker import Anomaly, find_anomalies
from chatmem.testing._history import DESTRUCTIVE_ACTIONS, History, Operation

__all__ = ["SEED_VARIABLE", "HistoryCheckError", "check_history", "shrink"]

SEED_VARIABLE = "CHATMEM_CHECKER_SEED"
"""Environment variable that fixes the seed of the history checker's schedule."""
_CHECK_BUDGET = 400
_SHOWN_ANOMALIES = 8
_SHOWN_CONTEXT = 6


class HistoryCheckError(AssertionError):
    """A history violates the repository contract.

    The message names the seed, the anomalies, and the shrunk history of the first one.

    Attributes:
        anomalies: Everything the checker proved.
        shrunk: The smallest history found that still proves the first anomaly.
        seed: The seed that replays the run's schedule.
    """

    def __init__(
        self, message: str, anomalies: list[Anomaly], shrunk: list[Operation], seed: int | None
    ) -> None:
        super().__init__(message)
        self.anomalies = anomalies
        self.shrunk = shrunk
        self.seed = seed


def check_history(history: History) -> None:
    """Raise :class:`HistoryCheckError` if the history proves any anomaly.

    Args:
        history: The operations of a run.

    Raises:
        HistoryCheckError: With the seed, the anomalies and a shrunk history.
    """
    anomalies = find_anomalies(history)
    if not anomalies:
        return
    shrunk = shrink(history, anomalies[0])
    # Explain the first anomaly as the shrunk history proves it, so the text names only
    # operations that are shown.
    again = [a for a in find_anomalies(history.subset(shrunk)) if a.key == anomalies[0].key]
    first = again[0] if again else anomalies[0]
    message = _message(history, [first, *anomalies[1:]], shrunk)
    raise HistoryCheckError(message, anomalies, shrunk, history.seed)


def shrink(history: History, anomaly: Anomaly) -> list[Operation]:
    """Return a small subset of the history that still proves the anomaly, in index order.

    Args:
        history: A history in which ``find_anomalies`` finds ``anomaly``.
        anomaly: The anomaly to keep.
    """
    budget = [_CHECK_BUDGET]

    def proves(operations: Sequence[Operation]) -> bool:
        budget[0] -= 1
        found = find_anomalies(history.subset(operations))
        return any(a.key == anomaly.key for a in found)

    mine = [o for o in history.operations if o.conversation == anomaly.conversation]
    mine.sort(key=lambda o: o.index)
    named = set(anomaly.operations)
    core = [o for o in mine if o.index in named or set(o.batch) & set(anomaly.subject)]
    start = core if proves(core) else mine
    return _minimize(start, proves, budget)


def _minimize(
    operations: list[Operation],
    proves: Callable[[Sequence[Operation]], bool],
    budget: list[int],
) -> list[Operation]:
    pieces = 2
    while len(operations) > 1 and budget[0] > 0:
        size = math.ceil(len(operations) / pieces)
        for start in range(0, len(operations), size):
            candidate = operations[:start] + operations[start + size :]
            if budget[0] > 0 and proves(candidate):
                operations = candidate
                pieces = max(pieces - 1, 2)
                break
        else:
            if size == 1:
                break
            pieces = min(len(operations), pieces * 2)
    return operations


def _message(history: History, anomalies: list[Anomaly], shrunk: list[Operation]) -> str:
    first = anomalies[0]
    seed = history.seed
    replay = f"; replay the schedule with {SEED_VARIABLE}={seed}" if seed is not None else ""
    lines = [
        f"history check failed: {len(anomalies)} anomalies in {len(history.operations)} "
        f"operations (seed {seed}{replay})",
        f"{first.kind} in conversation {history.label(first.conversation)}: {first.explanation}",
        f"shrunk history ({len(shrunk)} of {len(history.operations)} operations; "
        "lines marked ~ are context: other writes of its messages, the deletes and "
        "purges around it, and the version reads it relies on):",
    ]
    keep = frozenset(i for o in shrunk for i in o.batch)
    context = _context(history, shrunk, first)
    for operation in sorted([*shrunk, *context], key=lambda o: o.invoked):
        mark = "~ " if operation in context else "  "
        lines.append("  " + mark + history.describe(operation, keep=keep))
    if len(anomalies) > 1:
        lines.append("other anomalies:")
        for anomaly in anomalies[1 : 1 + _SHOWN_ANOMALIES]:
            where = history.label(anomaly.conversation)
            lines.append(f"  - {anomaly.kind} in {where}: {anomaly.explanation}")
        if len(anomalies) > 1 + _SHOWN_ANOMALIES:
            lines.append(f"  ... and {len(anomalies) - 1 - _SHOWN_ANOMALIES} more")
    return "\n".join(lines)


def _context(history: History, shrunk: list[Operation], anomaly: Anomaly) -> list[Operation]:
    """Operations that explain how the anomaly came about, though not needed to prove it.

    Other writes of its messages, deletes of its conversation from the first of those writes
    to the end of the shrunk history, purges overlapping a write (where a purge race would
    be), a few of each, and the version reads the version-checked appends shown expected.
    """
    kept = {o.index for o in shrunk}
    subject = set(anomaly.subject)
    writes = [o for o in history.operations if o.index not in kept and subject & set(o.batch)]
    low = min(o.invoked for o in [*shrunk, *writes])
    high = max(o.completed for o in shrunk)
    deletes = [
        o
        for o in history.operations
        if o.index not in kept
        and o.conversation == anomaly.conversation
        and o.action in DESTRUCTIVE_ACTIONS
        and o.completed > low
        and o.invoked < high
    ]
    racing = [o for o in [*shrunk, *writes] if o.batch]
    purges = [
        o
        for o in history.operations
        if o.action == "purge_expired"
        and any(o.invoked < w.completed and o.completed > w.invoked for w in racing)
    ]
    sources = {o.version_read for o in [*shrunk, *writes]} - kept
    versions = [o for o in history.operations if o.index in sources]
    return (
        writes[:_SHOWN_CONTEXT]
        + deletes[:_SHOWN_CONTEXT]
        + purges[:_SHOWN_CONTEXT]
        + versions[:_SHOWN_CONTEXT]
    )
