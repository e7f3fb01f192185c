"""Judges a history of concurrent repository calls against the repository contract (no I/O).

Every rule is proved from the history alone: each operation's real-time interval
``[invoked, completed]``, its outcome, what it wrote and what it read. A message's *storers*
are the writes that may have stored the copy a read sees: successful writes that reported
storing it and writes with an unknown outcome that carried it. A write is *required* by a read
when it succeeded before the read began and neither a delete nor expiry could have removed it
in between (see :mod:`chatmem.testing._timeline`). The anomalies found:

- ``lost-append``: a required write is missing from a read that must show it: a whole-history
  read, a window read that is not full, a window read holding a message certainly older than
  it, or a whole-history read holding a message certainly stored after it without a delete or
  expiry possible in between. A missing or older current system message counts too
  (``stale-system-message``).
- ``torn-batch`` / ``half-applied``: a read shows part of a batch (``half-applied`` when a
  write of the batch had an unknown outcome), or splits or reorders it. A window read may cut
  a batch only at its oldest edge, and only when it is full (``find_recent``, ``find_window``)
  or trimmed to whole turns (``memory.get``).
- ``duplicate``: a message id twice in one read.
- ``reorder``: a read shows a message before one that was certainly stored before it (this
  includes one writer's messages, which it writes one call after another).
- ``inconsistent-order``: reads disagree on the order of messages each stored only once.
- ``future-read``: a read shows a message whose every write began after the read ended.
- ``phantom``: a read shows a message no write could have stored (none carried it, all failed,
  or all reported it as already stored).
- ``resurrected``: a read shows a message although a successful delete came certainly after
  every write of it.
- ``retry-not-idempotent``: a write reported storing a message that was certainly stored.
- ``refused-append-stored``: a read shows a message that only version-checked appends refused
  with ``VersionConflictError`` carried: a refused append must store nothing.
- ``double-version-win`` / ``stale-version-win``: a version-checked append succeeded where
  another append had moved the version (see :mod:`chatmem.testing._versions`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from chatmem.testing._history import READ_ACTIONS, WRITE_ACTIONS, History, Operation, Outcome
from chatmem.testing._order import ReadOrder
from chatmem.testing._timeline import Timeline
from chatmem.testing._versions import version_findings

__all__ = ["Anomaly", "find_anomalies"]

_WINDOW_READS = frozenset({"find_recent", "find_window"})
_SYSTEM_READS = frozenset({"find_window", "find_system_message", "memory.get"})


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A violation of the repository contract, proved from a history.

    Example:
        ```python
        for anomaly in find_anomalies(history):
            print(anomaly.kind, anomaly.explanation)
        ```
    """

    kind: str
    """What went wrong, such as ``"lost-append"`` (see :mod:`chatmem.testing`)."""
    conversation: str | None
    """The conversation it happened in."""
    subject: tuple[str, ...]
    """The message ids it is about."""
    operations: tuple[int, ...]
    """Indexes of the operations that show it."""
    explanation: str
    """A sentence saying why this is a violation."""

    @property
    def key(self) -> tuple[str, str | None, tuple[str, ...]]:
        """Identifies the anomaly across reads that show it again."""
        return (self.kind, self.conversation, tuple(sorted(self.subject)))


def find_anomalies(history: History) -> list[Anomaly]:
    """Return every anomaly the history proves, each once, in the order found.

    Args:
        history: The operations of a run.
    """
    window = None if history.ttl is None else max(history.ttl - history.expiry_slack, 0.0)
    by_conversation: dict[str, list[Operation]] = defaultdict(list)
    for operation in history.operations:
        if operation.conversation is not None:
            by_conversation[operation.conversation].append(operation)
    found: dict[tuple[str, str | None, tuple[str, ...]], Anomaly] = {}
    for conversation, operations in by_conversation.items():
        for anomaly in _ConversationCheck(conversation, operations, history, window).run():
            found.setdefault(anomaly.key, anomaly)
    return list(found.values())


class _ConversationCheck:
    """The rules applied to the operations of one conversation."""

    def __init__(
        self,
        conversation: str,
        operations: list[Operation],
        history: History,
        window: float | None,
    ) -> None:
        self.conversation = conversation
        self.history = history
        self.timeline = Timeline(operations, window)
        self.reads = sorted(
            (o for o in operations if o.action in READ_ACTIONS and o.outcome is Outcome.OK),
            key=lambda o: o.index,
        )
        writes = [o for o in operations if o.action in WRITE_ACTIONS]
        self.ok_writes = sorted(
            (o for o in writes if o.outcome is Outcome.OK), key=lambda o: o.completed
        )
        self.operations = operations
        self.carriers: dict[str, list[Operation]] = defaultdict(list)
        self.refused: dict[str, list[Operation]] = defaultdict(list)
        self.storers: dict[str, list[Operation]] = defaultdict(list)
        self.batch_of: dict[str, tuple[str, ...]] = {}
        self.system_ids: set[str] = set()
        for write in writes:
            self.system_ids |= write.system_ids
            for message_id in write.batch:
                self.batch_of.setdefault(message_id, write.batch)
                if write.may_apply:
                    self.carriers[message_id].append(write)
                elif write.outcome is Outcome.CONFLICT:
                    self.refused[message_id].append(write)
            for message_id in write.storing():
                self.storers[message_id].append(write)
        self.first_stored = {
            w.index: min(
                (s.invoked for i in w.batch for s in self.storers.get(i, ())), default=math.inf
            )
            for w in self.ok_writes
        }
        self.anomalies: list[Anomaly] = []

    def run(self) -> list[Anomaly]:
        order = ReadOrder(self.storers)
        for read in self.reads:
            self._check_identities(read)
            if read.messages is not None:
                self._check_batches(read)
                self._check_real_time_order(read)
                self._check_visibility(read)
                order.add(read)
            if read.action in _SYSTEM_READS:
                self._check_system(read)
        cycle = order.cycle()
        if cycle is not None:
            ids, reads = cycle
            self._report(
                "inconsistent-order",
                ids,
                [*reads, *self._storer_indexes(ids)],
                "reads disagree on the order of messages that were each stored once: "
                + " -> ".join(self.history.label(i) for i in ids),
            )
        self._check_retries()
        self._check_acknowledgements()
        for finding in version_findings(self.operations, self.timeline, self.history):
            self._report(finding.kind, finding.subject, finding.operations, finding.explanation)
        return self.anomalies

    # -- helpers ---------------------------------------------------------------------------------

    def _report(self, kind: str, subject: Iterable[str], ops: Iterable[int], why: str) -> None:
        ids = tuple(dict.fromkeys(subject))
        indexes = tuple(sorted(set(ops)))
        self.anomalies.append(Anomaly(kind, self.conversation, ids, indexes, why))

    def _span(self, message_id: str, before: float) -> tuple[float, float] | None:
        """Return when the copy a read shows may have been stored, or ``None`` if never.

        From the earliest invocation to the latest possible effect of the storers invoked
        before ``before`` (the read's completion).
        """
        storers = [s for s in self.storers.get(message_id, ()) if s.invoked < before]
        if not storers:
            return None
        return min(s.invoked for s in storers), max(s.latest_effect for s in storers)

    def _storer_indexes(self, ids: Iterable[str]) -> list[int]:
        return [s.index for i in ids for s in self.storers.get(i, ())]

    def _could_lose(self, write: Operation, end: float) -> bool:
        """Whether a delete or expiry may have removed a successful write's messages by ``end``."""
        first = self.first_stored.get(write.index, math.inf)
        return self.timeline.could_lose(write, first, end)

    def _in_range(self, batch: tuple[str, ...], read: Operation) -> list[str]:
        if read.action == "find_by_conversation_id":
            return list(batch)
        return [i for i in batch if i not in self.system_ids]

    def _lost(self, write: Operation, read: Operation, missing: list[str], why: str) -> None:
        self._report(
            "lost-append",
            missing,
            [write.index, read.index],
            f"{self.history.labels_of(missing)} written by #{write.index} (ok) "
            f"is missing from #{read.index} {read.action}: {why}",
        )

    # -- rules -----------------------------------------------------------------------------------

    def _check_identities(self, read: Operation) -> None:
        seen: set[str] = set()
        shown = list(read.messages or ())
        if read.system is not None:
            shown.append(read.system)
        for message_id in shown:
            label = self.history.label(message_id)
            if message_id in seen:
                self._report("duplicate", [message_id], [read.index], f"{label} appears twice")
                continue
            seen.add(message_id)
            carriers = self.carriers.get(message_id, [])
            if not carriers and message_id in self.refused:
                self._refused_stored(message_id, read)
            elif not carriers:
                why = f"no write that may have applied carried {label}"
                self._report("phantom", [message_id], [read.index], why)
            elif all(c.invoked >= read.completed for c in carriers):
                why = f"{label} was written only after the read completed"
                self._report(
                    "future-read", [message_id], [read.index, *(c.index for c in carriers)], why
                )
            elif (span := self._span(message_id, read.completed)) is None:
                why = f"every write of {label} reported it as already stored"
                self._report(
                    "phantom", [message_id], [read.index, *(c.index for c in carriers)], why
                )
            elif self.timeline.latest_certain_delete(read.invoked) > span[1]:
                why = f"{label} is shown although a delete certainly followed every write of it"
                self._report(
                    "resurrected",
                    [message_id],
                    [read.index, *self._storer_indexes([message_id])],
                    why,
                )

    def _refused_stored(self, message_id: str, read: Operation) -> None:
        refused = self.refused[message_id]
        first = refused[0]
        self._report(
            "refused-append-stored",
            first.batch,
            [read.index, *(r.index for r in refused)],
            f"#{read.index} {read.action} shows {self.history.label(message_id)}, which only "
            f"#{first.index} carried (expected_version={first.expected_version}), and "
            "that append was refused with a version conflict: a refused append stores nothing",
        )

    def _check_batches(self, read: Operation) -> None:
        sequence = read.messages or ()
        position: dict[str, int] = {}
        for i, message_id in enumerate(sequence):
            position.setdefault(message_id, i)
        done: set[tuple[str, ...]] = set()
        full = read.limit is not None and len(sequence) >= read.limit
        edge_cut_allowed = read.action == "memory.get" or (read.action in _WINDOW_READS and full)
        for message_id in position:
            batch = self.batch_of.get(message_id)
            if batch is None or batch in done:
                continue
            done.add(batch)
            wanted = self._in_range(batch, read)
            present = [i for i in wanted if i in position]
            spots = [position[i] for i in present]
            contiguous = spots == list(range(spots[0], spots[0] + len(spots)))
            whole = len(present) == len(wanted)
            edge_cut = edge_cut_allowed and spots[0] == 0 and present == wanted[-len(present) :]
            if contiguous and (whole or edge_cut):
                continue
            unknown = any(
                c.outcome is Outcome.UNKNOWN for i in batch for c in self.carriers.get(i, ())
            )
            what = "only part of" if not whole else "split or reordered"
            self._report(
                "half-applied" if unknown else "torn-batch",
                batch,
                [read.index, *(c.index for c in self.carriers.get(batch[0], ()))],
                f"#{read.index} shows {what} batch {self.history.labels_of(batch)}: "
                f"{self.history.labels_of(present)}",
            )

    def _check_real_time_order(self, read: Operation) -> None:
        sequence = read.messages or ()
        spans = [self._span(i, read.completed) for i in sequence]
        later_end = float("inf")
        later_id = ""
        for message_id, span in zip(reversed(sequence), reversed(spans), strict=True):
            if span is None:
                continue
            if later_end < span[0]:
                self._report(
                    "reorder",
                    [later_id, message_id],
                    [read.index, *self._storer_indexes([later_id, message_id])],
                    f"#{read.index} shows {self.history.label(message_id)} before "
                    f"{self.history.label(later_id)}, which was stored before it was written",
                )
            if span[1] < later_end:
                later_end, later_id = span[1], message_id

    def _check_visibility(self, read: Operation) -> None:
        sequence = read.messages or ()
        present = set(sequence)
        complete = read.action == "find_by_conversation_id" or (
            read.action in _WINDOW_READS and read.limit is not None and len(sequence) < read.limit
        )
        spans = [s for s in (self._span(i, read.completed) for i in sequence) if s is not None]
        oldest_end = min((end for _, end in spans), default=float("inf"))
        for write in self.ok_writes:
            if write.invoked >= read.completed:
                continue
            missing = [i for i in self._in_range(write.batch, read) if i not in present]
            if not missing:
                continue
            if complete:
                self._check_complete_read(write, read, missing, spans)
            elif len(missing) == len(self._in_range(write.batch, read)):
                self._check_window_suffix(write, read, missing, oldest_end)

    def _check_complete_read(
        self,
        write: Operation,
        read: Operation,
        missing: list[str],
        spans: list[tuple[float, float]],
    ) -> None:
        if write.completed < read.invoked and not self._could_lose(write, read.completed):
            self._lost(write, read, missing, "it was acknowledged before the read began")
            return
        # A message certainly stored after the write is present: the write must be too.
        newer = [end for start, end in spans if start > write.completed]
        if newer and not self._could_lose(write, min(newer)):
            self._lost(write, read, missing, "a message stored after it is present")

    def _check_window_suffix(
        self, write: Operation, read: Operation, missing: list[str], oldest_end: float
    ) -> None:
        first = self.first_stored.get(write.index, math.inf)
        if oldest_end >= first or write.completed >= read.invoked:
            return
        if not self._could_lose(write, read.completed):
            self._lost(write, read, missing, "the window holds a message stored before it")

    def _check_system(self, read: Operation) -> None:
        required = [
            w
            for w in self.ok_writes
            if w.system_ids
            and w.completed < read.invoked
            and not self._could_lose(w, read.completed)
        ]
        if not required:
            return
        if read.system is None:
            write = required[-1]
            self._lost(write, read, sorted(write.system_ids), "there is no current system message")
            return
        shown = self._span(read.system, read.completed)
        if shown is None:
            return
        for write in required:
            for system_id in write.system_ids - {read.system}:
                starts = [s.invoked for s in self.storers.get(system_id, ())]
                if starts and shown[1] < min(starts):
                    self._report(
                        "stale-system-message",
                        [read.system, system_id],
                        [read.index, write.index, *self._storer_indexes([read.system])],
                        f"#{read.index} returns system message {self.history.label(read.system)}"
                        f" although the newer {self.history.label(system_id)} was acknowledged",
                    )

    def _check_acknowledgements(self) -> None:
        # A write that reports a message as already stored when no write before it can have
        # stored it acknowledged a message that is nowhere: lost, whatever the reads show.
        for write in self.ok_writes:
            if write.stored is None:
                continue
            never = [
                i
                for i in write.batch
                if i not in write.stored
                and not any(
                    s is not write and s.invoked < write.completed for s in self.storers.get(i, ())
                )
            ]
            if never:
                self._report(
                    "lost-append",
                    never,
                    [write.index],
                    f"#{write.index} succeeded without storing {self.history.labels_of(never)}, "
                    "and no write before it can have stored them",
                )

    def _check_retries(self) -> None:
        for write in self.ok_writes:
            for message_id in write.stored or ():
                for earlier in self.carriers.get(message_id, ()):
                    if (
                        earlier.outcome is Outcome.OK
                        and earlier.completed < write.invoked
                        and not self._could_lose(earlier, write.completed)
                    ):
                        self._report(
                            "retry-not-idempotent",
                            [message_id],
                            [earlier.index, write.index],
                            f"#{write.index} reported storing {self.history.label(message_id)}, "
                            f"already stored by #{earlier.index}",
                        )
                        break
